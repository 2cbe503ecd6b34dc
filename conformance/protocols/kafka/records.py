"""Kafka's "records" field: RecordBatch v2 encoded and decoded, legacy message sets read.

Sans-IO: bytes in, immutable values out, and back; no sockets, no clock.  A batch is a
frozen dataclass; its records and headers are typed named tuples, as one costs ~0.1 us
to build where a frozen dataclass of six fields costs ~0.7 us (most of a decode).

* :func:`encode_batch` writes a magic-2 :class:`RecordBatch`: batch length, record
  count and CRC-32C (attributes to end) computed.  :func:`make_batch` builds one.
* :func:`decode_batches` reads every batch of a records field: magic 2, and magic 0/1
  messages (each message a batch, as Kafka's Java client sees them; a compressed
  wrapper's inner messages are decoded, one level).  A partial batch at the end, which
  a Fetch response may carry, is left out; ``strict=True`` refuses it, as a broker must
  in a Produce request.  :func:`batch_spans` tells where the whole batches lie.
* :func:`peek_batch` reads a batch's header and checks its CRC, records not decoded.

Hostile input: every decoder returns or raises :class:`ProtocolError`; a CRC mismatch is
:class:`CorruptRecord`.  No claimed length is trusted before it is checked against the
bytes present, and decompression is bounded (:mod:`.compression`).  Header keys are
UTF-8 decoded with ``surrogateescape``: bytes that are not UTF-8 survive a round trip.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

from crc32c import crc32c

from conformance.errors import ProtocolError, TrailingBytes, Truncated
from conformance.protocols.kafka.compression import MAX_DECOMPRESSED, NAMES, compress, decompress

TIMESTAMP_TYPE_BIT, TRANSACTIONAL_BIT, CONTROL_BIT = 0x08, 0x10, 0x20
_V2 = struct.Struct(">qiibIhiqqqhii")  # the 61-byte batch header
_V2_PREFIX = struct.Struct(">qiibI")  # base offset .. crc
_V2_TAIL = struct.Struct(">hiqqqhii")  # attributes .. record count: the CRC starts here
_LEGACY = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_I64, _I32 = struct.Struct(">q"), struct.Struct(">i")
_new = tuple.__new__  # a named tuple from a tuple, without its Python-level __new__


class CorruptRecord(ProtocolError):
    """A batch or message whose CRC does not match its bytes (Kafka: CORRUPT_MESSAGE)."""


class Header(NamedTuple):
    key: str
    value: bytes | None


class Record(NamedTuple):
    """One record; its offset and timestamp are deltas from its batch's base."""

    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    attributes: int = 0


_as_header = partial(_new, Header)  # a Header from a Header or a (key, value) pair


class _Flags:
    """Properties read from ``attributes``."""

    __slots__ = ()
    attributes: int

    @property
    def compression(self) -> int:
        return self.attributes & 0x07

    @property
    def compression_name(self) -> str:
        code = self.attributes & 0x07
        return NAMES[code] if code < len(NAMES) else f"unknown({code})"

    @property
    def timestamp_type(self) -> int:
        """0 CreateTime, 1 LogAppendTime."""
        return (self.attributes >> 3) & 1

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)


@dataclass(frozen=True, kw_only=True)
class RecordBatch(_Flags):
    """A batch (no ``__slots__``: :func:`_batch` sets its instance dict at once)."""

    records: tuple[Record, ...]
    last_offset_delta: int
    base_offset: int = 0
    partition_leader_epoch: int = -1
    attributes: int = 0
    base_timestamp: int = 0
    max_timestamp: int = 0
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    magic: int = 2

    @property
    def count(self) -> int:
        return len(self.records)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1


_object_new, _set_dict = object.__new__, RecordBatch.__dict__["__dict__"].__set__


def _batch(
    records: tuple[Record, ...], last_offset_delta: int, base_offset: int, epoch: int,
    attributes: int, base_timestamp: int, max_timestamp: int, producer_id: int = -1,
    producer_epoch: int = -1, base_sequence: int = -1, magic: int = 2,
) -> RecordBatch:  # fmt: skip
    """A RecordBatch without its ``__init__``, whose eleven frozen fields cost 1.5 us."""
    batch = _object_new(RecordBatch)
    _set_dict(batch, {
        "records": records, "last_offset_delta": last_offset_delta, "base_offset": base_offset,
        "partition_leader_epoch": epoch, "attributes": attributes,
        "base_timestamp": base_timestamp, "max_timestamp": max_timestamp,
        "producer_id": producer_id, "producer_epoch": producer_epoch,
        "base_sequence": base_sequence, "magic": magic,
    })  # fmt: skip
    return batch


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchHeader(_Flags):
    """A magic-2 batch's header, as :func:`peek_batch` reads it."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    crc: int
    crc_ok: bool
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    count: int
    magic: int = 2

    @property
    def size(self) -> int:
        """Bytes of the whole batch, its offset and length fields included."""
        return self.batch_length + 12


def _varint(value: int) -> bytes:
    """Zigzag varint (or varlong) of ``value``."""
    n, out = (value << 1) ^ (value >> 63), bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


class _VarintTable(dict[int, bytes]):
    """Small values' varints, looked up; any other is computed on a miss."""

    def __missing__(self, value: int) -> bytes:
        return _varint(value)


_ZZ = _VarintTable({v: _varint(v) for v in range(-1, 1 << 13)})
_HEADER_KEYS: dict[str, bytes] = {}  # a header key's length and bytes, by key


def _uvarint(buf: bytes, pos: int, most: int) -> tuple[int, int]:
    """(raw value, end) of the varint at ``pos``: at most ``most`` bytes (5 varint, 10
    varlong) and 32 or 64 bits."""
    result = shift = 0
    for i in range(pos, pos + most):
        result |= (buf[i] & 0x7F) << shift
        if buf[i] < 0x80:
            if result >> (32 if most == 5 else 64):
                raise ProtocolError(f"varint at byte {pos} is out of range")
            return result, i + 1
        shift += 7
    raise ProtocolError(f"varint at byte {pos} is longer than {most} bytes")


def encode_batch(batch: RecordBatch, *, compression_level: int | None = None) -> bytes:
    """The batch's bytes (magic 2); ``last_offset_delta`` and the timestamps as given."""
    if batch.magic != 2:
        raise ValueError(f"encode_batch writes magic 2, not {batch.magic}")
    zz, records, header_keys = _ZZ, batch.records, _HEADER_KEYS
    parts: list[bytes] = []
    append = parts.append
    for offset_delta, timestamp_delta, key, value, headers, attributes in records:
        fields = [
            b"\x00" if attributes == 0 else bytes((attributes & 0xFF,)),
            zz[timestamp_delta], zz[offset_delta],
            b"\x01" if key is None else zz[len(key)], key or b"",
            b"\x01" if value is None else zz[len(value)], value or b"",
            zz[len(headers)],
        ]  # fmt: skip
        for hkey, hvalue in headers:
            hk = header_keys.get(hkey) or _header_key(hkey)
            fields += (hk, b"\x01") if hvalue is None else (hk, zz[len(hvalue)], hvalue)
        data = b"".join(fields)
        append(zz[len(data)])
        append(data)
    body, attributes = b"".join(parts), batch.attributes
    if attributes & 0x07:
        body = compress(attributes & 0x07, body, compression_level)
    tail = _V2_TAIL.pack(
        attributes, batch.last_offset_delta, batch.base_timestamp, batch.max_timestamp,
        batch.producer_id, batch.producer_epoch, batch.base_sequence, len(records),
    )  # fmt: skip
    crc = crc32c(tail + body) if len(body) < 4096 else crc32c(body, crc32c(tail))
    head = _V2_PREFIX.pack(batch.base_offset, 49 + len(body), batch.partition_leader_epoch, 2, crc)
    return b"".join((head, tail, body))


def _header_key(key: str) -> bytes:
    raw = key.encode("utf-8", "surrogateescape")
    encoded = _ZZ[len(raw)] + raw
    if len(_HEADER_KEYS) < 4096 and len(raw) < 256:  # a bounded cache
        _HEADER_KEYS[key] = encoded
    return encoded


def make_batch(
    values: Sequence[bytes | None], *, keys: Sequence[bytes | None] | None = None,
    headers: Sequence[Sequence[Header | tuple[str, bytes | None]]] | None = None,
    timestamps: Sequence[int] | None = None, base_timestamp: int = 0,
    compression: int | str = 0, base_offset: int = 0, partition_leader_epoch: int = -1,
    producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
    transactional: bool = False, control: bool = False, log_append_time: bool = False,
) -> RecordBatch:  # fmt: skip
    """A batch of ``values`` at offset deltas 0, 1, ...  With ``timestamps`` the first is
    the base timestamp (as Kafka's producer does); without, every record has
    ``base_timestamp``.  ``compression`` is a codec number or name ("gzip", ...)."""
    n = len(values)
    if keys is None:
        keys = (None,) * n
    if headers is None:
        headers = ((),) * n
    max_timestamp = base_timestamp
    if timestamps is None:
        timestamps = (base_timestamp,) * n
    elif timestamps:
        base_timestamp, max_timestamp = timestamps[0], max(timestamps)
    if len(keys) != n or len(headers) != n or len(timestamps) != n:
        raise ValueError("keys, headers and timestamps must be as many as values")
    as_header, record, new = _as_header, Record, _new
    records: list[Record] = []
    append = records.append  # a loop, not a comprehension: cheaper for small batches
    for i in range(n):
        hs = (*map(as_header, headers[i]),)
        append(new(record, (i, timestamps[i] - base_timestamp, keys[i], values[i], hs, 0)))
    if isinstance(compression, str):
        compression = NAMES.index(compression)
    attributes = compression | log_append_time << 3 | transactional << 4 | control << 5
    return _batch(
        tuple(records), n - 1, base_offset, partition_leader_epoch, attributes,
        base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence,
    )  # fmt: skip


def batch_spans(data: bytes) -> tuple[list[tuple[int, int]], int]:
    """(start, end) of each whole batch in ``data``, and how many bytes at the end belong
    to a batch that is not all there (0 if none).  Only the length fields are read."""
    spans: list[tuple[int, int]] = []
    pos, size = 0, len(data)
    while size - pos >= 12:
        (length,) = _I32.unpack_from(data, pos + 8)
        if length < 14:  # smaller than any message, of any magic
            raise ProtocolError(f"batch at byte {pos} has length {length}")
        if pos + 12 + length > size:
            break
        spans.append((pos, pos + 12 + length))
        pos += 12 + length
    return spans, size - pos


def decode_batches(
    data: bytes | bytearray | memoryview,
    *,
    strict: bool = False,
    max_decompressed: int = MAX_DECOMPRESSED,
) -> list[RecordBatch]:
    """Every batch in a records field.  A partial batch at the end is left out, or with
    ``strict`` is an error (:class:`Truncated`).  A compressed batch may not decompress
    to more than ``max_decompressed`` bytes."""
    if type(data) is not bytes:
        data = bytes(data)
    spans, rest = batch_spans(data)
    if rest and strict:
        raise Truncated(f"the last {rest} bytes are a partial batch")
    batches: list[RecordBatch] = []
    for start, end in spans:
        magic = data[start + 16]
        if magic not in (0, 1, 2):
            raise ProtocolError(f"unknown magic {magic} at byte {start}")
        decode = _decode_v2 if magic == 2 else _decode_legacy
        batches.append(decode(data, start, end, max_decompressed))
    return batches


def peek_batch(data: bytes, offset: int = 0) -> BatchHeader:
    """The header of the magic-2 batch at ``offset``, its CRC checked (``crc_ok``), its
    records not decoded: what a broker checks before it stores a produced batch."""
    if len(data) - offset < 61:
        raise Truncated(f"batch header at byte {offset} is truncated")
    base, length, epoch, magic, crc, attrs, lod, bts, mts, pid, pep, seq, count = _V2.unpack_from(
        data, offset
    )
    if magic != 2:
        raise ProtocolError(f"magic {magic} at byte {offset}: only magic 2 has this header")
    if length < 49:
        raise ProtocolError(f"batch at byte {offset} has length {length}")
    if offset + 12 + length > len(data):
        raise Truncated(f"batch at byte {offset} needs {length + 12} bytes")
    ok = crc32c(memoryview(data)[offset + 21 : offset + 12 + length]) == crc
    return BatchHeader(
        base_offset=base, batch_length=length, partition_leader_epoch=epoch, crc=crc,
        crc_ok=ok, attributes=attrs, last_offset_delta=lod, base_timestamp=bts,
        max_timestamp=mts, producer_id=pid, producer_epoch=pep, base_sequence=seq, count=count,
    )  # fmt: skip


def _decode_v2(data: bytes, start: int, end: int, limit: int) -> RecordBatch:
    if end - start < 61:
        raise Truncated(f"batch at byte {start} is shorter than its 61-byte header")
    base, _, epoch, _, crc, attrs, lod, bts, mts, pid, pep, seq, count = _V2.unpack_from(
        data, start
    )
    if crc32c(memoryview(data)[start + 21 : end]) != crc:
        raise CorruptRecord(f"CRC mismatch in the batch at byte {start}")
    buf, pos, stop = data, start + 61, end
    if attrs & 0x07:
        if attrs & 0x07 >= len(NAMES):
            raise ProtocolError(f"unknown compression code {attrs & 7} in batch at {start}")
        buf = decompress(attrs & 0x07, data[start + 61 : end], limit=limit)
        pos, stop = 0, len(buf)
    if count < 0 or count > (stop - pos) // 7:  # a record takes 7 bytes or more
        raise ProtocolError(f"record count {count} does not fit the {stop - pos} bytes")
    records = _decode_records(buf, pos, stop, count)
    return _batch(records, lod, base, epoch, attrs, bts, mts, pid, pep, seq)


def _decode_records(b: bytes, pos: int, stop: int, count: int) -> tuple[Record, ...]:
    """``count`` records filling ``b[pos:stop]``.  ``n`` is a varint's raw (zigzag) value:
    its first byte is read inline, and its second where two are common; else ``u``."""
    records: list[Record] = []
    append, new, u, bad = records.append, _new, _uvarint, "length below -1"
    try:
        for index in range(count):
            n = b[pos]
            pos += 1
            if n > 0x7F:
                n, pos = (n - 128 + (b[pos] << 7), pos + 1) if b[pos] < 128 else u(b, pos - 1, 5)
            end = pos + ((n >> 1) ^ -(n & 1))
            if end > stop or end - pos < 6:
                raise ProtocolError(f"record {index}: bad length {end - pos}")
            attributes, n = b[pos], b[pos + 1]
            pos += 2
            if n > 0x7F:
                n, pos = (n - 128 + (b[pos] << 7), pos + 1) if b[pos] < 128 else u(b, pos - 1, 10)
            timestamp_delta, n = (n >> 1) ^ -(n & 1), b[pos]
            pos += 1
            if n > 0x7F:
                n, pos = (n - 128 + (b[pos] << 7), pos + 1) if b[pos] < 128 else u(b, pos - 1, 5)
            offset_delta, n = (n >> 1) ^ -(n & 1), b[pos]
            pos += 1
            if n > 0x7F:
                n, pos = u(b, pos - 1, 5)
            if n & 1 and n > 1:
                raise ProtocolError(f"record {index}: key {bad}")
            key = None if n == 1 else b[pos : pos + (n >> 1)]
            pos += n >> 1
            n = b[pos]
            pos += 1
            if n > 0x7F:
                n, pos = (n - 128 + (b[pos] << 7), pos + 1) if b[pos] < 128 else u(b, pos - 1, 5)
            if n & 1 and n > 1:
                raise ProtocolError(f"record {index}: value {bad}")
            value = None if n == 1 else b[pos : pos + (n >> 1)]
            pos += n >> 1
            n = b[pos]
            pos += 1
            if n > 0x7F:
                n, pos = u(b, pos - 1, 5)
            if n & 1 or n >> 1 > end - pos:
                raise ProtocolError(f"record {index}: bad header count")
            hs = []
            for _ in range(n >> 1):
                n = b[pos]
                pos += 1
                if n > 0x7F:
                    n, pos = u(b, pos - 1, 5)
                if n & 1:
                    raise ProtocolError(f"record {index}: header key length below 0")
                hkey = b[pos : pos + (n >> 1)].decode("utf-8", "surrogateescape")
                pos += n >> 1
                n = b[pos]
                pos += 1
                if n > 0x7F:
                    n, pos = u(b, pos - 1, 5)
                if n & 1 and n > 1:
                    raise ProtocolError(f"record {index}: header value {bad}")
                hs.append(new(Header, (hkey, None if n == 1 else b[pos : pos + (n >> 1)])))
                pos += n >> 1
            if pos != end:
                raise ProtocolError(f"record {index}: its fields disagree with its length")
            if attributes > 127:  # an int8
                attributes -= 256
            append(new(Record, (offset_delta, timestamp_delta, key, value, tuple(hs), attributes)))
    except IndexError:
        raise ProtocolError(f"the batch claims {count} records; its bytes end sooner") from None
    if pos != stop:
        raise TrailingBytes(f"{stop - pos} bytes after the batch's {count} records")
    return tuple(records)


def _decode_legacy(data: bytes, start: int, end: int, limit: int) -> RecordBatch:
    """One magic 0/1 message: a batch of one record, or of a compressed wrapper's
    inner messages (offsets and timestamps as Kafka assigns them)."""
    offset, magic, attrs, ts, key, value = _message(data, start, end)
    codec, log_append = attrs & 0x07, magic == 1 and attrs & TIMESTAMP_TYPE_BIT
    attrs &= 0x0F if magic else 0x07
    if not codec:
        return _batch((Record(0, 0, key, value),), 0, offset, -1, attrs, ts, ts, magic=magic)
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
    return _batch(records, last, base, -1, attrs, first_ts, max_ts, magic=magic)


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
