"""OffsetForLeaderEpoch (key 23), DeleteRecords (key 21) and CreatePartitions (key 37).

Behaviour / version notes.  One broker leads every partition at leader epoch 0, the
epoch Metadata and ListOffsets report (:data:`LEADER_EPOCH`).

* OffsetForLeaderEpoch v0-4, as Apache Kafka's ``Partition.lastOffsetForLeaderEpoch``
  and ``LeaderEpochFileCache.endOffsetFor`` answer: a current leader epoch (v2+) other
  than -1 is checked first: below the partition's epoch FENCED_LEADER_EPOCH, above it
  UNKNOWN_LEADER_EPOCH.  Epoch 0 (the current one) ends at the log end offset; an epoch
  above it, or -1, is unknown: epoch -1 and end offset -1, error NONE; an epoch below 0
  (other than -1) gives that epoch and the start offset of epoch 0, which is the log
  start offset.  An unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION.
* DeleteRecords v0-2, as Kafka's ``Partition.deleteRecordsOnLeader``: a topic whose
  cleanup.policy lacks ``delete`` is POLICY_VIOLATION; offset -1 means the high
  watermark; an offset below 0 or past the high watermark is OFFSET_OUT_OF_RANGE; else
  the log start offset moves there (never back) and the answer's low watermark is it
  (:mod:`..log_start`).  An unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION.
  One replica: the answer never waits.
* CreatePartitions v0-3, as the KRaft controller (``ControllerApis.createPartitions``,
  ``ReplicationControlManager.createPartitions``): a topic named twice is INVALID_REQUEST
  (one answer for it); an unknown topic UNKNOWN_TOPIC_OR_PARTITION; a count equal to or
  below the current one INVALID_PARTITIONS; assignments that do not number the new
  partitions, or name a broker that is not this one, or twice, or more than one replica
  (every partition has one), INVALID_REPLICA_ASSIGNMENT; a count past the engine's limit
  INVALID_PARTITIONS.  ``validate_only`` checks and changes nothing.
"""

from __future__ import annotations

from typing import Any

from conformance.engine import EngineError
from conformance.protocols.kafka import log_start, topic_configs
from conformance.protocols.kafka.codec import Request
from conformance.protocols.kafka.context import NODE_ID, Broker
from conformance.protocols.kafka.errors import code, from_engine

LEADER_EPOCH = 0
"""Every partition's leader epoch (as handlers/metadata.py reports it)."""
NO_EPOCH = -1


def _partition_error(broker: Broker, topic: str, index: int) -> str:
    """NONE if the partition exists, else UNKNOWN_TOPIC_OR_PARTITION."""
    try:
        broker.engine.high_watermark(topic, index)
    except EngineError:
        return "UNKNOWN_TOPIC_OR_PARTITION"
    return "NONE"


# ------------------------------------------------------------ OffsetForLeaderEpoch


def _epoch_end(broker: Broker, topic: str, p: dict[str, Any]) -> dict[str, Any]:
    index = int(p.get("partition", 0))
    out = {"partition": index, "error_code": 0, "leader_epoch": -1, "end_offset": -1}
    error = _partition_error(broker, topic, index)
    current = int(p.get("current_leader_epoch", NO_EPOCH))
    if error == "NONE" and current != NO_EPOCH and current != LEADER_EPOCH:
        error = "FENCED_LEADER_EPOCH" if current < LEADER_EPOCH else "UNKNOWN_LEADER_EPOCH"
    if error != "NONE":
        return {**out, "error_code": code(error)}
    epoch = int(p.get("leader_epoch", NO_EPOCH))
    if epoch == LEADER_EPOCH:
        return {
            **out,
            "leader_epoch": epoch,
            "end_offset": broker.engine.high_watermark(topic, index),
        }
    if epoch == NO_EPOCH or epoch > LEADER_EPOCH:
        return out
    return {
        **out,
        "leader_epoch": epoch,
        "end_offset": log_start.log_start_offset(broker.engine, topic, index),
    }


def offset_for_leader_epoch(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    topics = [
        {
            "topic": t.get("topic", ""),
            "partitions": [
                _epoch_end(broker, t.get("topic", ""), p) for p in t.get("partitions", [])
            ],
        }
        for t in request.body.get("topics", [])
    ]
    return {"throttle_time_ms": 0, "topics": topics}


# ------------------------------------------------------------------- DeleteRecords


def _delete(broker: Broker, topic: str, index: int, offset: int) -> tuple[str, int]:
    if _partition_error(broker, topic, index) != "NONE":
        return "UNKNOWN_TOPIC_OR_PARTITION", -1
    engine = broker.engine
    if not topic_configs.deletes_records(engine, topic):
        return "POLICY_VIOLATION", -1
    hwm = engine.high_watermark(topic, index)
    target = hwm if offset == -1 else offset
    if not 0 <= target <= hwm:
        return "OFFSET_OUT_OF_RANGE", -1
    return "NONE", log_start.advance(engine, topic, index, target)


def delete_records(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    topics = []
    for t in request.body.get("topics", []):
        name = t.get("name", "")
        parts = []
        for p in t.get("partitions", []):
            index = int(p.get("partition_index", 0))
            error, low = _delete(broker, name, index, int(p.get("offset", 0)))
            parts.append(
                {"partition_index": index, "low_watermark": low, "error_code": code(error)}
            )
        topics.append({"name": name, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}


# ---------------------------------------------------------------- CreatePartitions


def _assignment_error(assignments: list[dict[str, Any]], additional: int) -> str | None:
    if len(assignments) != additional:
        return (
            f"Attempted to add {additional} additional partition(s), but only "
            f"{len(assignments)} assignment(s) were specified."
        )
    for i, a in enumerate(assignments):
        ids = [int(b) for b in a.get("broker_ids", [])]
        if not ids:
            return f"assignment {i} has an empty replica list"
        unknown = [b for b in ids if b != NODE_ID]
        if unknown:
            return f"assignment {i} names broker {unknown[0]}; broker {NODE_ID} is the only one"
        if len(ids) != 1:
            return f"assignment {i} has {len(ids)} replicas; the topic's partitions have 1"
    return None


def _grow(broker: Broker, t: dict[str, Any], validate_only: bool) -> tuple[str, str | None]:
    name, count = t.get("name", ""), int(t.get("count", 0))
    if not broker.engine.has_topic(name):
        return "UNKNOWN_TOPIC_OR_PARTITION", f"there is no topic {name!r}"
    current = broker.engine.topic(name).partitions
    if count == current:
        return "INVALID_PARTITIONS", f"Topic already has {current} partition(s)."
    if count < current:
        return "INVALID_PARTITIONS", (
            f"The topic {name} currently has {current} partition(s); {count} would not be an "
            "increase."
        )
    assignments = t.get("assignments")
    if assignments is not None:
        why = _assignment_error(list(assignments), count - current)
        if why is not None:
            return "INVALID_REPLICA_ASSIGNMENT", why
    if count > broker.engine.max_partitions:
        return "INVALID_PARTITIONS", (
            f"{count} partitions: this broker's limit is {broker.engine.max_partitions}"
        )
    if not validate_only:
        try:
            broker.engine.add_partitions(name, count - current)
        except EngineError as exc:
            return from_engine(exc.code), str(exc)
    return "NONE", None


def create_partitions(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    body = request.body
    topics = list(body.get("topics", []))
    names = [t.get("name", "") for t in topics]
    twice = {n for n in names if names.count(n) > 1}
    results, answered = [], set()
    for t, name in zip(topics, names, strict=True):
        if name in answered:
            continue
        answered.add(name)
        message: str | None
        if name in twice:
            error, message = "INVALID_REQUEST", "Duplicate topic name."
        else:
            error, message = _grow(broker, t, bool(body.get("validate_only", False)))
        results.append({"name": name, "error_code": code(error), "error_message": message})
    if any(r["error_code"] == 0 for r in results) and not body.get("validate_only", False):
        broker.changed()
    return {"throttle_time_ms": 0, "results": results}
