"""Kafka consumer groups of KIP-848 (SPEC-consumer-groups.md, area "consumer-groups"):
ConsumerGroupHeartbeat joins, heartbeats, leaves and fencing; the server-side assignment
and its reconciliation; ConsumerGroupDescribe; the member epoch in OffsetCommit and
OffsetFetch v9; and where a consumer group meets a classic one."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from conformance.suite.case import case, require
from conformance.suite.kafka.consumer_group_steps import (
    Check,
    CMember,
    all_of,
    call,
    join,
    join_body,
    leave,
    no_overlap,
    owns_all,
    until,
    version_of,
)
from conformance.suite.kafka.steps import create_topic, topic_id
from conformance.suite.kafka.verify import (
    KafkaClient,
    expect_code,
    usable,
)
from conformance.suite.shown import show
from conformance.suite.target import CaseContext


def _covers(tid: str, count: int) -> Check:
    def done(ms: Sequence[CMember]) -> bool:
        owned = set().union(*(m.partitions() for m in ms))
        return owned == all_of(tid, count) and all(m.partitions() for m in ms)

    return done


def _two_sharing(
    target: CaseContext, a: KafkaClient, b: KafkaClient, group: str, req: str
) -> tuple[str, CMember, CMember]:
    """A topic of two partitions (its id) and two members of ``group`` (joined through
    ``a`` and ``b``) that have come to share them."""
    topic = create_topic(target, a, "t", partitions=2)
    tid = topic_id(target, a, topic)
    ma = join(target, a, group, [topic], req)
    mb = join(target, b, group, [topic], req, what="second join")
    until([(a, ma), (b, mb)], _covers(tid, 2), req, "both partitions shared")
    return tid, ma, mb


@case("kafka/consumer-groups/1", "KAF-CGRP-1")
def test_a_join_is_answered_with_an_epoch_and_an_assignment(target: CaseContext) -> None:
    """A join (epoch 0) is answered error 0, an epoch above 0, an interval and an assignment.

    KAF-CGRP-1: "a ConsumerGroupHeartbeat with member epoch 0, a rebalance timeout, subscribed
    topic names and an empty list of owned partitions joins the group: it is answered error 0, a
    member epoch above 0, a heartbeat interval above 0 and an assignment (not null); in v0 a
    member that sent an empty member id is given a non-empty one, in v1 the member id the client
    chose is answered back."
    """
    req = "KAF-CGRP-1"
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t")
        v = version_of(target)
        body = join_body(target.name("g"), [topic], v)
        r = call(k, v, body, req, "join")
    expect_code(r, "error_code", "NONE", req, "join")
    require(
        r["member_epoch"] > 0,
        req,
        f"join: member epoch {r['member_epoch']}, expected > 0",
        r.at("member_epoch"),
    )
    require(
        r["heartbeat_interval_ms"] > 0,
        req,
        f"join: heartbeat interval {r['heartbeat_interval_ms']} ms, expected > 0",
        r.at("heartbeat_interval_ms"),
    )
    require(
        r["assignment"] is not None, req, "join: assignment null, expected one", r.at("assignment")
    )
    if v >= 1:
        require(
            r["member_id"] == body["member_id"],
            req,
            f"join v{v}: member id {show(r['member_id'])}, expected the client's "
            f"{show(body['member_id'])}",
            r.at("member_id"),
        )
    else:
        require(
            bool(r["member_id"]),
            req,
            "join v0 with member id '': no member id given",
            r.at("member_id"),
        )


@case("kafka/consumer-groups/2", "KAF-CGRP-2")
def test_a_lone_member_gets_every_partition(target: CaseContext) -> None:
    """A group's only member is assigned every partition of its topic.

    KAF-CGRP-2: "a group's only member, subscribed to a topic, is assigned every partition of that
    topic, in the heartbeat answers it receives while it heartbeats with its member epoch and the
    partitions it owns."
    """
    req = "KAF-CGRP-2"
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t", partitions=3)
        tid = topic_id(target, k, topic)
        m = join(target, k, target.name("g"), [topic], req)
        until([(k, m)], owns_all(tid, 3), req, "partitions [0 1 2]")


@case("kafka/consumer-groups/3", "KAF-CGRP-3")
def test_two_members_share_without_overlap(target: CaseContext) -> None:
    """Two members share the partitions, and none is ever owned by both.

    KAF-CGRP-3: "when a second member joins a group, the partitions are shared: while both
    heartbeat with their epochs and owned partitions, each is eventually assigned some and
    together all of them; and no partition is ever in the assignments of both members at once (a
    partition is given to its new owner only after the old owner's heartbeat no longer lists it)."
    """
    req = "KAF-CGRP-3"
    group = target.name("g")
    with KafkaClient(target) as a, KafkaClient(target) as b:
        topic = create_topic(target, a, "t", partitions=4)
        tid = topic_id(target, a, topic)
        ma = join(target, a, group, [topic], req)
        until([(a, ma)], owns_all(tid, 4), req, "all 4 to the first")
        mb = join(target, b, group, [topic], req, what="second join")
        no_overlap(req)([ma, mb])
        until(
            [(a, ma), (b, mb)],
            _covers(tid, 4),
            req,
            "the 4 partitions shared by both",
            each=no_overlap(req),
        )


@case("kafka/consumer-groups/4", "KAF-CGRP-4")
def test_a_member_leaves_with_epoch_minus_1(target: CaseContext) -> None:
    """A leave (-1) is answered epoch -1; the remaining member gets every partition.

    KAF-CGRP-4: "a heartbeat with member epoch -1 leaves the group: it is answered error 0 with
    member epoch -1, and the partitions of the member that left are eventually assigned to the
    members that remain."
    """
    req = "KAF-CGRP-4"
    group = target.name("g")
    with KafkaClient(target) as a, KafkaClient(target) as b:
        tid, ma, mb = _two_sharing(target, a, b, group, req)
        r = leave(b, mb, req)
        expect_code(r, "error_code", "NONE", req, "leave (epoch -1)")
        require(
            r["member_epoch"] == -1,
            req,
            f"leave: member epoch {r['member_epoch']}, expected -1",
            r.at("member_epoch"),
        )
        until([(a, ma)], owns_all(tid, 2), req, "both partitions to the one left")


@case("kafka/consumer-groups/5", "KAF-CGRP-5")
def test_an_epoch_ahead_of_the_members_is_fenced(target: CaseContext) -> None:
    """A heartbeat with an epoch the member never had is FENCED_MEMBER_EPOCH (110).

    KAF-CGRP-5: "a heartbeat from a known member with a member epoch greater than the member's, or
    smaller and not its previous epoch, is refused with FENCED_MEMBER_EPOCH (110)."
    """
    req = "KAF-CGRP-5"
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t")
        m = join(target, k, target.name("g"), [topic], req)
        body = {"group_id": m.group, "member_id": m.member_id, "member_epoch": m.epoch + 5}
        r = call(k, m.version, body, req, f"heartbeat with epoch {m.epoch + 5}")
    expect_code(
        r,
        "error_code",
        "FENCED_MEMBER_EPOCH",
        req,
        f"epoch {m.epoch + 5} (the member has {m.epoch})",
    )


@case("kafka/consumer-groups/6", "KAF-CGRP-6")
def test_an_unknown_member_is_refused(target: CaseContext) -> None:
    """A heartbeat from an unknown member is UNKNOWN_MEMBER_ID (25).

    KAF-CGRP-6: "a heartbeat with a member epoch above 0 from a member id the group does not have
    is refused with UNKNOWN_MEMBER_ID (25); for a group that does not exist, with GROUP_ID_NOT_FOUND
    (69) or UNKNOWN_MEMBER_ID (25)."
    """
    req = "KAF-CGRP-6"
    stranger = str(uuid.uuid4())
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t")
        m = join(target, k, target.name("g"), [topic], req)
        body = {"group_id": m.group, "member_id": stranger, "member_epoch": m.epoch}
        r = call(k, m.version, body, req, "heartbeat of an unknown member")
        expect_code(r, "error_code", "UNKNOWN_MEMBER_ID", req, "heartbeat of an unknown member")
        body = {"group_id": target.name("none"), "member_id": stranger, "member_epoch": 3}
        r = call(k, m.version, body, req, "heartbeat to a group never made")
    expect_code(
        r,
        "error_code",
        ["GROUP_ID_NOT_FOUND", "UNKNOWN_MEMBER_ID"],
        req,
        "heartbeat to a group never made",
    )


@case("kafka/consumer-groups/7", "KAF-CGRP-7")
def test_an_unknown_assignor_is_refused(target: CaseContext) -> None:
    """A join naming an assignor the broker lacks is UNSUPPORTED_ASSIGNOR (112).

    KAF-CGRP-7: "a heartbeat naming a server assignor the broker does not have is refused with
    UNSUPPORTED_ASSIGNOR (112)."
    """
    req = "KAF-CGRP-7"
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t")
        v = version_of(target)
        body = join_body(target.name("g"), [topic], v, assignor="no-such-assignor")
        r = call(k, v, body, req, "join with assignor 'no-such-assignor'")
    expect_code(r, "error_code", "UNSUPPORTED_ASSIGNOR", req, "assignor 'no-such-assignor'")


@case("kafka/consumer-groups/8", "KAF-CGRP-8")
def test_a_join_missing_its_fields_is_invalid(target: CaseContext) -> None:
    """Joins missing a required field, an empty group id and epoch -3 are INVALID_REQUEST (42).

    KAF-CGRP-8: "a join (member epoch 0) without a rebalance timeout (-1), with owned partitions
    null or not empty, or with neither subscribed topic names nor a regex; a heartbeat with an
    empty group id; and a member epoch below -2 are each refused with INVALID_REQUEST (42)."
    """
    req = "KAF-CGRP-8"
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t")
        tid = topic_id(target, k, topic)
        v = version_of(target)
        good = join_body(target.name("g"), [topic], v)
        for what, body in (
            ("no rebalance timeout", {**good, "rebalance_timeout_ms": -1}),
            ("owned partitions null", {**good, "topic_partitions": None}),
            (
                "owned partitions not empty",
                {**good, "topic_partitions": [{"topic_id": tid, "partitions": [0]}]},
            ),
            ("subscribed topic names null", {**good, "subscribed_topic_names": None}),
            ("group id ''", {**good, "group_id": ""}),
            ("member epoch -3", {**good, "member_epoch": -3, "member_id": str(uuid.uuid4())}),
        ):
            r = call(k, v, body, req, f"join, {what}")
            expect_code(r, "error_code", "INVALID_REQUEST", req, f"join, {what}")


@case("kafka/consumer-groups/9", "KAF-CGRP-9")
def test_v1_needs_the_clients_member_id(target: CaseContext) -> None:
    """A v1 heartbeat with an empty member id is INVALID_REQUEST (42).

    KAF-CGRP-9: "a ConsumerGroupHeartbeat v1 with an empty member id is refused with
    INVALID_REQUEST (42)."
    """
    req = "KAF-CGRP-9"
    v = usable(target, "ConsumerGroupHeartbeat", lowest=1)
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t")
        body = join_body(target.name("g"), [topic], v, member_id="")
        r = call(k, v, body, req, "join with member id ''")
    expect_code(r, "error_code", "INVALID_REQUEST", req, f"v{v} join with member id ''")


@case("kafka/consumer-groups/10", "KAF-CGRP-10")
def test_a_static_member_comes_back_to_its_partitions(target: CaseContext) -> None:
    """A static member that left with -2 comes back to its partitions; its instance id
    held by a live member is UNRELEASED_INSTANCE_ID (111).

    KAF-CGRP-10: "a static member (with an instance id) that leaves with member epoch -2 keeps its
    place: a join with the same instance id and a new member id is answered the partitions the
    member had; a join with an instance id that a member still holds (it did not leave with -2) is
    refused with UNRELEASED_INSTANCE_ID (111)."
    """
    req = "KAF-CGRP-10"
    group, instance = target.name("g"), target.name("instance")
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t", partitions=2)
        tid = topic_id(target, k, topic)
        m = join(target, k, group, [topic], req, instance_id=instance)
        until([(k, m)], owns_all(tid, 2), req, "both partitions")
        v = m.version
        twin = join_body(group, [topic], v, instance_id=instance, member_id=str(uuid.uuid4()))
        r = call(k, v, twin, req, "join with a held instance id")
        expect_code(r, "error_code", "UNRELEASED_INSTANCE_ID", req, "join with a held instance id")
        r = leave(k, m, req, epoch=-2, what="static leave (epoch -2)")
        expect_code(r, "error_code", "NONE", req, "static leave (epoch -2)")
        back = join(
            target,
            k,
            group,
            [topic],
            req,
            what="rejoin of the instance",
            instance_id=instance,
            member_id=twin["member_id"],
        )
        until([(k, back)], owns_all(tid, 2), req, "the instance's partitions back")


@case("kafka/consumer-groups/11", "KAF-CGRP-11")
def test_a_silent_member_is_removed(target: CaseContext) -> None:
    """A member that stops heartbeating is removed after its session; the other gets its partitions.

    KAF-CGRP-11: "a member that stops heartbeating is removed when its session times out, and its
    partitions are assigned to the members that remain."
    """
    req = "KAF-CGRP-11"
    group = target.name("g")
    with KafkaClient(target) as a, KafkaClient(target) as b:
        tid, ma, _mb = _two_sharing(target, a, b, group, req)
        # b falls silent; Kafka's session timeout is at most 60 s unless configured otherwise
        until(
            [(a, ma)],
            owns_all(tid, 2),
            req,
            "both partitions to the member still heartbeating",
            deadline_s=65.0,
        )


@case("kafka/consumer-groups/17", "KAF-CGRP-17")
def test_the_previous_epoch_is_accepted_after_a_lost_answer(target: CaseContext) -> None:
    """A heartbeat with the previous epoch and owned partitions inside the assignment is
    accepted (the answer that raised the epoch was lost).

    KAF-CGRP-17: "a heartbeat from a member with its previous member epoch, listing as owned only
    partitions of its current assignment (the answer that raised its epoch was lost), is
    accepted: error 0 and the member's current epoch."
    """
    req = "KAF-CGRP-17"
    group = target.name("g")
    with KafkaClient(target) as a, KafkaClient(target) as b:
        _tid, ma, _mb = _two_sharing(target, a, b, group, req)
        until([(a, ma)], lambda ms: ms[0].previous > 0, req, "a member epoch raised after the join")
        body = {
            "group_id": group,
            "member_id": ma.member_id,
            "member_epoch": ma.previous,
            "topic_partitions": ma.wire(),
        }
        what = f"heartbeat with the previous epoch {ma.previous} (current {ma.epoch})"
        r = call(a, ma.version, body, req, what)
    expect_code(r, "error_code", "NONE", req, what)
    require(
        r["member_epoch"] == ma.epoch,
        req,
        f"{what}: member epoch {r['member_epoch']}, expected the current {ma.epoch}",
        r.at("member_epoch"),
    )
