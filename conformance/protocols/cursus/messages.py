"""Cursus messages, declared once.

Everything the codec, the broker, the strategies and the fuzz layers know about the
shape of a Cursus message comes from the declarations in this module:

* ``COMMANDS``: every text command, its positional arguments and their kinds, in the
  order of cursus-protocol.txt ("Text commands" table).  ``FETCH_OFFSET`` is not in
  the document; it is a ``doc``-revision convention of the reference broker (a way
  to read back a committed offset), marked ``convention=True``.
* ``BATCH``: the binary batch ("Batch message format"), a message of the schema
  machinery (:mod:`conformance.wire.schema`) in Cursus's encoding ``CURSUS``, from
  which the frame annotator (its tolerant annotation) and the scapy layers are derived;
  ``BATCH_HEADER`` / ``MESSAGE_FIELDS`` are its layout read off it, field by field with
  the wire type of each, for the codec (the layers take their field names from it).
* ``BatchAck``: the JSON reply to a batch ("Batch acknowledgement").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from conformance.wire.encoding import Encoding
from conformance.wire.schema import (
    BYTES,
    INT32,
    INT64,
    STRING,
    UINT8,
    UINT16,
    Array,
    Field,
    Struct,
    array_of,
    f,
    message,
)

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


CURSUS = Encoding(
    name="cursus",
    byte_order="big",
    string_length="u16",
    bytes_length="i32",
    array_count="i32",
    null_length=None,
)
"""How Cursus writes a batch: big-endian, u16 string lengths, i32 bytes lengths and
message count, no null (a negative length is malformed), no flexible versions."""

BATCH = message(
    "Batch",
    "0",
    "none",
    [
        f("magic", UINT16, default=MAGIC),
        f("topic", STRING),
        f("partition", STRING, doc="decimal text, read by the broker"),
        f("acks", STRING),
        f("idempotent", UINT8, doc="0 or 1"),
        f("seq_start", INT64),
        f("seq_end", INT64),
        f(
            "messages",
            array_of(
                "Message",
                f("offset", INT64),
                f("seq_num", INT64),
                f("producer_id", STRING),
                f("key", STRING),
                f("epoch", INT64),
                f("payload", BYTES, doc="UTF-8 by the document; stored as opaque bytes"),
                f("event_type", STRING),
                f("schema_version", INT32),
                f("aggregate_version", INT64),
                f("metadata", STRING),
            ),
            doc="its count is the header's messageCount",
        ),
    ],
    doc='The binary batch ("Batch message format"), header then messages.',
    encoding=CURSUS,
)
"""The batch layout, declared once on the schema machinery of
:mod:`conformance.wire.schema` (codec, annotations, strategies and scapy layers can all
be derived from it); ``BATCH_HEADER`` and ``MESSAGE_FIELDS`` are read off it."""

# Wire types of the batch layout: u8, u16, i32, i64, str16 (u16 length + UTF-8), bytes32
# (i32 length + bytes).  ``payload`` is declared UTF-8 by the document; the broker stores
# it as opaque bytes (convention CUR-BATCH conventions).
FieldType = Literal["u8", "u16", "i32", "i64", "str16", "bytes32"]

_KINDS: dict[str, FieldType] = {
    "uint8": "u8",
    "uint16": "u16",
    "int32": "i32",
    "int64": "i64",
    "string": "str16",
    "bytes": "bytes32",
}
COUNT_NAMES = {"messages": "message_count"}
"""The name of an array's count in the flat layout."""


def _layout(fields: tuple[Field, ...]) -> tuple[tuple[str, FieldType], ...]:
    """A struct's fields in wire order with their wire types; an array is its count."""
    return tuple(
        (COUNT_NAMES[fl.name], "i32")
        if isinstance(fl.type, Array)
        else (fl.name, _KINDS[fl.type.name])
        for fl in fields
    )


def message_struct() -> Struct:
    """The struct of one message of :data:`BATCH`."""
    messages = BATCH.body.fields[-1].type
    assert isinstance(messages, Array) and isinstance(messages.element, Struct)
    return messages.element


BATCH_HEADER: tuple[tuple[str, FieldType], ...] = _layout(BATCH.body.fields)
"""The header, in wire order, ending in the message count."""

MESSAGE_FIELDS: tuple[tuple[str, FieldType], ...] = _layout(message_struct().fields)
"""One message of the batch, in wire order."""


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
