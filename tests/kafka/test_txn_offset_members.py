"""TxnOffsetCommit checked against its group, in process: Kafka's
``OffsetMetadataManager.validateTransactionalOffsetCommit`` with ``ClassicGroup`` and
``ConsumerGroup.validateOffsetCommit`` (handlers/txn_offsets.py), after the transaction's
own check; and the quirks that break KAF-TXN-19 and KAF-TXN-20."""

from __future__ import annotations

import uuid
from typing import Any

from conformance.protocols.kafka import quirks_transactions as qt
from conformance.protocols.kafka.codec import Request
from conformance.protocols.kafka.context import Broker
from conformance.protocols.kafka.errors import NAMES
from conformance.protocols.kafka.handlers import HANDLERS
from tests.kafka.test_transactions import TOPIC, Clock, _broker, call, end, init


def member(b: Broker, clock: Clock, group: str = "g", instance: str | None = None) -> Any:
    """A new member of ``group`` (static with ``instance``): its JoinGroup result, not
    synced (the group is CompletingRebalance)."""
    ticket = b.coordinator.join(
        group, "", protocol_type="consumer", protocols=[("range", b"m")],
        session_timeout_ms=60_000, rebalance_timeout_ms=60_000, group_instance_id=instance,
    )  # fmt: skip
    clock.now += 5  # past the join window
    joined = ticket.result()
    assert joined is not None and joined.error == "NONE"
    return joined


def synced(b: Broker, joined: Any, group: str = "g") -> None:
    got = b.coordinator.sync(group, joined.member_id, joined.generation, assignments={}).result()
    assert got is not None and got.error == "NONE"


def in_txn(b: Broker, group: str = "g") -> int:
    """A transaction of t1 with ``group``'s offsets added: the producer id (epoch 0)."""
    pid = int(init(b)["producer_id"])
    body = {"transactional_id": "t1", "producer_id": pid, "producer_epoch": 0, "group_id": group}
    assert call(b, 25, 3, body)["error_code"] == 0
    return pid


def body(pid: int, group: str = "g", epoch: int = 0, offset: int = 7, **named: Any) -> Any:
    return {
        "transactional_id": "t1", "group_id": group, "producer_id": pid, "producer_epoch": epoch,
        "generation_id": -1, "member_id": "", "group_instance_id": None, **named,
        "topics": [{"name": TOPIC,
                    "partitions": [{"partition_index": 0, "committed_offset": offset}]}],
    }  # fmt: skip


def commit(b: Broker, pid: int, version: int = 3, **kw: Any) -> str:
    return NAMES[call(b, 28, version, body(pid, **kw))["topics"][0]["partitions"][0]["error_code"]]


def test_a_named_member_is_checked_as_kafka_checks_a_transactional_commit() -> None:
    clock = Clock()
    b = _broker(clock)
    m = member(b, clock, instance="i1")
    synced(b, m)
    pid = in_txn(b)
    gen, mid = m.generation, m.member_id
    assert commit(b, pid, member_id="nobody", generation_id=gen) == "UNKNOWN_MEMBER_ID"
    assert commit(b, pid, member_id=mid, generation_id=gen, group_instance_id="i2") == (
        "UNKNOWN_MEMBER_ID"
    )
    assert commit(b, pid, member_id="nobody", generation_id=gen, group_instance_id="i1") == (
        "FENCED_INSTANCE_ID"
    )
    assert commit(b, pid, member_id=mid, generation_id=gen + 1) == "ILLEGAL_GENERATION"
    assert commit(b, pid, member_id=mid, generation_id=-1) == "ILLEGAL_GENERATION"
    assert commit(b, pid, offset=3, member_id=mid, generation_id=gen, group_instance_id="i1") == (
        "NONE"
    )
    assert commit(b, pid, offset=9, member_id="nobody", generation_id=gen) == "UNKNOWN_MEMBER_ID"
    assert end(b, "t1", pid, 0, True) == "NONE"
    assert b.engine.committed("g", TOPIC, 0) == 3  # the refused 9 was not stored


def test_no_member_is_taken_with_members_and_no_rebalance_error_is_given() -> None:
    clock = Clock()
    b = _broker(clock)
    m = member(b, clock)  # CompletingRebalance: OffsetCommit would be REBALANCE_IN_PROGRESS
    assert b.coordinator.check_commit("g", m.member_id, m.generation) == "REBALANCE_IN_PROGRESS"
    assert b.coordinator.check_commit("g", "", -1) == "UNKNOWN_MEMBER_ID"
    pid = in_txn(b)
    assert commit(b, pid, member_id=m.member_id, generation_id=m.generation) == "NONE"
    assert commit(b, pid) == "NONE"
    assert commit(b, pid, version=2) == "NONE"  # v0-2 name no member
    assert end(b, "t1", pid, 0, True) == "NONE"
    assert b.engine.committed("g", TOPIC, 0) == 7


def test_a_group_that_does_not_exist() -> None:
    b = _broker()
    pid = in_txn(b, "new")
    assert commit(b, pid, group="new", generation_id=0, member_id="m") == "ILLEGAL_GENERATION"
    assert b.coordinator.describe("new").state == "Dead"  # not made
    assert commit(b, pid, group="new", member_id="m", group_instance_id="i") == "NONE"
    assert b.coordinator.describe("new").state == "Empty"  # a simple group, as Kafka makes


def test_the_transaction_is_checked_before_the_member() -> None:
    clock = Clock()
    b = _broker(clock)
    synced(b, member(b, clock))
    pid = in_txn(b)
    assert commit(b, pid, epoch=1, member_id="nobody", generation_id=1) == "INVALID_PRODUCER_EPOCH"
    assert commit(b, pid, group="", member_id="nobody") == "INVALID_GROUP_ID"


def test_a_consumer_group_member_is_checked_by_its_epoch() -> None:
    b = _broker()
    mid = str(uuid.uuid4())
    hb = {"group_id": "cg", "member_id": mid, "member_epoch": 0, "rebalance_timeout_ms": 10_000,
          "subscribed_topic_names": [TOPIC], "topic_partitions": []}  # fmt: skip
    epoch = call(b, 68, 1, hb)["member_epoch"]
    pid = in_txn(b, "cg")
    assert commit(b, pid, group="cg", member_id=mid, generation_id=epoch + 1) == (
        "ILLEGAL_GENERATION"
    )
    assert commit(b, pid, group="cg", member_id="nobody", generation_id=epoch) == (
        "UNKNOWN_MEMBER_ID"
    )
    assert commit(b, pid, group="cg") == "UNKNOWN_MEMBER_ID"  # no member: not in this group type
    assert commit(b, pid, group="cg", member_id=mid, generation_id=epoch) == "NONE"  # no v9 rule


def quirked(quirk: str, b: Broker, version: int, pid: int, **kw: Any) -> str:
    request = Request(28, version, 1, "test", body(pid, **kw))
    seen = qt.before((quirk,), request)
    assert isinstance(seen, Request)
    served = HANDLERS[28](b, seen, "peer")
    assert isinstance(served, dict)
    answer = qt.after((quirk,), seen, served)
    return NAMES[answer["topics"][0]["partitions"][0]["error_code"]]


def test_the_quirk_member_unchecked_takes_any_member() -> None:
    clock = Clock()
    b = _broker(clock)
    synced(b, member(b, clock))
    pid = in_txn(b)
    q = "txn-offset-commit-member-unchecked"
    assert quirked(q, b, 3, pid, member_id="nobody", generation_id=1) == "NONE"
    assert commit(b, pid, member_id="nobody", generation_id=1) == "UNKNOWN_MEMBER_ID"


def test_the_quirk_needs_a_member_refuses_no_member_only_where_members_are() -> None:
    clock = Clock()
    b = _broker(clock)
    synced(b, member(b, clock))
    pid = in_txn(b)
    q = "txn-offset-commit-needs-a-member"
    assert quirked(q, b, 3, pid) == "UNKNOWN_MEMBER_ID"
    assert quirked(q, b, 2, pid) == "NONE"  # v0-2 name no member at all
    call(b, 25, 3, {"transactional_id": "t1", "producer_id": pid, "producer_epoch": 0,
                    "group_id": "empty"})  # fmt: skip
    assert quirked(q, b, 3, pid, group="empty") == "NONE"  # a group with no member
