"""Kafka's legacy message sets (magic 0 and 1), read as record batches.

Each message is a batch of one record, as Kafka's Java client sees it; a compressed
wrapper's inner messages are decoded, one level, into one batch (offsets and timestamps
as Kafka assigns them).  :func:`decode_message` reads the message at ``data[start:end]``,
whose bounds :func:`~.records.decode_batches` found.  Nothing here writes a message set
(:mod:`.batches` writes the uncompressed ones a Fetch v0-3 answer carries).

Hostile input: returns or raises :class:`ProtocolError`; a CRC (CRC-32) mismatch is
:class:`~.record_types.CorruptRecord`; decompression is bounded by ``limit``.
"""

from __future__ import annotations

import struct
import zlib

from conformance.errors import ProtocolError, TrailingBytes
from conformance.protocols.kafka.compression import decompress
from conformance.protocols.kafka.record_types import (
    TIMESTAMP_TYPE_BIT,
    CorruptRecord,
    Record,
    RecordBatch,
    new_batch,
)

_LEGACY = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_I64, _I32 = struct.Struct(">q"), struct.Struct(">i")


def decode_message(data: bytes, start: int, end: int, limit: int) -> RecordBatch:
    """One magic 0/1 message: a batch of one record, or of a compressed wrapper's
    inner messages (offsets and timestamps as Kafka assigns them)."""
    offset, magic, attrs, ts, key, value = _message(data, start, end)
    codec, log_append = attrs & 0x07, magic == 1 and attrs & TIMESTAMP_TYPE_BIT
    attrs &= 0x0F if magic else 0x07
    if not codec:
        return new_batch((Record(0, 0, key, value),), 0, offset, -1, attrs, ts, ts, magic=magic)
    if codec > 3 or value is None:
        raise ProtocolError(f"message at byte {start}: compression {codec}, or no value")
    inner = decompress(codec, value, limit=limit, legacy_lz4=magic == 0)
    messages: list[_Message] = []
    pos = 0
    while pos < len(inner):
        stop = pos + 12 + _I32.unpack_from(inner, pos + 8)[0] if len(inner) - pos >= 12 else 0
        if not pos + 26 <= stop <= len(inner):
            raise ProtocolError(f"message at byte {start}: inner message {len(messages)} cut")
        messages.append(_message(inner, pos, stop))
        if messages[-1][1] != magic or messages[-1][2] & 0x07:
            raise ProtocolError(f"message at byte {start}: inner message of another magic/codec")
        pos = stop
    if not messages:
        raise ProtocolError(f"compressed message at byte {start} holds no messages")
    # magic 1: inner offsets relative to the wrapper's, the last one's (a producer's
    # wrapper, offset 0, leaves them as they are, as kafka-python and Kafka read it)
    shift = max(offset - messages[-1][0], 0) if magic else 0
    base, first_ts = messages[0][0] + shift, ts if log_append else messages[0][3]
    records = tuple(
        Record(m[0] + shift - base, 0 if log_append else m[3] - first_ts, m[4], m[5])
        for m in messages
    )
    max_ts = ts if log_append or not magic else max(m[3] for m in messages)
    last = records[-1].offset_delta
    return new_batch(records, last, base, -1, attrs, first_ts, max_ts, magic=magic)


_Message = tuple[int, int, int, int, bytes | None, bytes | None]


def _message(buf: bytes, start: int, end: int) -> _Message:
    """(offset, magic, attributes, timestamp, key, value) of the message ``buf[start:end]``."""
    if end - start < 26:
        raise ProtocolError(f"message at byte {start} is too short")
    offset, _, crc, magic, attrs = _LEGACY.unpack_from(buf, start)
    if zlib.crc32(memoryview(buf)[start + 16 : end]) != crc:
        raise CorruptRecord(f"CRC mismatch in the message at byte {start}")
    pos, ts = start + 18, -1
    if magic:
        if end - start < 34:
            raise ProtocolError(f"message at byte {start} is too short for magic 1")
        (ts,) = _I64.unpack_from(buf, pos)
        pos += 8
    fields: list[bytes | None] = []
    for _ in range(2):
        (n,) = _I32.unpack_from(buf, pos) if end - pos >= 4 else (-2,)
        if n < -1 or n > end - pos - 4:
            raise ProtocolError(f"message at byte {start}: a length does not fit")
        fields.append(None if n < 0 else buf[pos + 4 : pos + 4 + n])
        pos += 4 + max(n, 0)
    if pos != end:
        raise TrailingBytes(f"{end - pos} bytes after the message at byte {start}")
    return offset, magic, attrs & 0xFF, ts, fields[0], fields[1]
