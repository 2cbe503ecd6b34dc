"""Kafka's "records" field: RecordBatch v2 encoded and decoded, legacy message sets read.

Sans-IO: bytes in, immutable values out (:mod:`.record_types`, re-exported here), and
back; no sockets, no clock.

* :func:`encode_batch` writes a magic-2 :class:`RecordBatch`: batch length, record
  count and CRC-32C (attributes to end) computed.  :func:`make_batch` builds one.
* :func:`decode_batches` reads every batch of a records field: magic 2 here, and magic
  0/1 messages through :mod:`.message_sets` (each message a batch, as Kafka's Java
  client sees them).  A partial batch at the end, which a Fetch response may carry, is
  left out; ``strict=True`` refuses it, as a broker must in a Produce request.
  :func:`batch_spans` tells where the whole batches lie.
* :func:`peek_batch` reads a batch's header and checks its CRC, records not decoded.

Varints are :mod:`conformance.wire.varint`'s; the hot paths inline the one- and two-byte
forms and keep a table of small values' encodings, built with it.

Hostile input: every decoder returns or raises :class:`ProtocolError`; a CRC mismatch is
:class:`CorruptRecord`.  No claimed length is trusted before it is checked against the
bytes present, and decompression is bounded (:mod:`.compression`).  Header keys are
UTF-8 decoded with ``surrogateescape``: bytes that are not UTF-8 survive a round trip.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from functools import partial

from crc32c import crc32c

from conformance.errors import ProtocolError, TrailingBytes, Truncated
from conformance.protocols.kafka.compression import MAX_DECOMPRESSED, NAMES, compress, decompress
from conformance.protocols.kafka.message_sets import decode_message
from conformance.protocols.kafka.record_types import (
    CONTROL_BIT,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
    BatchHeader,
    CorruptRecord,
    Header,
    Record,
    RecordBatch,
    RecordsDisagree,
    new_batch,
)
from conformance.wire.varint import read_uvarint, varint

__all__ = [
    "CONTROL_BIT",
    "TIMESTAMP_TYPE_BIT",
    "TRANSACTIONAL_BIT",
    "BatchHeader",
    "CorruptRecord",
    "Header",
    "Record",
    "RecordBatch",
    "batch_spans",
    "decode_batches",
    "encode_batch",
    "make_batch",
    "peek_batch",
]

_V2 = struct.Struct(">qiibIhiqqqhii")  # the 61-byte batch header
_V2_PREFIX = struct.Struct(">qiibI")  # base offset .. crc
_V2_TAIL = struct.Struct(">hiqqqhii")  # attributes .. record count: the CRC starts here
_I32 = struct.Struct(">i")
_new = tuple.__new__  # a named tuple from a tuple, without its Python-level __new__
_as_header = partial(_new, Header)  # a Header from a Header or a (key, value) pair


class _VarintTable(dict[int, bytes]):
    """Varints looked up: those of -1 .. 8191 (one or two bytes) built at import, any
    other computed on a miss and kept while the table is under :data:`_ZZ_MOST` entries
    (a bounded cache: a producer's offset deltas repeat batch after batch)."""

    def __missing__(self, value: int) -> bytes:
        encoded = varint(value)
        if len(self) < _ZZ_MOST:
            self[value] = encoded
        return encoded


_ZZ_MOST = 1 << 15
_ZZ = _VarintTable({v: varint(v) for v in range(-1, 1 << 13)})
_HEADER_KEYS: dict[str, bytes] = {}  # a header key's length and bytes, by key
_OUT_OF_RANGE = "record varint out of range"  # how read_uvarint's errors begin here


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
    return new_batch(
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
        decode = _decode_v2 if magic == 2 else decode_message
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
        raise RecordsDisagree(f"record count {count} does not fit the {stop - pos} bytes")
    records = _decode_records(buf, pos, stop, count)
    return new_batch(records, lod, base, epoch, attrs, bts, mts, pid, pep, seq)


def _decode_records(b: bytes, pos: int, stop: int, count: int) -> tuple[Record, ...]:
    """``count`` records filling ``b[pos:stop]``.  ``n`` is a varint's raw (zigzag) value:
    its first byte is read inline, and its second where two are common; else ``u``
    (:func:`~conformance.wire.varint.read_uvarint`: Truncated where the bytes end, turned
    into this function's message; ProtocolError for a varint too long or too wide)."""
    records: list[Record] = []
    append, new, u, bad, w = records.append, _new, read_uvarint, "length below -1", _OUT_OF_RANGE
    try:
        for index in range(count):
            n = b[pos]
            pos += 1
            if n > 0x7F:
                if b[pos] < 128:
                    n, pos = n - 128 + (b[pos] << 7), pos + 1
                else:
                    n, pos = u(b, pos - 1, 32, w)
            end = pos + ((n >> 1) ^ -(n & 1))
            if end > stop or end - pos < 6:
                raise RecordsDisagree(f"record {index}: bad length {end - pos}")
            attributes, n = b[pos], b[pos + 1]
            pos += 2
            if n > 0x7F:
                if b[pos] < 128:
                    n, pos = n - 128 + (b[pos] << 7), pos + 1
                else:
                    n, pos = u(b, pos - 1, 64, w)
            timestamp_delta, n = (n >> 1) ^ -(n & 1), b[pos]
            pos += 1
            if n > 0x7F:
                if b[pos] < 128:
                    n, pos = n - 128 + (b[pos] << 7), pos + 1
                else:
                    n, pos = u(b, pos - 1, 32, w)
            offset_delta, n = (n >> 1) ^ -(n & 1), b[pos]
            pos += 1
            if n > 0x7F:
                n, pos = u(b, pos - 1, 32, w)
            if n & 1 and n > 1:
                raise ProtocolError(f"record {index}: key {bad}")
            key = None if n == 1 else b[pos : pos + (n >> 1)]
            pos += n >> 1
            n = b[pos]
            pos += 1
            if n > 0x7F:
                if b[pos] < 128:
                    n, pos = n - 128 + (b[pos] << 7), pos + 1
                else:
                    n, pos = u(b, pos - 1, 32, w)
            if n & 1 and n > 1:
                raise ProtocolError(f"record {index}: value {bad}")
            value = None if n == 1 else b[pos : pos + (n >> 1)]
            pos += n >> 1
            n = b[pos]
            pos += 1
            if n > 0x7F:
                n, pos = u(b, pos - 1, 32, w)
            if n & 1 or n >> 1 > end - pos:
                raise ProtocolError(f"record {index}: bad header count")
            hs = []
            for _ in range(n >> 1):
                n = b[pos]
                pos += 1
                if n > 0x7F:
                    n, pos = u(b, pos - 1, 32, w)
                if n & 1:
                    raise ProtocolError(f"record {index}: header key length below 0")
                hkey = b[pos : pos + (n >> 1)].decode("utf-8", "surrogateescape")
                pos += n >> 1
                n = b[pos]
                pos += 1
                if n > 0x7F:
                    n, pos = u(b, pos - 1, 32, w)
                if n & 1 and n > 1:
                    raise ProtocolError(f"record {index}: header value {bad}")
                hs.append(new(Header, (hkey, None if n == 1 else b[pos : pos + (n >> 1)])))
                pos += n >> 1
            if pos != end:
                raise ProtocolError(f"record {index}: its fields disagree with its length")
            if attributes > 127:  # an int8
                attributes -= 256
            append(new(Record, (offset_delta, timestamp_delta, key, value, tuple(hs), attributes)))
    except (IndexError, Truncated):  # the bytes ended inside a record
        raise RecordsDisagree(f"the batch claims {count} records; its bytes end sooner") from None
    if pos != stop:
        raise TrailingBytes(f"{stop - pos} bytes after the batch's {count} records")
    return tuple(records)
