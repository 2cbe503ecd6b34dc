"""The engine's value types: what goes in (NewRecord, ProducerBatch) and what comes out.

All are frozen dataclasses, so a front-end can hold on to a Record while the log grows.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class NewRecord:
    """A record to append; the engine gives it an offset, and a timestamp unless it
    carries its own (a Kafka producer's create time).  A key, a value or a header value
    may be None where the protocol has nulls (Kafka)."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp_ms: int | None = None


@dataclass(frozen=True, slots=True)
class Batch:
    """One append as stored: its records are offsets ``base_offset`` to ``base_offset +
    count - 1``.  A front-end whose protocol has batches (Kafka) may keep the append as its
    producer wrote it: ``form`` names the encoding (the front-end's own name; "" when
    nothing is kept) and ``data`` holds the bytes.  The engine never reads them."""

    base_offset: int
    count: int
    form: str = ""
    data: bytes = b""


@dataclass(frozen=True, slots=True)
class Record:
    """A stored record.  ``producer_id`` is "" , ``producer_epoch`` 0 and ``sequence`` -1
    when it was appended without idempotence data; ``sequence`` is also -1 when the
    batch's sequence range did not number its records (see engine.append).  ``batch`` is
    the append the record came in (the same object for all its records; not compared)."""

    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp_ms: int
    producer_id: str = ""
    producer_epoch: int = 0
    sequence: int = -1
    batch: Batch | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class ProducerBatch:
    """Idempotence data of one append: records carry sequences seq_start..seq_end."""

    producer_id: str
    epoch: int
    seq_start: int
    seq_end: int


@dataclass(frozen=True, slots=True)
class AppendResult:
    base_offset: int
    last_offset: int
    producer_epoch: int
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    partitions: int


@dataclass(frozen=True, slots=True)
class JoinResult:
    member_id: str
    generation: int
    members: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class MemberInfo:
    member_id: str
    consumer_id: str
    assignment: dict[str, list[int]]  # topic -> the member's partitions


@dataclass(frozen=True, slots=True)
class GroupInfo:
    """A group as ``Engine.group_info`` describes it (Iggy's get/list consumer groups)."""

    name: str
    generation: int
    assignor: str  # the name in force: the group's, else the engine's
    topics: tuple[str, ...]
    members: tuple[MemberInfo, ...]  # sorted by member id


class HeartbeatStatus(enum.Enum):
    OK = "OK"
    REBALANCE_REQUIRED = "REBALANCE_REQUIRED"
