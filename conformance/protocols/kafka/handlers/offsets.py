"""OffsetCommit (8) and OffsetFetch (9): committed offsets, kept by the engine.

Behavior: a commit from a member is checked by the coordinator first (unknown member,
illegal generation, a rebalance in progress: every partition gets that error); a commit
with member id "" and generation -1 (and every v0 commit) is a simple commit, allowed
while the group has no members.  A partition of a topic that does not exist is
UNKNOWN_TOPIC_OR_PARTITION, before the member is checked (as Kafka's KafkaApis does); an
offset below 0 is stored like any other and fetched back (``OffsetMetadataManager
.commitOffset`` checks only the metadata; the engine's policy ``negative_offsets``);
metadata over 4096 characters is OFFSET_METADATA_TOO_LARGE.  The commit's metadata string is kept
beside the offset (in memory).  OffsetFetch answers -1 with no
error for a partition never committed; a null topic list (v2+) means every topic the
group committed.  v8+ asks for several groups at once.  With require_stable (v7+), a
partition whose offset an open transaction holds (TxnOffsetCommit, not yet ended) answers
UNSTABLE_OFFSET_COMMIT with offset -1, as Kafka's ``OffsetMetadataManager.fetchOffsets``.

A group of the consumer protocol (KIP-848, :mod:`.consumer_groups`) checks the member
instead, as Kafka's ``ConsumerGroup.validateOffsetCommit`` and ``validateOffsetFetch`` do:
a commit with member epoch -1 is a simple commit while the group has no members; else
the member id must be a member (UNKNOWN_MEMBER_ID), commit with v9+ (UNSUPPORTED_VERSION
below) and carry its current member epoch (STALE_MEMBER_EPOCH).  An OffsetFetch v9 that
names a member (or an epoch) is checked the same way, its group answering the error.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from conformance.engine import DEFAULT_GROUP_POLICY, EngineError
from conformance.protocols.kafka.codec import Request
from conformance.protocols.kafka.context import Broker
from conformance.protocols.kafka.errors import code, from_engine
from conformance.protocols.kafka.handlers.consumer_groups import consumer_groups
from conformance.protocols.kafka.transaction_coordinator import coordinator_of

COMMITS = dataclasses.replace(DEFAULT_GROUP_POLICY, negative_offsets=True)
"""Kafka's simple commits: any offset is stored, one below 0 too."""

MAX_METADATA = 4096
"""Kafka's offset.metadata.max.bytes default: longer commit metadata is
OFFSET_METADATA_TOO_LARGE (``OffsetMetadataManager.isMetadataInvalid``)."""


def _generation(body: dict[str, Any]) -> int:
    for key in ("generation_id_or_member_epoch", "generation_id"):
        if key in body:
            return int(body[key])
    return -1


def offset_commit(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    body = request.body
    group = body.get("group_id", "")
    member = body.get("member_id", "") if request.api_version >= 1 else ""
    generation = _generation(body) if request.api_version >= 1 else -1
    modern = consumer_groups(broker)
    if modern.is_consumer(group):
        refused = modern.check_commit(group, member, generation, request.api_version)
    else:
        refused = broker.coordinator.check_commit(
            group,
            member,
            generation,
            version=request.api_version,
            group_instance_id=body.get("group_instance_id") if request.api_version >= 7 else None,
        )
    topics = []
    for t in body.get("topics", []):
        name = t.get("name", "")
        parts = []
        for p in t.get("partitions", []):
            index = int(p.get("partition_index", 0))
            error = _unknown(broker, name, index) or refused
            if error == "NONE":
                error = _commit(broker, group, name, index, p)
            parts.append({"partition_index": index, "error_code": code(error)})
        topics.append({"name": name, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}


def _unknown(broker: Broker, topic: str, index: int) -> str | None:
    """UNKNOWN_TOPIC_OR_PARTITION for a partition that does not exist (Kafka's
    ``KafkaApis.handleOffsetCommitRequest`` answers it before the coordinator is asked)."""
    if broker.engine.has_topic(topic) and 0 <= index < broker.engine.topic(topic).partitions:
        return None
    return "UNKNOWN_TOPIC_OR_PARTITION"


def _commit(broker: Broker, group: str, topic: str, index: int, p: dict[str, Any]) -> str:
    if not group:
        return "INVALID_GROUP_ID"
    metadata = p.get("committed_metadata")
    if metadata is not None and len(metadata) > MAX_METADATA:
        return "OFFSET_METADATA_TOO_LARGE"
    try:
        offset = int(p.get("committed_offset", 0))
        broker.engine.commit(group, topic, index, offset, policy=COMMITS)
    except EngineError as exc:
        return from_engine(exc.code)
    broker.commit_metadata[(group, topic, index)] = p.get("committed_metadata")
    return "NONE"


def _partitions(
    broker: Broker,
    group: str,
    topics: list[dict[str, Any]] | None,
    version: int,
    stable: bool = False,
) -> list[dict[str, Any]]:
    pending = coordinator_of(broker).pending if stable else None
    if topics is None:
        committed = broker.engine.committed_all(group)
        topics = [{"name": t, "partition_indexes": sorted(ps)} for t, ps in committed.items()]
    out = []
    for t in topics:
        name = t.get("name", "")
        parts = []
        for index in t.get("partition_indexes", []):
            if pending is not None and pending(group, name, index):
                parts.append(_unstable(index))
                continue
            offset = broker.engine.committed(group, name, index)
            parts.append(
                {
                    "partition_index": index,
                    "committed_offset": -1 if offset is None else offset,
                    "committed_leader_epoch": -1,
                    "metadata": broker.commit_metadata.get((group, name, index), "")
                    if offset is not None
                    else "",
                    "error_code": 0,
                }
            )
        out.append({"name": name, "partitions": parts})
    return out


def _unstable(index: int) -> dict[str, Any]:
    """A partition whose offset an open transaction holds, asked with require_stable."""
    return {
        "partition_index": index,
        "committed_offset": -1,
        "committed_leader_epoch": -1,
        "metadata": "",
        "error_code": code("UNSTABLE_OFFSET_COMMIT"),
    }


def offset_fetch(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    body, version = request.body, request.api_version
    stable = version >= 7 and bool(body.get("require_stable", False))
    if version >= 8:
        groups = []
        for g in body.get("groups", []):
            group_id = g.get("group_id", "")
            error = consumer_groups(broker).check_fetch(
                group_id, g.get("member_id"), int(g.get("member_epoch", -1))
            )
            found = _partitions(broker, group_id, g.get("topics"), version, stable)
            groups.append(
                {
                    "group_id": group_id,
                    "topics": found if error == "NONE" else [],
                    "error_code": code(error),
                }
            )
        return {"throttle_time_ms": 0, "groups": groups}
    topics = body.get("topics")
    if topics is None and version < 2:
        topics = []
    return {
        "throttle_time_ms": 0,
        "topics": _partitions(broker, body.get("group_id", ""), topics, version, stable),
        "error_code": 0,
    }
