"""Scapy layers for Cursus frames, for the structure-aware fuzzer.

``CursusFrame`` is the ``[u32 BE length][payload]`` frame; its payload is dissected as
``CursusBatchHeader`` when it begins with the magic 0xBA7C and as ``CursusText``
otherwise.  The batch and message fields are derived from ``BATCH_HEADER`` and
``MESSAGE_FIELDS`` in :mod:`messages` (declared once): a ``str16`` field becomes a u16
length field ``<name>Len`` plus the bytes, a ``bytes32`` field an i32 length plus the
bytes.  Field names are the document's camelCase names (``seq_start`` -> ``seqStart``);
the message's ``payload`` bytes are called ``payloadData`` (``payload`` is taken by
scapy's layer chaining), its length is still ``payloadLen``.

Every length and count is ``None`` by default and computed when the packet is built;
set one explicitly to put exactly that (possibly lying) value on the wire.
"""

from __future__ import annotations

from typing import Any, ClassVar

from scapy.fields import (
    ByteField,
    Field,
    FieldLenField,
    LenField,
    PacketListField,
    ShortField,
    SignedIntField,
    SignedLongField,
    StrField,
    StrLenField,
    XShortField,
)
from scapy.packet import Packet, Raw

from conformance.protocols.cursus import codec
from conformance.protocols.cursus.messages import (
    BATCH_HEADER,
    MAGIC,
    MESSAGE_FIELDS,
    Batch,
    Command,
    FieldType,
)

RENAMED = {"payload": "payloadData"}
"""Scapy names that differ from the camelCase of the declaration."""

LENGTH_FORMATS: dict[FieldType, str] = {"str16": "!H", "bytes32": "!i"}
"""Struct format of the length prefix of each length-prefixed field type."""

FIXED_FIELDS: dict[FieldType, type[Field[Any, Any]]] = {
    "u8": ByteField,
    "u16": ShortField,
    "i32": SignedIntField,
    "i64": SignedLongField,
}
"""The scapy field of each fixed-size integer type (all big-endian)."""


def scapy_name(name: str) -> str:
    """The scapy field name of a declared field (``seq_start`` -> ``seqStart``)."""
    if name in RENAMED:
        return RENAMED[name]
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def length_name(name: str) -> str:
    """The scapy name of the length field in front of a length-prefixed field."""
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest) + "Len"


def _length_from(len_name: str) -> Any:
    def length(pkt: Any) -> int:
        return int(getattr(pkt, len_name))

    return length


def _fields(decl: tuple[tuple[str, FieldType], ...]) -> list[Any]:
    """Scapy fields for a declaration; ``magic`` and ``message_count`` are special."""
    out: list[Any] = []
    for name, kind in decl:
        sname = scapy_name(name)
        if name == "magic":
            out.append(XShortField(sname, MAGIC))
        elif name == "message_count":
            out.append(FieldLenField(sname, None, count_of="messages", fmt="!i"))
        elif kind in LENGTH_FORMATS:
            lname = length_name(name)
            out.append(FieldLenField(lname, None, length_of=sname, fmt=LENGTH_FORMATS[kind]))
            out.append(StrLenField(sname, b"", length_from=_length_from(lname)))
        else:
            out.append(FIXED_FIELDS[kind](sname, 0))
    return out


class CursusMessage(Packet):
    """One message of a batch (``MESSAGE_FIELDS``)."""

    name = "CursusMessage"
    fields_desc: ClassVar[list[Any]] = _fields(MESSAGE_FIELDS)

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        # A message carries nothing after its fields: the rest is the next message.
        return b"", s


class CursusBatchHeader(Packet):
    """A batch body: the header (``BATCH_HEADER``) followed by ``messageCount`` messages."""

    name = "CursusBatchHeader"
    fields_desc: ClassVar[list[Any]] = [
        *_fields(BATCH_HEADER),
        PacketListField("messages", [], CursusMessage, count_from=lambda pkt: pkt.messageCount),
    ]


class CursusText(Packet):
    """A text command payload (UTF-8, the whole frame payload), in field ``text``
    (``command`` is taken by a scapy method)."""

    name = "CursusText"
    fields_desc: ClassVar[list[Any]] = [StrField("text", b"")]


class CursusFrame(Packet):
    """``[u32 BE length][payload]``; ``length`` excludes itself and is computed if None."""

    name = "CursusFrame"
    fields_desc: ClassVar[list[Any]] = [LenField("length", None, fmt="!I")]

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        # The payload is ``length`` bytes; anything after it belongs to the next frame.
        return s[: self.length], s[self.length :]

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        if not payload:
            return Raw
        if codec.is_batch(payload):
            return CursusBatchHeader
        return CursusText


def message_layer(msg: Any) -> CursusMessage:
    """A ``CursusMessage`` carrying the values of a :class:`Message`."""
    values: dict[str, Any] = {}
    for name, _ in MESSAGE_FIELDS:
        v = getattr(msg, name)
        values[scapy_name(name)] = v.encode("utf-8") if isinstance(v, str) else v
    return CursusMessage(**values)


def batch_layer(batch: Batch) -> CursusBatchHeader:
    """A ``CursusBatchHeader`` (with its messages) carrying the values of ``batch``."""
    return CursusBatchHeader(
        topic=batch.topic.encode("utf-8"),
        partition=batch.partition.encode("utf-8"),
        acks=batch.acks.encode("utf-8"),
        idempotent=1 if batch.idempotent else 0,
        seqStart=batch.seq_start,
        seqEnd=batch.seq_end,
        messages=[message_layer(m) for m in batch.messages],
    )


def from_request(req: Batch | Command) -> Packet:
    """A ``CursusFrame`` wrapping the batch or text layer of ``req``."""
    if isinstance(req, Batch):
        return CursusFrame() / batch_layer(req)
    if isinstance(req, Command):
        return CursusFrame() / CursusText(text=codec.encode_command(req))
    raise TypeError(f"from_request takes a Batch or a Command, not {type(req).__name__}")


def raw(pkt: Packet) -> bytes:
    """The wire bytes of ``pkt`` (lengths and counts left None are computed)."""
    return bytes(pkt)
