"""Partition logs and producer idempotence state (in memory; the journal makes them durable).

A partition log is a list of records whose offsets run 0, 1, 2, ... with no gaps; its high
watermark is the next offset to be given.  Beside the records, each partition remembers per
producer id the current epoch and the last ``REMEMBERED_RANGES`` sequence ranges it appended,
so that a batch sent again is acknowledged with its original offsets and not stored twice.

Rules for a batch (producer_id, epoch, seq_start..seq_end), checked in this order:
  * no state for the producer, or a higher epoch: accepted whatever seq_start is;
  * a lower epoch: PRODUCER_FENCED;
  * same epoch, range equal to a remembered one: a duplicate (original offsets returned);
  * same epoch, seq_start != last seq_end + 1: OUT_OF_ORDER_SEQUENCE.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from conformance.engine.errors import (
    INVALID_ARGUMENT,
    OFFSET_OUT_OF_RANGE,
    OUT_OF_ORDER_SEQUENCE,
    PRODUCER_FENCED,
    EngineError,
)
from conformance.engine.records import AppendResult, ProducerBatch, Record

REMEMBERED_RANGES = 5


@dataclass(frozen=True, slots=True)
class SeqRange:
    """A remembered append: its sequence numbers and the offsets they were stored at."""

    seq_start: int
    seq_end: int
    base_offset: int
    last_offset: int


@dataclass
class ProducerState:
    epoch: int
    ranges: deque[SeqRange] = field(default_factory=lambda: deque(maxlen=REMEMBERED_RANGES))


@dataclass
class PartitionLog:
    records: list[Record] = field(default_factory=list)
    producers: dict[str, ProducerState] = field(default_factory=dict)

    @property
    def high_watermark(self) -> int:
        return len(self.records)

    def read(self, where: str, offset: int, max_records: int) -> list[Record]:
        if max_records < 1:
            raise EngineError(
                INVALID_ARGUMENT, f"max_records must be at least 1, not {max_records}"
            )
        hwm = len(self.records)
        if offset < 0 or offset > hwm:
            raise EngineError(
                OFFSET_OUT_OF_RANGE,
                f"offset {offset} of {where} is outside 0..{hwm} (the high watermark)",
            )
        return self.records[offset : offset + max_records]

    def check_producer(self, where: str, batch: ProducerBatch, count: int) -> AppendResult | None:
        """Refuse a fenced or out-of-order batch; return the original result of a duplicate;
        None when the batch is new and may be appended."""
        if batch.seq_end - batch.seq_start + 1 != count:
            raise EngineError(
                INVALID_ARGUMENT,
                f"sequences {batch.seq_start}..{batch.seq_end} do not number the {count} "
                f"record(s) of the batch",
            )
        state = self.producers.get(batch.producer_id)
        if state is None or batch.epoch > state.epoch:
            return None
        if batch.epoch < state.epoch:
            raise EngineError(
                PRODUCER_FENCED,
                f"producer {batch.producer_id!r} sent epoch {batch.epoch} to {where}, "
                f"but epoch {state.epoch} is already in use",
            )
        for r in state.ranges:
            if r.seq_start == batch.seq_start and r.seq_end == batch.seq_end:
                return AppendResult(r.base_offset, r.last_offset, state.epoch, duplicate=True)
        expected = state.ranges[-1].seq_end + 1 if state.ranges else batch.seq_start
        if batch.seq_start != expected:
            raise EngineError(
                OUT_OF_ORDER_SEQUENCE,
                f"producer {batch.producer_id!r} epoch {batch.epoch} sent sequences "
                f"{batch.seq_start}..{batch.seq_end} to {where}; the next sequence must be "
                f"{expected}",
            )
        return None

    def extend(self, records: tuple[Record, ...], producer: ProducerBatch | None) -> None:
        """Store records that were already checked; remember the producer's range."""
        base = len(self.records)
        self.records.extend(records)
        if producer is None:
            return
        state = self.producers.get(producer.producer_id)
        if state is None or state.epoch != producer.epoch:
            state = ProducerState(producer.epoch)
            self.producers[producer.producer_id] = state
        state.ranges.append(
            SeqRange(producer.seq_start, producer.seq_end, base, base + len(records) - 1)
        )


@dataclass
class Topic:
    name: str
    logs: list[PartitionLog]

    @classmethod
    def new(cls, name: str, partitions: int) -> Topic:
        return cls(name, [PartitionLog() for _ in range(partitions)])
