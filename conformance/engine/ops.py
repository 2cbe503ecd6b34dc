"""Journal operations: the engine's state changes as values, and their binary encoding.

Every state change the engine makes is first written as one of these operations and then
applied; recovery applies the same operations in the same order.  The encoding is compact
little-endian binary: strings are ``[u32 length][UTF-8]``, bytes ``[u32 length][bytes]``
(a record's key, value or header value of length 0xFFFFFFFF is None, a Kafka null),
and the first byte of a payload names the operation.  Offsets inside an Append are not
stored per record: they run from ``base_offset``.

A ProducerSnapshot is written as type 7, whose ranges carry their own epoch.  Type 6, the
older form without per-range epochs, is still read: every range it holds was appended at
the snapshot's epoch (the engine that wrote it remembered ranges of one epoch only).

AddPartitions (type 10) and RemovePartitions (type 11) grow a topic by new empty
partitions after its last one, or drop its last ones with their records (and the offsets
committed to them).

An Append whose batch keeps the form and bytes its front-end wrote it in is type 13: type
3's fields, then the form (string) and the bytes.  Type 3 is an append that keeps none; its
records still form one batch (the append's boundary).

A PutMeta (type 12) sets or removes one key of the front-ends' metadata store: a key
(string) and a value (bytes; length 0xFFFFFFFF: None, the key is removed).  The engine
does not read the values; a front-end keeps there what its protocol knows and the engine
has no field for (names, ids, creation times).

A GroupState is written as type 8: type 5's fields, then the group's assignor and the
members bound to their connection.  Type 5 is still read: its group uses the engine's
assignor and all its members have sessions (the only kind there was).  A DeleteGroup is
type 9.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from conformance.engine.log import SeqRange
from conformance.engine.records import Batch, ProducerBatch, Record


@dataclass(frozen=True, slots=True)
class CreateTopic:
    name: str
    partitions: int


@dataclass(frozen=True, slots=True)
class DeleteTopic:
    name: str


@dataclass(frozen=True, slots=True)
class AddPartitions:
    """``count`` new empty partitions after the topic's last one."""

    name: str
    count: int


@dataclass(frozen=True, slots=True)
class RemovePartitions:
    """The topic's last ``count`` partitions are gone, with their records and offsets."""

    name: str
    count: int


@dataclass(frozen=True, slots=True)
class Append:
    """One append; its records carry ``batch`` (the form and bytes it was written in)."""

    topic: str
    partition: int
    base_offset: int
    records: tuple[Record, ...]
    producer: ProducerBatch | None

    @property
    def batch(self) -> Batch:
        first = self.records[0].batch if self.records else None
        return first if first is not None else Batch(self.base_offset, len(self.records))


@dataclass(frozen=True, slots=True)
class Commit:
    group: str
    topic: str
    offsets: tuple[tuple[int, int], ...]  # (partition, offset)


@dataclass(frozen=True, slots=True)
class GroupState:
    """The whole durable state of a group but its offsets (sessions are not durable)."""

    name: str
    generation: int
    counter: int
    subscriptions: tuple[str, ...]
    members: tuple[tuple[str, str], ...]  # (member id, consumer id)
    assignor: str = ""  # "": the engine's
    bound: tuple[str, ...] = ()  # the member ids that end with their connection


@dataclass(frozen=True, slots=True)
class DeleteGroup:
    """A group and its committed offsets are gone."""

    name: str


@dataclass(frozen=True, slots=True)
class ProducerSnapshot:
    """A producer's idempotence state, written when the journal is compacted."""

    topic: str
    partition: int
    producer_id: str
    epoch: int  # the highest epoch seen
    ranges: tuple[SeqRange, ...]


@dataclass(frozen=True, slots=True)
class PutMeta:
    """Metadata key ``key`` is now ``value``; None removes it."""

    key: str
    value: bytes | None


Op = (
    CreateTopic
    | DeleteTopic
    | Append
    | Commit
    | GroupState
    | DeleteGroup
    | ProducerSnapshot
    | AddPartitions
    | RemovePartitions
    | PutMeta
)

_CREATE, _DELETE, _APPEND, _COMMIT = 1, 2, 3, 4
_GROUP_V1 = 5  # without assignor and bound members (read only)
_PRODUCER_V1 = 6  # ranges without their epoch (read only)
_PRODUCER = 7
_GROUP = 8
_DELETE_GROUP = 9
_ADD_PARTITIONS = 10
_REMOVE_PARTITIONS = 11
_PUT_META = 12
_APPEND_WRITTEN = 13  # an Append, then its batch's form and bytes

_U8 = struct.Struct("<B")
_U32 = struct.Struct("<I")
_I64 = struct.Struct("<q")
_APPEND_HEAD = struct.Struct("<IqIB")  # partition, base offset, record count, has producer
_PRODUCER_FIELDS = struct.Struct("<qqq")  # epoch, seq_start, seq_end
_RECORD_HEAD = struct.Struct("<qqqIIII")  # ts, epoch, sequence, len pid/key/value, n headers
_HEADER_HEAD = struct.Struct("<II")
_NULL = 0xFFFFFFFF  # the length of a null key, value or header value
_PAIR = struct.Struct("<Iq")
_RANGE_V1 = struct.Struct("<qqqq")  # seq_start, seq_end, base offset, last offset
_RANGE = struct.Struct("<qqqqq")  # the same, then the range's epoch


class DecodeError(ValueError):
    """A payload that passed its checksum but is not an operation this version knows."""


def _text(s: str) -> bytes:
    raw = s.encode("utf-8", "surrogatepass")
    return _U32.pack(len(raw)) + raw


def encode(op: Op) -> bytes:
    if isinstance(op, Append):
        return _encode_append(op)
    if isinstance(op, Commit):
        parts = [_U8.pack(_COMMIT), _text(op.group), _text(op.topic), _U32.pack(len(op.offsets))]
        parts += [_PAIR.pack(p, o) for p, o in op.offsets]
        return b"".join(parts)
    if isinstance(op, CreateTopic):
        return _U8.pack(_CREATE) + _text(op.name) + _U32.pack(op.partitions)
    if isinstance(op, DeleteTopic):
        return _U8.pack(_DELETE) + _text(op.name)
    if isinstance(op, AddPartitions):
        return _U8.pack(_ADD_PARTITIONS) + _text(op.name) + _U32.pack(op.count)
    if isinstance(op, RemovePartitions):
        return _U8.pack(_REMOVE_PARTITIONS) + _text(op.name) + _U32.pack(op.count)
    if isinstance(op, GroupState):
        parts = [_U8.pack(_GROUP), _text(op.name), _I64.pack(op.generation), _I64.pack(op.counter)]
        parts.append(_U32.pack(len(op.subscriptions)))
        parts += [_text(t) for t in op.subscriptions]
        parts.append(_U32.pack(len(op.members)))
        for member_id, consumer_id in op.members:
            parts += [_text(member_id), _text(consumer_id)]
        parts += [_text(op.assignor), _U32.pack(len(op.bound))]
        parts += [_text(m) for m in op.bound]
        return b"".join(parts)
    if isinstance(op, DeleteGroup):
        return _U8.pack(_DELETE_GROUP) + _text(op.name)
    if isinstance(op, PutMeta):
        value = op.value
        n = _U32.pack(_NULL if value is None else len(value))
        return _U8.pack(_PUT_META) + _text(op.key) + n + (value or b"")
    parts = [_U8.pack(_PRODUCER), _text(op.topic), _U32.pack(op.partition), _text(op.producer_id)]
    parts += [_I64.pack(op.epoch), _U32.pack(len(op.ranges))]
    parts += [
        _RANGE.pack(r.seq_start, r.seq_end, r.base_offset, r.last_offset, r.epoch)
        for r in op.ranges
    ]
    return b"".join(parts)


def _encode_append(op: Append) -> bytes:
    p, batch = op.producer, op.batch
    written = bool(batch.form or batch.data)
    parts = [
        _U8.pack(_APPEND_WRITTEN if written else _APPEND),
        _text(op.topic),
        _APPEND_HEAD.pack(op.partition, op.base_offset, len(op.records), p is not None),
    ]
    if p is not None:
        parts += [_text(p.producer_id), _PRODUCER_FIELDS.pack(p.epoch, p.seq_start, p.seq_end)]
    for r in op.records:
        pid = r.producer_id.encode("utf-8", "surrogatepass")
        parts.append(
            _RECORD_HEAD.pack(
                r.timestamp_ms,
                r.producer_epoch,
                r.sequence,
                len(pid),
                _NULL if r.key is None else len(r.key),
                _NULL if r.value is None else len(r.value),
                len(r.headers),
            )
        )
        parts += [pid, r.key or b"", r.value or b""]
        for name, value in r.headers:
            raw = name.encode("utf-8", "surrogatepass")
            n = _NULL if value is None else len(value)
            parts += [_HEADER_HEAD.pack(len(raw), n), raw, value or b""]
    if written:
        parts += [_text(batch.form), _U32.pack(len(batch.data)), batch.data]
    return b"".join(parts)


class _Reader:
    def __init__(self, payload: bytes) -> None:
        self.data = payload
        self.pos = 0

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if end > len(self.data):
            raise DecodeError(f"payload ends {end - len(self.data)} byte(s) early")
        out = self.data[self.pos : end]
        self.pos = end
        return out

    def nullable(self, n: int) -> bytes | None:
        return None if n == _NULL else self.take(n)

    def unpack(self, s: struct.Struct) -> tuple[int, ...]:
        return s.unpack(self.take(s.size))

    def u32(self) -> int:
        return self.unpack(_U32)[0]

    def i64(self) -> int:
        return self.unpack(_I64)[0]

    def text(self, n: int | None = None) -> str:
        raw = self.take(self.u32() if n is None else n)
        try:
            return raw.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError as exc:
            raise DecodeError(f"a string is not UTF-8: {exc}") from None


def decode(payload: bytes) -> Op:
    """The operation in ``payload``; DecodeError if it is not one."""
    r = _Reader(payload)
    (kind,) = r.unpack(_U8)
    op: Op
    if kind in (_APPEND, _APPEND_WRITTEN):
        op = _decode_append(r, kind == _APPEND_WRITTEN)
    elif kind == _COMMIT:
        group, topic = r.text(), r.text()
        offsets = tuple((p, o) for p, o in (r.unpack(_PAIR) for _ in range(r.u32())))
        op = Commit(group, topic, offsets)
    elif kind == _CREATE:
        op = CreateTopic(r.text(), r.u32())
    elif kind == _DELETE:
        op = DeleteTopic(r.text())
    elif kind == _ADD_PARTITIONS:
        op = AddPartitions(r.text(), r.u32())
    elif kind == _REMOVE_PARTITIONS:
        op = RemovePartitions(r.text(), r.u32())
    elif kind in (_GROUP, _GROUP_V1):
        name, generation, counter = r.text(), r.i64(), r.i64()
        subscriptions = tuple(r.text() for _ in range(r.u32()))
        members = tuple((r.text(), r.text()) for _ in range(r.u32()))
        op = GroupState(name, generation, counter, subscriptions, members)
        if kind == _GROUP:
            assignor = r.text()
            bound = tuple(r.text() for _ in range(r.u32()))
            op = GroupState(name, generation, counter, subscriptions, members, assignor, bound)
    elif kind == _DELETE_GROUP:
        op = DeleteGroup(r.text())
    elif kind == _PUT_META:
        key = r.text()
        op = PutMeta(key, r.nullable(r.u32()))
    elif kind in (_PRODUCER, _PRODUCER_V1):
        topic, partition, producer_id, epoch = r.text(), r.u32(), r.text(), r.i64()
        ranges = tuple(_seq_range(r, kind, epoch) for _ in range(r.u32()))
        op = ProducerSnapshot(topic, partition, producer_id, epoch, ranges)
    else:
        raise DecodeError(f"unknown operation type {kind}")
    if r.pos != len(payload):
        raise DecodeError(f"{len(payload) - r.pos} byte(s) left after a {type(op).__name__}")
    return op


def _seq_range(r: _Reader, kind: int, snapshot_epoch: int) -> SeqRange:
    if kind == _PRODUCER:
        seq_start, seq_end, base, last, epoch = r.unpack(_RANGE)
        return SeqRange(seq_start, seq_end, base, last, epoch)
    seq_start, seq_end, base, last = r.unpack(_RANGE_V1)
    return SeqRange(seq_start, seq_end, base, last, snapshot_epoch)


def _decode_append(r: _Reader, written: bool) -> Append:
    topic = r.text()
    partition, base, count, has_producer = r.unpack(_APPEND_HEAD)
    producer = None
    if has_producer:
        pid = r.text()
        producer = ProducerBatch(pid, *r.unpack(_PRODUCER_FIELDS))
    fields = []
    for _ in range(count):
        ts, epoch, seq, n_pid, n_key, n_value, n_headers = r.unpack(_RECORD_HEAD)
        pid = r.text(n_pid)
        key, value = r.nullable(n_key), r.nullable(n_value)
        headers = []
        for _ in range(n_headers):
            n_name, n_hvalue = r.unpack(_HEADER_HEAD)
            headers.append((r.text(n_name), r.nullable(n_hvalue)))
        fields.append((key, value, tuple(headers), ts, pid, epoch, seq))
    batch = Batch(base, count)
    if written:
        form = r.text()
        batch = Batch(base, count, form, r.take(r.u32()))
    records = tuple(
        Record(base + i, key, value, headers, ts, pid, epoch, seq, batch)
        for i, (key, value, headers, ts, pid, epoch, seq) in enumerate(fields)
    )
    return Append(topic, partition, base, records, producer)
