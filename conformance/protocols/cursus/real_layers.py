"""Scapy layers for revision real's batch (FACTS 4.1, 4.2), for the structure-aware fuzzer.

The real batch mixes length widths (a u8 acks length, u16 string lengths, a u32 payload
length) that the shared schema machinery's one-encoding-per-message does not express, so its
two layers are declared here, field for field in the order of ``REAL_HEADER`` and
``REAL_MESSAGE`` (checked by tests/cursus/test_real_layers.py): ``RealBatchHeader`` (the
header, then ``messages_count`` messages) and ``RealMessage``.  Names follow layers.py: a
string or bytes field ``x`` is ``x_len`` then ``x``, the message's bytes are ``payload_``.
Every length and count is None by default and computed when the packet is built; set one to
put exactly that (possibly lying) value on the wire.
"""

from __future__ import annotations

from typing import Any, ClassVar

from scapy.fields import (
    ByteField,
    FieldLenField,
    IntField,
    LongField,
    PacketListField,
    ShortField,
    SignedIntField,
    SignedLongField,
    StrLenField,
)
from scapy.packet import Packet

from conformance.protocols.cursus.messages import MAGIC, Batch, Message
from conformance.protocols.cursus.real_codec import batch_fields
from conformance.protocols.cursus.real_messages import REAL_MESSAGE


def _text(name: str, fmt: str) -> list[Any]:
    def length(pkt: Packet) -> int:
        return int(getattr(pkt, f"{name}_len"))

    return [
        FieldLenField(f"{name}_len", None, length_of=name, fmt=fmt),
        StrLenField(name, b"", length_from=length),
    ]


class RealMessage(Packet):
    name = "RealMessage"
    fields_desc: ClassVar[list[Any]] = [
        LongField("offset", 0),
        LongField("seq_num", 0),
        *_text("producer_id", "!H"),
        *_text("key", "!H"),
        SignedLongField("epoch", 0),
        *_text("payload_", "!I"),
        *_text("event_type", "!H"),
        IntField("schema_version", 0),
        LongField("aggregate_version", 0),
        *_text("metadata", "!H"),
    ]

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        return b"", s


class RealBatchHeader(Packet):
    name = "RealBatchHeader"
    fields_desc: ClassVar[list[Any]] = [
        ShortField("magic", MAGIC),
        *_text("topic", "!H"),
        SignedIntField("partition", 0),
        *_text("acks", "B"),
        ByteField("idempotent", 0),
        LongField("seq_start", 0),
        LongField("seq_end", 0),
        FieldLenField("messages_count", None, count_of="messages", fmt="!i"),
        PacketListField(
            "messages", [], RealMessage, count_from=lambda p: max(p.messages_count or 0, 0)
        ),
    ]


def _bytes(v: Any) -> Any:
    return v.encode("utf-8", "surrogateescape") if isinstance(v, str) else v


def message_layer(m: Message) -> Packet:
    values = {("payload_" if n == "payload" else n): _bytes(getattr(m, n)) for n, _ in REAL_MESSAGE}
    return RealMessage(**values)


def batch_layer(batch: Batch) -> Packet:
    """A ``RealBatchHeader`` (with its messages) carrying the values of ``batch``."""
    head = {k: _bytes(v) for k, v in batch_fields(batch).items() if k != "message_count"}
    return RealBatchHeader(**head, messages=[message_layer(m) for m in batch.messages])
