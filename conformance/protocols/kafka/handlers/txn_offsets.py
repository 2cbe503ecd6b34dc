"""TxnOffsetCommit (key 28): a transactional producer's offsets for a consumer group, kept
in its transaction until EndTxn.

Behavior / version notes (Apache Kafka 4.x: ``KafkaApis.handleTxnOffsetCommitRequest``,
``GroupCoordinatorService.commitTransactionalOffsets``, the transactional write of
``CoordinatorRuntime.scheduleTransactionalWriteOperation`` and
``OffsetMetadataManager.commitTransactionalOffset``), in this order:

* a topic or partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION; the other
  partitions share one answer, worked out as follows;
* an empty group id is INVALID_GROUP_ID;
* the transaction is checked first (the offsets are a transactional write to the group's
  offsets partition, verified as a Produce is): an unknown transactional id or another
  producer id INVALID_PRODUCER_ID_MAPPING, another epoch INVALID_PRODUCER_EPOCH (the
  coordinator's PRODUCER_FENCED, as ``AddPartitionsToTxnManager`` maps it), a group whose
  offsets AddOffsetsToTxn did not add TRANSACTION_ABORTABLE from v4 and INVALID_TXN_STATE
  in v0-3 (``txnOffsetCommitRequestVersionToTransactionSupportedOperation``); from v5
  (transactions V2, KIP-890 part 2) the broker adds the group itself, as AddOffsetsToTxn
  would (``ADD_PARTITION``);
* then the group and member, as ``OffsetMetadataManager.validateTransactionalOffsetCommit``
  does (:func:`check_member`; v0-2 carry no member, so they commit as the form with none);
* the offsets then wait in the transaction: they become the group's committed offsets
  (what OffsetFetch returns) only at EndTxn(commit); an abort drops them.  v0-1 would see
  COORDINATOR_LOAD_IN_PROGRESS as COORDINATOR_NOT_AVAILABLE; this broker never loads.
"""

from __future__ import annotations

from typing import Any

from conformance.protocols.kafka.codec import Request
from conformance.protocols.kafka.context import Broker
from conformance.protocols.kafka.coordinator_state import DEAD, EMPTY
from conformance.protocols.kafka.errors import code
from conformance.protocols.kafka.handlers.consumer_groups import consumer_groups
from conformance.protocols.kafka.transaction_coordinator import coordinator_of

ADD_FROM = 5
"""The first TxnOffsetCommit version whose group the broker adds to the transaction."""
ABORTABLE_FROM = 4
"""The first TxnOffsetCommit version that may answer TRANSACTION_ABORTABLE (KIP-890)."""


def check_member(
    broker: Broker, group_id: str, member_id: str, instance_id: str | None, generation: int
) -> str:
    """May this member commit offsets in a transaction?  NONE or the error, as Kafka's
    ``OffsetMetadataManager.validateTransactionalOffsetCommit`` decides:

    * a group that does not exist: generation below 0 makes it (a simple group, Empty) and
      commits, generation 0 or more is ILLEGAL_GENERATION;
    * a classic group (``ClassicGroup.validateOffsetCommit`` with ``isTransactional``):
      generation below 0 commits while the group is Empty; a member id, a group instance
      id or a generation of 0 or more names a member, which must be there: an instance id
      no member has is UNKNOWN_MEMBER_ID, one another member id holds FENCED_INSTANCE_ID
      (``validateMember``), an unknown member id UNKNOWN_MEMBER_ID; then another generation
      is ILLEGAL_GENERATION.  With none of them (generation -1, member id "", no instance
      id) the commit is accepted whatever the group's state: unlike OffsetCommit, no
      UNKNOWN_MEMBER_ID for a group with members, and no REBALANCE_IN_PROGRESS while it
      completes a rebalance;
    * a consumer group (KIP-848, ``ConsumerGroup.validateOffsetCommit``): member epoch
      below 0 commits while the group has no member; else the member must be there
      (UNKNOWN_MEMBER_ID) at its epoch (STALE_MEMBER_EPOCH, answered ILLEGAL_GENERATION);
      no version rule for a transactional commit.
    """
    modern = consumer_groups(broker)
    if modern.is_consumer(group_id):
        error = modern.check_commit(group_id, member_id, generation, version=9)
        return "ILLEGAL_GENERATION" if error == "STALE_MEMBER_EPOCH" else error
    group = broker.coordinator.describe(group_id)
    if group.state == DEAD:  # the coordinator keeps no Dead group: there is none
        if generation >= 0:
            return "ILLEGAL_GENERATION"
        return broker.coordinator.check_commit(group_id, "", -1)  # a simple group, Empty
    if generation < 0 and group.state == EMPTY:
        return "NONE"
    if generation < 0 and not member_id and instance_id is None:
        return "NONE"
    if instance_id is not None:
        holders = [m.member_id for m in group.members if m.group_instance_id == instance_id]
        if not holders:
            return "UNKNOWN_MEMBER_ID"
        if holders[-1] != member_id:
            return "FENCED_INSTANCE_ID"
    if member_id not in {m.member_id for m in group.members}:
        return "UNKNOWN_MEMBER_ID"
    error = broker.coordinator.check_commit(group_id, member_id, generation)
    return "NONE" if error == "REBALANCE_IN_PROGRESS" else error  # not for transactions


def _verdict(verdict: str, version: int) -> str:
    """The coordinator's verdict as a TxnOffsetCommit answers it (``AddPartitionsToTxnManager``)."""
    if verdict == "PRODUCER_FENCED":
        return "INVALID_PRODUCER_EPOCH"
    if verdict == "TRANSACTION_ABORTABLE" and version < ABORTABLE_FROM:
        return "INVALID_TXN_STATE"
    return verdict


def _commit(
    broker: Broker, request: Request, offsets: dict[tuple[str, int], tuple[int, str | None]]
) -> str:
    """The answer every existing partition of the request gets."""
    body, version = request.body, request.api_version
    group = body.get("group_id", "")
    if group == "":
        return "INVALID_GROUP_ID"
    tid = body.get("transactional_id", "")
    tx = coordinator_of(broker)
    verdict = tx.offsets_check(
        tid,
        group,
        int(body.get("producer_id", -1)),
        int(body.get("producer_epoch", -1)),
        add=version >= ADD_FROM,
    )
    if verdict != "NONE":
        return _verdict(verdict, version)
    error = check_member(
        broker,
        group,
        body.get("member_id", ""),
        body.get("group_instance_id"),
        int(body.get("generation_id", -1)),
    )
    if error == "NONE":
        tx.store_offsets(tid, group, offsets)
    return error


def txn_offset_commit(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    errors: dict[tuple[str, int], str] = {}
    offsets: dict[tuple[str, int], tuple[int, str | None]] = {}
    for t in request.body.get("topics", []):
        name = t.get("name", "")
        for p in t.get("partitions", []):
            index = int(p.get("partition_index", 0))
            if broker.engine.has_topic(name) and 0 <= index < broker.engine.topic(name).partitions:
                offsets[(name, index)] = (
                    int(p.get("committed_offset", 0)),
                    p.get("committed_metadata"),
                )
            else:
                errors[(name, index)] = "UNKNOWN_TOPIC_OR_PARTITION"
    if offsets:
        errors.update(dict.fromkeys(offsets, _commit(broker, request, offsets)))
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, index), error in errors.items():
        by_topic.setdefault(topic, []).append({"partition_index": index, "error_code": code(error)})
    topics = [{"name": t, "partitions": parts} for t, parts in by_topic.items()]
    return {"throttle_time_ms": 0, "topics": topics}
