"""Scapy layers for Cursus frames, for the structure-aware fuzzer.

``CursusFrame`` is the ``[u32 BE length][payload]`` frame; its payload is dissected as
``CursusBatchHeader`` when it begins with the magic 0xBA7C and as ``CursusText``
otherwise.  The batch layers are not written here: they are derived from the batch's one
declaration, :data:`~conformance.protocols.cursus.messages.BATCH`, by the shared schema
machinery (:mod:`conformance.wire.schema_layers`), as Kafka's are.  ``CursusBatchHeader``
is the layer of the whole batch, ``CursusMessage`` that of one message.  Field names are
the declaration's (snake_case): a string or bytes field ``x`` is a length field
``x_len`` then the bytes, the message count is ``messages_count`` and the messages
``messages``; a name scapy's ``Packet`` already uses takes a trailing underscore (the
message's bytes are ``payload_``, their length ``payload_len``): see :func:`scapy_name`.

Every length and count is ``None`` by default and computed when the packet is built;
set one explicitly to put exactly that (possibly lying) value on the wire.
"""

from __future__ import annotations

from typing import Any, ClassVar

from scapy.fields import LenField, StrField
from scapy.packet import Packet, Raw

from conformance.protocols.cursus import codec
from conformance.protocols.cursus.messages import (
    BATCH,
    MESSAGE_FIELDS,
    Batch,
    Command,
    message_struct,
)
from conformance.wire import schema_layers
from conformance.wire.schema_layers import scapy_name

__all__ = [
    "CursusBatchHeader",
    "CursusFrame",
    "CursusMessage",
    "CursusText",
    "batch_layer",
    "from_request",
    "message_layer",
    "raw",
    "scapy_name",
]

CursusBatchHeader: type[Packet] = schema_layers.layer(BATCH, 0)
"""A batch body: the header followed by ``messages_count`` messages."""

CursusMessage: type[Packet] = schema_layers.struct_layer(message_struct(), 0, BATCH.ctx(0))
"""One message of a batch."""


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


def message_layer(msg: Any) -> Packet:
    """A ``CursusMessage`` carrying the values of a :class:`Message`."""
    values: dict[str, Any] = {}
    for name, _ in MESSAGE_FIELDS:
        v = getattr(msg, name)
        values[scapy_name(name)] = v.encode("utf-8") if isinstance(v, str) else v
    return CursusMessage(**values)


def batch_value(batch: Batch) -> dict[str, Any]:
    """``batch`` as plain data, as :data:`BATCH` encodes it."""
    messages = [{n: getattr(m, n) for n, _ in MESSAGE_FIELDS} for m in batch.messages]
    return {**codec.batch_header(batch), "messages": messages}


def batch_layer(batch: Batch) -> Packet:
    """A ``CursusBatchHeader`` (with its messages) carrying the values of ``batch``."""
    return schema_layers.packet(BATCH, 0, batch_value(batch))


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
