"""ListOffsets (key 2): an offset of a partition by timestamp.

Behavior: timestamp -1 is the latest offset (the high watermark), -2 the earliest (the
log start offset, which DeleteRecords moves), -3 (v7+) the offset of the record with the
largest timestamp, -4 (v8+) the earliest local offset (the log start offset: nothing is in
remote storage) and -5 (v9+) the latest tiered offset (-1: nothing is tiered), as Kafka's
``UnifiedLog.fetchOffsetByTimestamp`` answers without remote storage; any other
timestamp gives the first offset whose record's timestamp is at least it, or offset -1,
timestamp -1 and leader epoch -1 when none is.  v0 answers in
``old_style_offsets`` (at most ``max_num_offsets`` of them).  An unknown topic or a
partition outside it is UNKNOWN_TOPIC_OR_PARTITION.  With isolation_level 1
(READ_COMMITTED, v2+) the latest offset is the last stable offset, the first offset of the
partition's earliest open transaction (Apache Kafka's ``Partition.fetchOffsetForTimestamp``:
``lastFetchableOffset``).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

from conformance.engine import EngineError
from conformance.protocols.kafka import log_start
from conformance.protocols.kafka.codec import Request
from conformance.protocols.kafka.context import Broker
from conformance.protocols.kafka.errors import code, from_engine
from conformance.protocols.kafka.transaction_coordinator import coordinator_of

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
"""ListOffsetsRequest's special timestamps (-4 from v8, KIP-1005; -5 from v9, KIP-1005)."""


@dataclass
class TimeIndex:
    """A partition's running maximum of timestamps, grown as the log grows.

    The first record whose timestamp is at least T is the first offset where the running
    maximum reaches T, so a lookup is a binary search, not a scan of the log (a fuzz
    campaign asks thousands of times of a log that keeps growing)."""

    highest: list[int] = field(default_factory=list)
    """highest[i]: the largest timestamp of records 0..i."""
    stamps: list[int] = field(default_factory=list)
    top: int = -1
    """The first offset holding the largest timestamp."""

    def catch_up(self, broker: Broker, topic: str, index: int, hwm: int) -> None:
        while len(self.stamps) < hwm:
            chunk = broker.engine.read(topic, index, len(self.stamps), 10_000)
            if not chunk:
                return
            for r in chunk:
                ts = r.timestamp_ms
                if not self.highest or ts > self.highest[-1]:
                    self.highest.append(ts)
                    self.top = r.offset
                else:
                    self.highest.append(self.highest[-1])
                self.stamps.append(ts)

    def first_at_or_after(self, timestamp: int) -> tuple[int, int]:
        at = bisect.bisect_left(self.highest, timestamp)
        if at == len(self.highest):
            return -1, -1
        return at, self.stamps[at]

    def largest(self) -> tuple[int, int]:
        return (self.top, self.highest[-1]) if self.highest else (-1, -1)


def _index(broker: Broker, topic: str, index: int, hwm: int) -> TimeIndex:
    key = (topic, index)
    found = broker.time_indexes.get(key)
    if found is None or len(found.stamps) > hwm:  # a new log (the topic was re-created)
        found = broker.time_indexes[key] = TimeIndex()
    found.catch_up(broker, topic, index, hwm)
    return found


def _lookup(
    broker: Broker, topic: str, index: int, timestamp: int, committed: bool = False
) -> tuple[str, int, int]:
    try:
        hwm = broker.engine.high_watermark(topic, index)
    except EngineError as exc:
        return from_engine(exc.code), -1, -1
    if timestamp == LATEST:
        index_of = coordinator_of(broker).index
        if committed and index_of.known(topic, index) is not None:
            return "NONE", index_of.partition(topic, index, hwm).last_stable_offset(hwm), -1
        return "NONE", hwm, -1
    if timestamp in (EARLIEST, EARLIEST_LOCAL):  # no remote storage: the local log is all
        return "NONE", log_start.log_start_offset(broker.engine, topic, index), -1
    if timestamp == LATEST_TIERED:  # nothing is tiered (UnifiedLog.fetchOffsetByTimestamp)
        return "NONE", -1, -1
    times = _index(broker, topic, index, hwm)
    offset, ts = (
        times.largest() if timestamp == MAX_TIMESTAMP else times.first_at_or_after(timestamp)
    )
    return "NONE", offset, ts


def handle(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    version = request.api_version
    committed = version >= 2 and int(request.body.get("isolation_level", 0)) == 1
    if committed:
        coordinator_of(broker).expire()
    topics = []
    for t in request.body.get("topics", []):
        name = t.get("name", "")
        parts = []
        for p in t.get("partitions", []):
            index = int(p.get("partition_index", 0))
            error, offset, ts = _lookup(
                broker, name, index, int(p.get("timestamp", LATEST)), committed
            )
            entry: dict[str, Any] = {
                "partition_index": index,
                "error_code": code(error),
                "timestamp": ts,
                "offset": offset,
                "leader_epoch": 0 if offset >= 0 else -1,  # no offset, no epoch
            }
            if version == 0:
                most = max(int(p.get("max_num_offsets", 1)), 0)
                entry["old_style_offsets"] = [offset][:most] if error == "NONE" else []
            parts.append(entry)
        topics.append({"name": name, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}
