"""The values of Kafka's "records" field: batches, records and headers, whatever their magic.

:class:`RecordBatch` is what :mod:`.records` (magic 2) and :mod:`.message_sets` (magic
0 and 1) decode to and what :func:`~.records.encode_batch` writes; :class:`BatchHeader`
is a magic-2 batch's header as :func:`~.records.peek_batch` reads it.

Rules: immutable values only, no codec.  A batch is a frozen dataclass; its records and
headers are typed named tuples, as one costs ~0.1 us to build where a frozen dataclass
of six fields costs ~0.7 us (most of a decode); the decoders build a batch with
:func:`new_batch`, which skips ``__init__``.  Everything here is re-exported by
:mod:`.records`, where callers import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from conformance.errors import ProtocolError
from conformance.protocols.kafka.compression import NAMES

TIMESTAMP_TYPE_BIT, TRANSACTIONAL_BIT, CONTROL_BIT = 0x08, 0x10, 0x20


class RecordsDisagree(ProtocolError):
    """A batch whose record count, or a record's length, disagrees with its bytes (what
    Apache Kafka's record iterator refuses with InvalidRecordException)."""


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
    """A batch (no ``__slots__``: :func:`new_batch` sets its instance dict at once)."""

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


def new_batch(
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
