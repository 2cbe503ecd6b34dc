"""Cursus messages, declared once.

Everything the codec, the broker, the strategies and the fuzz layers know about the
shape of a Cursus message comes from the declarations in this module:

* ``COMMANDS``: every text command, its positional arguments and their kinds, in the
  order of cursus-protocol.txt ("Text commands" table).  ``FETCH_OFFSET`` is not in
  the document; it is a ``doc``-revision convention of the reference broker (a way
  to read back a committed offset), marked ``convention=True``.
* ``BATCH_HEADER`` / ``MESSAGE_FIELDS``: the binary batch layout ("Batch message
  format"), field by field, with the wire type of each.
* ``BatchAck``: the JSON reply to a batch ("Batch acknowledgement").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

MAGIC = 0xBA7C
GZIP_MAGIC = b"\x1f\x8b"
FRAME_LIMIT = 64 * 1024 * 1024  # "Maximum frame size | 64 MB (64 * 1024 * 1024 bytes)"
DEFAULT_PORT = 9000

ArgKind = Literal["topic", "name", "count", "index", "offset", "generation", "offsets"]
"""How an argument is read.

topic/name: any non-empty token (the document gives no rule; the space separates
fields, so a name cannot hold one).  count, index, offset, generation: a signed int64 in
ASCII decimal, ``-?[0-9]+``, leading zeros allowed ("007" is 7, "-1" is -1): offsets are
int64 in the batch layout and FETCH_OFFSET answers -1.  The kinds differ only in what they
mean (a partition count, a partition, an offset, a generation): whether the broker has
that partition or generation, whether an offset is one (offsets number a log from 0), or
whether it will allocate that many partitions (CUR-CONV-11), is its answer, not a parse
error.  offsets: the BATCH_COMMIT payload ``p:o[,p:o...]``, each a number as above, each
partition at most once (convention CUR-CONV-6).
"""


@dataclass(frozen=True)
class Arg:
    name: str
    kind: ArgKind


@dataclass(frozen=True)
class CommandSpec:
    name: str
    args: tuple[Arg, ...]
    description: str
    convention: bool = False


def _spec(
    name: str, description: str, *args: tuple[str, ArgKind], convention: bool = False
) -> CommandSpec:
    return CommandSpec(name, tuple(Arg(n, k) for n, k in args), description, convention)


COMMANDS: dict[str, CommandSpec] = {
    s.name: s
    for s in (
        _spec(
            "CREATE",
            "Create a new topic with the given partition count",
            ("topic", "topic"),
            ("partitions", "count"),
        ),
        _spec("DELETE", "Delete a topic and all its data", ("topic", "topic")),
        _spec("LIST", "List all topics on the broker"),
        _spec(
            "CONSUME",
            "Pull up to maxPollRecords messages starting at offset",
            ("topic", "topic"),
            ("partition", "index"),
            ("offset", "offset"),
        ),
        _spec(
            "SUBSCRIBE",
            "Subscribe a consumer group to a topic",
            ("topic", "topic"),
            ("group", "name"),
        ),
        _spec(
            "JOIN_GROUP",
            "Join a consumer group; broker registers the member",
            ("topic", "topic"),
            ("group", "name"),
            ("consumerId", "name"),
        ),
        _spec(
            "LEAVE_GROUP",
            "Leave a consumer group; triggers partition rebalance",
            ("topic", "topic"),
            ("group", "name"),
            ("consumerId", "name"),
        ),
        _spec(
            "STREAM",
            "Open a persistent push stream; broker sends batches as they arrive",
            ("topic", "topic"),
            ("partition", "index"),
            ("offset", "offset"),
        ),
        _spec(
            "COMMIT",
            "Commit a consumer offset for a partition",
            ("topic", "topic"),
            ("group", "name"),
            ("partition", "index"),
            ("offset", "offset"),
        ),
        _spec(
            "HEARTBEAT",
            "Keep-alive; broker may respond with REBALANCE_REQUIRED",
            ("topic", "topic"),
            ("group", "name"),
            ("consumerId", "name"),
            ("memberId", "name"),
            ("generation", "generation"),
        ),
        _spec(
            "BATCH_COMMIT",
            "Commit offsets for multiple partitions in one round-trip",
            ("topic", "topic"),
            ("group", "name"),
            ("memberId", "name"),
            ("generation", "generation"),
            ("offsetsPayload", "offsets"),
        ),
        _spec(
            "SYNC_GROUP",
            "Fetch partition assignment after joining a group",
            ("topic", "topic"),
            ("group", "name"),
            ("memberId", "name"),
            ("generation", "generation"),
        ),
        _spec(
            "FETCH_OFFSET",
            "Read back a committed offset (reference-broker convention)",
            ("topic", "topic"),
            ("group", "name"),
            ("partition", "index"),
            convention=True,
        ),
    )
}

ArgValue = str | int | tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Command:
    """A parsed text command; ``args`` are in declaration order, typed by kind."""

    name: str
    args: tuple[ArgValue, ...] = ()

    @property
    def spec(self) -> CommandSpec:
        return COMMANDS[self.name]

    def arg(self, name: str) -> ArgValue:
        for a, v in zip(self.spec.args, self.args, strict=True):
            if a.name == name:
                return v
        raise KeyError(f"{self.name} has no argument {name!r}")

    def text(self, name: str) -> str:
        v = self.arg(name)
        assert isinstance(v, str)
        return v

    def number(self, name: str) -> int:
        v = self.arg(name)
        assert isinstance(v, int)
        return v

    def offsets(self) -> tuple[tuple[int, int], ...]:
        v = self.arg("offsetsPayload")
        assert isinstance(v, tuple)
        return v


# Batch layout, in wire order.  Wire types: u8, u16, i32, i64, str16 (u16 length +
# UTF-8), bytes32 (i32 length + bytes).  ``payload`` is declared UTF-8 by the
# document; the broker stores it as opaque bytes (convention CUR-BATCH conventions).
FieldType = Literal["u8", "u16", "i32", "i64", "str16", "bytes32"]

BATCH_HEADER: tuple[tuple[str, FieldType], ...] = (
    ("magic", "u16"),
    ("topic", "str16"),
    ("partition", "str16"),
    ("acks", "str16"),
    ("idempotent", "u8"),
    ("seq_start", "i64"),
    ("seq_end", "i64"),
    ("message_count", "i32"),
)

MESSAGE_FIELDS: tuple[tuple[str, FieldType], ...] = (
    ("offset", "i64"),
    ("seq_num", "i64"),
    ("producer_id", "str16"),
    ("key", "str16"),
    ("epoch", "i64"),
    ("payload", "bytes32"),
    ("event_type", "str16"),
    ("schema_version", "i32"),
    ("aggregate_version", "i64"),
    ("metadata", "str16"),
)


@dataclass(frozen=True)
class Message:
    offset: int = 0
    seq_num: int = 0
    producer_id: str = ""
    key: str = ""
    epoch: int = 0
    payload: bytes = b""
    event_type: str = ""
    schema_version: int = 0
    aggregate_version: int = 0
    metadata: str = ""


@dataclass(frozen=True)
class Batch:
    """A batch as it is on the wire.  ``partition`` and ``acks`` are the strings of the
    header; ``codec.partition_number`` reads the partition (decimal), the acks string is
    any text.  ``message_count`` is implied by ``messages`` when encoding."""

    topic: str
    partition: str = "0"
    acks: str = "1"
    idempotent: bool = False
    seq_start: int = 0
    seq_end: int = 0
    messages: tuple[Message, ...] = field(default_factory=tuple)


ACK_FIELDS: tuple[tuple[str, type], ...] = (
    ("status", str),
    ("last_offset", int),
    ("producer_epoch", int),
    ("producer_id", str),
    ("seq_start", int),
    ("seq_end", int),
    ("leader", str),
    ("error", str),
)

ACK_STATUSES = ("OK", "PARTIAL", "ERROR")


@dataclass(frozen=True)
class BatchAck:
    status: str
    last_offset: int = -1
    producer_epoch: int = 0
    producer_id: str = ""
    seq_start: int = 0
    seq_end: int = 0
    leader: str = ""
    error: str = ""


# Special text replies ("Special text responses").
NOT_LEADER = "NOT_LEADER"
REBALANCE_REQUIRED = "REBALANCE_REQUIRED"
GEN_MISMATCH = "GEN_MISMATCH"
ERROR_PREFIX = "ERROR:"


@dataclass(frozen=True)
class ErrorReply:
    """``ERROR: <CODE> <description>``; ``code`` is the first word after the prefix
    (a convention of the reference broker), ``text`` the whole description."""

    code: str
    text: str


@dataclass(frozen=True)
class SpecialReply:
    """A reply containing NOT_LEADER, REBALANCE_REQUIRED or GEN_MISMATCH."""

    kind: str
    text: str


@dataclass(frozen=True)
class OkReply:
    """``OK [key=value ...]`` (convention: the document gives no success format)."""

    fields: tuple[tuple[str, str], ...] = ()

    def get(self, key: str, default: str | None = None) -> str | None:
        for k, v in self.fields:
            if k == key:
                return v
        return default


@dataclass(frozen=True)
class TopicList:
    """The LIST reply (convention): a JSON array of topic names."""

    topics: tuple[str, ...]


@dataclass(frozen=True)
class TextReply:
    """Any other text reply."""

    text: str


Reply = BatchAck | Batch | ErrorReply | SpecialReply | OkReply | TopicList | TextReply
Request = Command | Batch
