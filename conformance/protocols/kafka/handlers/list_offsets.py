"""ListOffsets (key 2): an offset of a partition by timestamp.

Behavior: timestamp -1 is the latest offset (the high watermark), -2 the earliest (0:
nothing is ever truncated here), -3 (v7+) the offset of the record with the largest
timestamp; any other timestamp gives the first offset whose record's timestamp is at
least it, or offset -1 and timestamp -1 when none is.  v0 answers in
``old_style_offsets`` (at most ``max_num_offsets`` of them).  An unknown topic or a
partition outside it is UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from typing import Any

from conformance.engine import EngineError, Record
from conformance.protocols.kafka.broker import Broker
from conformance.protocols.kafka.codec import Request
from conformance.protocols.kafka.errors import code, from_engine

LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3


def _find(records: list[Record], timestamp: int) -> tuple[int, int]:
    """(offset, timestamp) of the first record at or after ``timestamp``; (-1, -1) if none."""
    for r in records:
        if r.timestamp_ms >= timestamp:
            return r.offset, r.timestamp_ms
    return -1, -1


def _lookup(broker: Broker, topic: str, index: int, timestamp: int) -> tuple[str, int, int]:
    try:
        hwm = broker.engine.high_watermark(topic, index)
    except EngineError as exc:
        return from_engine(exc.code), -1, -1
    if timestamp == LATEST:
        return "NONE", hwm, -1
    if timestamp == EARLIEST:
        return "NONE", 0, -1
    records = broker.engine.read(topic, index, 0, hwm) if hwm else []
    if timestamp == MAX_TIMESTAMP:
        if not records:
            return "NONE", -1, -1
        best = max(records, key=lambda r: (r.timestamp_ms, -r.offset))
        return "NONE", best.offset, best.timestamp_ms
    offset, ts = _find(records, timestamp)
    return "NONE", offset, ts


def handle(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    version = request.api_version
    topics = []
    for t in request.body.get("topics", []):
        name = t.get("name", "")
        parts = []
        for p in t.get("partitions", []):
            index = int(p.get("partition_index", 0))
            error, offset, ts = _lookup(broker, name, index, int(p.get("timestamp", LATEST)))
            entry: dict[str, Any] = {
                "partition_index": index,
                "error_code": code(error),
                "timestamp": ts,
                "offset": offset,
                "leader_epoch": 0,
            }
            if version == 0:
                most = max(int(p.get("max_num_offsets", 1)), 0)
                entry["old_style_offsets"] = [offset][:most] if error == "NONE" else []
            parts.append(entry)
        topics.append({"name": name, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}
