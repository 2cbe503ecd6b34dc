"""Cursus revision ``real``: the layouts of the real broker and its official Python client,
declared once (FACTS.md has the source of each).

* ``REAL_HEADER`` / ``REAL_MESSAGE``: the binary batch as the real broker and client write it
  (FACTS 4.1, 4.2): an ``i32`` partition and a ``u8`` acks length where the document has
  u16-length strings, unsigned offsets and sequences, an unsigned payload length.
* ``KNOWN_COMMANDS``: every command name the real broker knows (FACTS 2.4); ``SERVED`` the
  ones the reference broker serves in this revision, each with the keys it needs.
* :class:`RealCommand`: a text command, ``NAME key=value ...`` inside the envelope
  ``[u16 topicLen][topic][command]`` (or raw, without it: FACTS 2.2).
* :class:`Keepalive`: the empty frame of a STREAM with nothing to push (FACTS 5.4).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

REAL_FRAME_LIMIT = 16 * 1024 * 1024  # FACTS 1.2: util/buffer.go MaxMessageSize
MAX_BATCH_MESSAGES = 100_000  # FACTS 4.3
MAX_NAME_LENGTH = len("SEND_OFFSETS_TO_TXN")  # the longest command name (FACTS 2.2)
TOPIC_NAME_LIMIT = 249  # FACTS 3.3: 1-249 ASCII bytes
TOPIC_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-=")
DEFAULT_PARTITIONS = 4  # CREATE without partitions= (FACTS 3.3)
DEFAULT_GROUP = "default-group"
ACKS_LEVELS = ("0", "1", "-1", "all")  # FACTS 4.4, compared without case
KEEPALIVE_S = 5.0  # FACTS 5.4: pkg/stream/connection.go keepaliveInterval

RealType = Literal["u8", "u16", "u32", "i32", "u64", "i64", "str8", "str16", "bytes32u"]
"""Wire types of the real batch: ``str8``/``str16`` a u8/u16 length then the bytes (not
checked as UTF-8, as Go's ``string(bytes)`` does not), ``bytes32u`` a u32 length then bytes."""

REAL_HEADER: tuple[tuple[str, RealType], ...] = (
    ("magic", "u16"),
    ("topic", "str16"),
    ("partition", "i32"),
    ("acks", "str8"),
    ("idempotent", "u8"),
    ("seq_start", "u64"),
    ("seq_end", "u64"),
    ("message_count", "i32"),
)

REAL_MESSAGE: tuple[tuple[str, RealType], ...] = (
    ("offset", "u64"),
    ("seq_num", "u64"),
    ("producer_id", "str16"),
    ("key", "str16"),
    ("epoch", "i64"),
    ("payload", "bytes32u"),
    ("event_type", "str16"),
    ("schema_version", "u32"),
    ("aggregate_version", "u64"),
    ("metadata", "str16"),
)

KNOWN_COMMANDS = frozenset(
    [
        "AUTH",
        "CREATE",
        "DELETE",
        "LIST",
        "LIST_CLUSTER",
        "CLUSTER_STATUS",
        "ELECT_LEADER",
        "PUBLISH",
        "CONSUME",
        "STREAM",
        "HELP",
        "HEARTBEAT",
        "JOIN_GROUP",
        "LEAVE_GROUP",
        "COMMIT_OFFSET",
        "BATCH_COMMIT",
        "REGISTER_GROUP",
        "GROUP_STATUS",
        "FETCH_OFFSET",
        "LIST_GROUPS",
        "LIST_OFFSETS",
        "SYNC_GROUP",
        "DESCRIBE",
        "INIT_PRODUCER_ID",
        "BEGIN_TXN",
        "TXN_PUBLISH",
        "SEND_OFFSETS_TO_TXN",
        "END_TXN",
        "TXN_STATUS",
        "APPEND_STREAM",
        "READ_STREAM",
        "SAVE_SNAPSHOT",
        "READ_SNAPSHOT",
        "STREAM_VERSION",
        "REPLICATE_MESSAGE",
        "REPLICATE_SNAPSHOT",
        "LIST_SNAPSHOTS",
        "FETCH_SNAPSHOT",
        "CATCHUP_SNAPSHOTS",
        "FIND_COORDINATOR",
        "RAFT_APPLY",
        "METADATA",
        "INTERNAL_BATCH",
        "PROTOCOL_INFO",
        "NEGOTIATE",
    ]
)


@dataclass(frozen=True)
class Served:
    """A command the reference broker serves in revision real: the keys it must have (in the
    order the real client writes them) and the keys it may have."""

    name: str
    required: tuple[str, ...]
    optional: tuple[str, ...] = ()
    bare: bool = False
    """True when the command's last word is a bare value (BATCH_COMMIT's ``P<p>:<o>,...``)."""
    exact: bool = False
    """True when the command takes no argument at all (LIST, HELP: matched exactly)."""


SERVED: dict[str, Served] = {
    s.name: s
    for s in (
        Served("CREATE", ("topic",), ("partitions", "idempotent")),
        Served("DELETE", ("topic",)),
        Served("LIST", (), exact=True),
        Served("HELP", (), exact=True),
        Served("CONSUME", ("topic", "partition", "offset", "member"), ("group", "generation")),
        Served("STREAM", ("topic", "partition", "group"), ("member", "generation", "offset")),
        Served("JOIN_GROUP", ("topic", "group", "member")),
        Served("SYNC_GROUP", ("topic", "group", "member", "generation")),
        Served("LEAVE_GROUP", ("topic", "group", "member", "generation")),
        Served("HEARTBEAT", ("topic", "group", "member", "generation")),
        Served("COMMIT_OFFSET", ("topic", "partition", "group", "offset", "member", "generation")),
        Served("BATCH_COMMIT", ("topic", "group", "member", "generation"), bare=True),
        Served("FETCH_OFFSET", ("topic", "partition", "group")),
        Served("FIND_COORDINATOR", ("group",)),
        Served("METADATA", ("topic",)),
    )
}
"""Every command of this revision the reference broker answers; the other known names get
``ERROR: not_implemented command=<NAME>`` (SPEC.md CUR-RCONV-1)."""


@dataclass(frozen=True)
class RealCommand:
    """A text command of revision real: its upper-case ``name``, its ``key=value`` arguments
    in the order written, bare ``words`` (after them), the envelope's ``topic`` (ignored by
    the broker), and ``raw`` when it was sent without the envelope."""

    name: str
    args: tuple[tuple[str, str], ...] = ()
    words: tuple[str, ...] = ()
    topic: str = ""
    raw: bool = False
    last: str = ""
    """The last whitespace-separated word after the name, whatever it is (BATCH_COMMIT's
    entries are that word: FACTS 3.3); empty when there is none."""

    def get(self, key: str) -> str | None:
        """The value of ``key`` (the last one written wins, as in the real broker)."""
        value = None
        for k, v in self.args:
            if k == key:
                value = v
        return value

    def text(self) -> str:
        """The command text, without the envelope."""
        return " ".join([self.name, *(f"{k}={v}" for k, v in self.args), *self.words])


def command(name: str, *words: str, **args: object) -> RealCommand:
    """``command("JOIN_GROUP", topic="t", group="g", member="m")``, in the order given."""
    return RealCommand(name, tuple((k, str(v)) for k, v in args.items()), tuple(words))


@dataclass(frozen=True)
class Keepalive:
    """An empty frame: a STREAM's keepalive (FACTS 5.4)."""
