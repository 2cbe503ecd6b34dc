"""Partition logs and producer idempotence state (in memory; the journal makes them durable).

A partition log is a list of records whose offsets run 0, 1, 2, ... with no gaps; its high
watermark is the next offset to be given.  Beside the records, each partition remembers per
producer id the highest epoch it has seen and the last ``REMEMBERED_RANGES`` sequence ranges
the producer appended, each with its epoch, so that a batch sent again is acknowledged with
its original offsets and not stored twice.

Which rules an idempotent batch (producer_id, epoch, seq_start..seq_end) is held to is an
:class:`IdempotencePolicy`, chosen per append by the front-end from what its protocol's
document states.  Checked in this order:

  * ``range_must_number_records``: seq_end - seq_start + 1 must be the record count
    (else INVALID_ARGUMENT);
  * no state for the producer: accepted whatever seq_start is;
  * ``fence_lower_epochs``: an epoch below the highest seen is PRODUCER_FENCED;
  * a remembered range with the same epoch, seq_start and seq_end: a duplicate
    (original offsets returned, nothing stored) -- under every policy;
  * ``require_next_sequence``: at the highest epoch, seq_start must follow the last
    seq_end of that epoch (else OUT_OF_ORDER_SEQUENCE); a new epoch starts anywhere,
    unless ``new_epoch_starts_at_zero``: a batch raising the epoch must start at
    sequence 0 (else OUT_OF_ORDER_SEQUENCE; Kafka's rule after an epoch bump).

``STRICT`` holds all four rules (Kafka's idempotent producer); ``DEDUPE_ONLY`` none of
them, for a document that states no sequence rule (Cursus ``doc``): a gap, an overlap, a
lower epoch or a range that does not number the records is stored like any batch.  How a
batch is remembered does not depend on the policy, so replaying the journal (which does
not record the policy) rebuilds the same state: the tracked epoch only ever goes up, and
every stored idempotent batch is remembered under its own epoch.
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
class IdempotencePolicy:
    """The rules an idempotent append is held to beside deduplication of exact resends."""

    fence_lower_epochs: bool
    require_next_sequence: bool
    range_must_number_records: bool
    new_epoch_starts_at_zero: bool = False


STRICT = IdempotencePolicy(
    fence_lower_epochs=True,
    require_next_sequence=True,
    range_must_number_records=True,
    new_epoch_starts_at_zero=True,
)
"""Every rule: Kafka's idempotent producer."""

DEDUPE_ONLY = IdempotencePolicy(
    fence_lower_epochs=False, require_next_sequence=False, range_must_number_records=False
)
"""No rule: only an exact resend of a remembered (epoch, seq_start, seq_end) is caught."""


@dataclass(frozen=True, slots=True)
class SeqRange:
    """A remembered append: its sequence numbers and epoch, and the offsets it was stored at."""

    seq_start: int
    seq_end: int
    base_offset: int
    last_offset: int
    epoch: int


@dataclass
class ProducerState:
    epoch: int  # the highest epoch seen
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
        if offset < 0:  # never a negative index into the list
            raise EngineError(
                OFFSET_OUT_OF_RANGE,
                f"offset {offset} of {where} is below 0: offsets number the log from 0",
            )
        if offset > hwm:
            raise EngineError(
                OFFSET_OUT_OF_RANGE,
                f"offset {offset} of {where} is outside 0..{hwm} (the high watermark)",
            )
        return self.records[offset : offset + max_records]

    def check_producer(
        self, where: str, batch: ProducerBatch, count: int, policy: IdempotencePolicy
    ) -> AppendResult | None:
        """Refuse what ``policy`` refuses; return the original result of a duplicate;
        None when the batch is new and may be appended."""
        if policy.range_must_number_records and batch.seq_end - batch.seq_start + 1 != count:
            raise EngineError(
                INVALID_ARGUMENT,
                f"sequences {batch.seq_start}..{batch.seq_end} do not number the {count} "
                f"record(s) of the batch",
            )
        state = self.producers.get(batch.producer_id)
        if state is None:
            return None
        if policy.fence_lower_epochs and batch.epoch < state.epoch:
            raise EngineError(
                PRODUCER_FENCED,
                f"producer {batch.producer_id!r} sent epoch {batch.epoch} to {where}, "
                f"but epoch {state.epoch} is already in use",
            )
        for r in state.ranges:
            if (r.epoch, r.seq_start, r.seq_end) == (batch.epoch, batch.seq_start, batch.seq_end):
                return AppendResult(r.base_offset, r.last_offset, state.epoch, duplicate=True)
        if policy.new_epoch_starts_at_zero and batch.epoch > state.epoch and batch.seq_start:
            raise EngineError(
                OUT_OF_ORDER_SEQUENCE,
                f"producer {batch.producer_id!r} raised its epoch to {batch.epoch} on {where} "
                f"with sequence {batch.seq_start}; a new epoch starts at sequence 0",
            )
        if policy.require_next_sequence and batch.epoch == state.epoch:
            last = next((r for r in reversed(state.ranges) if r.epoch == state.epoch), None)
            if last is not None and batch.seq_start != last.seq_end + 1:
                raise EngineError(
                    OUT_OF_ORDER_SEQUENCE,
                    f"producer {batch.producer_id!r} epoch {batch.epoch} sent sequences "
                    f"{batch.seq_start}..{batch.seq_end} to {where}; the next sequence must "
                    f"be {last.seq_end + 1}",
                )
        return None

    def extend(self, records: tuple[Record, ...], producer: ProducerBatch | None) -> None:
        """Store records that were already checked; remember the producer's range."""
        base = len(self.records)
        self.records.extend(records)
        if producer is None:
            return
        state = self.producers.get(producer.producer_id)
        if state is None:
            state = ProducerState(producer.epoch)
            self.producers[producer.producer_id] = state
        state.epoch = max(state.epoch, producer.epoch)
        last = base + len(records) - 1
        state.ranges.append(
            SeqRange(producer.seq_start, producer.seq_end, base, last, producer.epoch)
        )


@dataclass
class Topic:
    name: str
    logs: list[PartitionLog]

    @classmethod
    def new(cls, name: str, partitions: int) -> Topic:
        return cls(name, [PartitionLog() for _ in range(partitions)])
