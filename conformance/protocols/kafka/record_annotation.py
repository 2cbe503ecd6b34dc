"""Kafka's ``records`` field type: nullable bytes, annotated batch by batch, record by record.

:data:`RECORDS` is the type the Produce and Fetch declarations give their ``records``
field.  It encodes and decodes as plain bytes (the encoding's bytes length, compact in
flexible versions); only its annotation differs: after the field's own spans (``records
length``, then ``records`` spanning every byte, as any bytes field has) come the spans of
what the bytes hold, from :func:`record_spans`.  The walk never raises: it follows the
bytes as far as they go and stops where they end or stop making sense (a negative
length), like the schema's tolerant walk.  A records field cut short in a tolerant walk
(``Message.annotate(..., tolerant=True)``) is annotated over the bytes that are there.

Names, under the field's path ``P`` (``topic_data[0].partition_data[0].records``); ``i``
counts the entries of the field, whatever their magic:

* a RecordBatch (magic 2, or an entry too short to show its magic): ``P.batch[i]`` (the
  whole batch, valued ``magic 2, 84 bytes``), then ``P.batch[i].<f>`` for ``f`` in
  base_offset, batch_length, partition_leader_epoch, magic, crc, attributes,
  last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch,
  base_sequence, and ``P.batch[i].record count``.  ``attributes`` is followed by
  ``attributes.compression`` (the codec's name), ``attributes.timestamp_type``
  (CreateTime or LogAppendTime), ``attributes.transactional`` and
  ``attributes.control`` (booleans), all four over the attributes' two bytes;
* its records: ``P.batch[i].record[j] length`` (the varint), ``P.batch[i].record[j]`` (the
  bytes it counts), then ``P.batch[i].record[j].<f>`` for attributes, timestamp_delta,
  offset_delta, ``key length``, key, ``value length``, value, ``headers count``,
  ``headers[k].key length``, ``headers[k].key`` (text), ``headers[k].value length``,
  ``headers[k].value``.  A null key, value or header value is one span over its length,
  with the value None (as a null bytes field is);
* a legacy message (magic 0 or 1): ``P.message[i]``, then ``P.message[i].<f>`` for offset,
  message_size, crc, magic, attributes (and ``attributes.compression``; magic 1 also
  ``attributes.timestamp_type``), timestamp (magic 1), ``key length``, key, ``value
  length``, value;
* ``<entry>.crc (computed)``, over the crc's bytes, only when the CRC on the wire is not
  the one computed (CRC-32C of attributes .. end for a batch, CRC-32 of magic .. end for a
  message); its value says both.  An entry cut short has no computed CRC;
* bytes after a batch's last record: ``P.batch[i].trailing bytes``; an entry whose magic
  is neither 0, 1 nor 2 shows only its base offset, length and magic.

Compressed entries: their compressed bytes are ``<entry>.compressed`` (a batch's records,
a wrapper message's value).  Decompressed records have no bytes in the frame, so they are
named apart, ``<entry>.decompressed.record[j]...`` (a batch's) or
``<entry>.decompressed.message[k]...`` (a wrapper's inner messages, one level), and every
one of them spans the whole compressed bytes they come from.  Decompression is bounded
(:data:`DECOMPRESSED_MOST`); compressed bytes that do not decompress give one
``<entry>.decompressed`` span saying so.

Values are numbers, booleans, text and bytes as a bytes field shows them (long ones
summarised); nothing here adds a length's structure (``counts``, ``items``) for the
minimizer, which could not keep the enclosing lengths and CRCs true.
"""

from __future__ import annotations

import contextlib
import struct
import zlib
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from crc32c import crc32c

from conformance.errors import ProtocolError, Truncated
from conformance.plugin import FieldSpan
from conformance.protocols.kafka.compression import NAMES, decompress
from conformance.wire.schema_types import Bytes, Ctx, In, shown
from conformance.wire.varint import read_uvarint, unzigzag

__all__ = ["DECOMPRESSED_MOST", "RECORDS", "RecordsType", "record_spans"]

DECOMPRESSED_MOST = 1 << 20
"""The most bytes a compressed entry is decompressed to for its annotation."""

_I8, _I16, _I32 = struct.Struct(">b"), struct.Struct(">h"), struct.Struct(">i")
_I64, _U32 = struct.Struct(">q"), struct.Struct(">I")
_BATCH_HEAD = (  # after magic and crc; the CRC-32C covers these and the records
    ("attributes", _I16),
    ("last_offset_delta", _I32),
    ("base_timestamp", _I64),
    ("max_timestamp", _I64),
    ("producer_id", _I64),
    ("producer_epoch", _I16),
    ("base_sequence", _I32),
    ("record count", _I32),
)
_TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


class _End(Exception):
    """Where a walk stops: the bytes ended, or stopped making sense."""


class RecordsType(Bytes):
    """Kafka's ``records``: nullable bytes whose annotation goes on into the batches."""

    def __init__(self) -> None:
        super().__init__("records")

    def read(self, r: In, ctx: Ctx, path: str) -> Any:
        try:
            value = super().read(r, ctx, path)
        except Truncated:  # a tolerant walk gave the rest of the data to this field
            last = r.spans[-1] if r.spans else None
            if r.spans is not None and last is not None and last.name == path:
                r.spans += record_spans(r.data[last.start : last.end], path, last.start)
            raise
        if r.spans is not None and value is not None:
            r.spans += record_spans(value, path, r.pos - len(value))
        return value


RECORDS = RecordsType()


def record_spans(data: bytes, path: str, at: int = 0) -> list[FieldSpan]:
    """The spans of the batches and messages in ``data``, a records field named ``path``
    whose bytes begin at ``at`` in the payload; never raises."""
    w = _Walk(data, at)
    pos, index = 0, 0
    while pos < len(data):
        end = w.entry(pos, f"{path}.", index)
        if end is None or end <= pos:
            break
        pos, index = end, index + 1
    return w.spans


class _Walk:
    """A tolerant reader of ``data`` appending spans placed ``at`` bytes later; every read
    stays below ``limit`` (the end of the entry or record being read)."""

    def __init__(self, data: bytes, at: int, depth: int = 0) -> None:
        self.data, self.at, self.depth = data, at, depth
        self.spans: list[FieldSpan] = []
        self.pos = self.limit = 0

    def span(self, name: str, start: int, end: int, value: Any) -> None:
        self.spans.append(FieldSpan(name, self.at + start, self.at + end, value))

    def fixed(self, name: str, s: struct.Struct) -> int:
        if self.pos + s.size > self.limit:
            raise _End
        (value,) = s.unpack_from(self.data, self.pos)
        self.span(name, self.pos, self.pos + s.size, value)
        self.pos += s.size
        return int(value)

    def varint(self, name: str, bits: int = 32) -> int:
        start = self.pos
        try:
            raw, end = read_uvarint(self.data, start, bits, name)
        except ProtocolError:
            raise _End from None
        if end > self.limit:
            raise _End
        self.pos = end
        value = unzigzag(raw)
        self.span(name, start, end, value)
        return value

    def sized(self, name: str, length: str, text: bool = False) -> None:
        """A length (``length``: varint or the struct of a fixed-width one), then bytes."""
        start = self.pos
        if length == "varint":
            n = self.varint(f"{name} length")
        else:
            n = self.fixed(f"{name} length", _I32)
        if n == -1:
            self.spans[-1] = FieldSpan(name, self.at + start, self.at + self.pos, None)
            return
        if n < 0:
            raise _End
        data = self.data[self.pos : min(self.pos + n, self.limit)]
        value = data.decode("utf-8", "replace") if text else shown(data)
        self.span(name, self.pos, self.pos + len(data), value)
        self.pos += len(data)
        if len(data) < n:
            raise _End

    def flags(self, name: str, size: int, attributes: int, magic: int) -> None:
        """The parts of the ``attributes`` just read (``size`` bytes), by ``magic``."""
        start = self.pos - size
        self.span(f"{name}.compression", start, self.pos, _codec_name(attributes & 0x07))
        if magic > 0:
            kind = _TIMESTAMP_TYPES[attributes >> 3 & 1]
            self.span(f"{name}.timestamp_type", start, self.pos, kind)
        if magic > 1:
            self.span(f"{name}.transactional", start, self.pos, bool(attributes & 0x10))
            self.span(f"{name}.control", start, self.pos, bool(attributes & 0x20))

    # ----------------------------------------------------------------- entries

    def entry(self, pos: int, prefix: str, index: int) -> int | None:
        """Walk the entry at ``pos``; where the next one begins (None: nowhere)."""
        data = self.data
        magic = data[pos + 16] if len(data) > pos + 16 else None
        name = f"{prefix}{'message' if magic in (0, 1) else 'batch'}[{index}]"
        length = _I32.unpack_from(data, pos + 8)[0] if len(data) >= pos + 12 else -1
        end = pos + 12 + length if length >= 0 else None
        stop = len(data) if end is None else min(end, len(data))
        shape = f"{stop - pos} bytes" if magic is None else f"magic {magic}, {stop - pos} bytes"
        self.span(name, pos, stop, shape)
        self.pos, self.limit = pos, stop
        try:
            if magic in (0, 1):
                self._message(name, pos, end, magic or 0)
            elif magic in (2, None):
                self._batch(name, pos, end)
            else:
                self.fixed(f"{name}.base_offset", _I64)
                self.fixed(f"{name}.batch_length", _I32)
                self.pos = pos + 16
                self.fixed(f"{name}.magic", _I8)
        except _End:
            pass
        return end

    def _batch(self, name: str, pos: int, end: int | None) -> None:
        for field, s in (("base_offset", _I64), ("batch_length", _I32)):
            self.fixed(f"{name}.{field}", s)
        self.fixed(f"{name}.partition_leader_epoch", _I32)
        self.fixed(f"{name}.magic", _I8)
        crc = self.fixed(f"{name}.crc", _U32)
        if end is not None and end <= len(self.data) and end >= pos + 21:
            self._check(name, crc, crc32c(self.data[pos + 21 : end]), "CRC-32C")
        values = {}
        for field, s in _BATCH_HEAD:
            values[field] = self.fixed(f"{name}.{field}", s)
            if field == "attributes":
                self.flags(f"{name}.attributes", 2, values[field], 2)
        count, codec = values["record count"], values["attributes"] & 0x07
        if codec:
            self._compressed(name, codec, lambda inner: inner._records("", count))
            return
        self._records(name, count)
        if self.pos < self.limit:
            rest = shown(self.data[self.pos : self.limit])
            self.span(f"{name}.trailing bytes", self.pos, self.limit, rest)

    def _records(self, name: str, count: int) -> None:
        stop = self.limit
        for j in range(max(count, 0)):
            if self.pos >= stop:
                raise _End
            record = f"{name}.record[{j}]"
            n = self.varint(f"{record} length")
            if n < 0:
                raise _End
            end = self.pos + n
            self.limit = min(end, stop)
            self.span(record, self.pos, self.limit, f"{n} bytes")
            try:
                self._record(record)
            except _End:
                if end > stop:
                    raise
            self.pos, self.limit = end, stop
            if end > stop:
                raise _End

    def _record(self, record: str) -> None:
        self.fixed(f"{record}.attributes", _I8)
        self.varint(f"{record}.timestamp_delta", 64)
        self.varint(f"{record}.offset_delta")
        self.sized(f"{record}.key", "varint")
        self.sized(f"{record}.value", "varint")
        count = self.varint(f"{record}.headers count")
        for k in range(max(count, 0)):
            self.sized(f"{record}.headers[{k}].key", "varint", text=True)
            self.sized(f"{record}.headers[{k}].value", "varint")

    def _message(self, name: str, pos: int, end: int | None, magic: int) -> None:
        self.fixed(f"{name}.offset", _I64)
        self.fixed(f"{name}.message_size", _I32)
        crc = self.fixed(f"{name}.crc", _U32)
        if end is not None and end <= len(self.data) and end >= pos + 16:
            self._check(name, crc, zlib.crc32(self.data[pos + 16 : end]), "CRC-32")
        self.fixed(f"{name}.magic", _I8)
        attributes = self.fixed(f"{name}.attributes", _I8)
        self.flags(f"{name}.attributes", 1, attributes, magic)
        if magic == 1:
            self.fixed(f"{name}.timestamp", _I64)
        self.sized(f"{name}.key", "i32")
        codec = attributes & 0x07
        if not codec or self.depth:
            self.sized(f"{name}.value", "i32")
            return
        size = self.fixed(f"{name}.value length", _I32)
        if size < 0:  # a compressed wrapper with no value: nothing to decompress
            raise _End
        self.limit = min(self.limit, self.pos + size)
        self._compressed(name, codec, _inner_messages, legacy=magic == 0)

    def _compressed(
        self, name: str, codec: int, walk: Callable[[_Walk], None], legacy: bool = False
    ) -> None:
        """The compressed bytes from here to the limit, and what they decompress to."""
        start, stop = self.pos, self.limit
        self.span(f"{name}.compressed", start, stop, f"{stop - start} bytes, {_codec_name(codec)}")
        self.pos, data = stop, self.data[start:stop]
        try:
            inner = decompress(codec, data, limit=DECOMPRESSED_MOST, legacy_lz4=legacy)
        except ProtocolError:
            self.span(f"{name}.decompressed", start, stop, "does not decompress")
            return
        sub = _Walk(inner, 0, self.depth + 1)
        sub.limit = len(inner)
        with contextlib.suppress(_End):
            walk(sub)
        a, b, prefix = self.at + start, self.at + stop, f"{name}.decompressed"
        self.spans += [replace(s, name=prefix + s.name, start=a, end=b) for s in sub.spans]

    def _check(self, name: str, wire: int, computed: int, kind: str) -> None:
        if wire != computed:
            said = f"{computed}, not the {wire} on the wire: {kind} mismatch"
            self.span(f"{name}.crc (computed)", self.pos - 4, self.pos, said)


def _inner_messages(sub: _Walk) -> None:
    """A wrapper's inner messages, named ``.message[k]`` (the caller adds its prefix)."""
    pos, k = 0, 0
    while pos < len(sub.data):
        end = sub.entry(pos, ".", k)
        if end is None or end <= pos:
            return
        pos, k = end, k + 1


def _codec_name(codec: int) -> str:
    return NAMES[codec] if codec < len(NAMES) else f"unknown ({codec})"
