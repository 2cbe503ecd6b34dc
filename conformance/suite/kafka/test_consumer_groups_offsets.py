"""Kafka consumer groups of KIP-848 (SPEC-consumer-groups.md, area "consumer-groups"),
second part: ConsumerGroupDescribe; where a consumer group meets a classic one; the
member epoch in OffsetCommit and OffsetFetch v9.  Joins, heartbeats and the assignment
are in :mod:`.test_consumer_groups`."""

from __future__ import annotations

import uuid

from conformance.suite.case import case, require
from conformance.suite.kafka.consumer_group_steps import (
    all_of,
    call,
    join,
    join_body,
    owns_all,
    until,
    version_of,
)
from conformance.suite.kafka.group_steps import join_group
from conformance.suite.kafka.steps import create_topic, topic_id
from conformance.suite.kafka.verify import KafkaClient, expect_code, find, first, usable
from conformance.suite.shown import show
from conformance.suite.target import CaseContext


@case("kafka/consumer-groups/12", "KAF-CGRP-12")
def test_describe_reports_the_group(target: CaseContext) -> None:
    """ConsumerGroupDescribe reports a group and its members; an unknown or classic group
    is GROUP_ID_NOT_FOUND (69).

    KAF-CGRP-12: "ConsumerGroupDescribe reports a consumer group with error 0, its state (Empty,
    Assigning, Reconciling or Stable), its group epoch and each member with its member id, member
    epoch, subscribed topic names and current assignment; a group id that is not a consumer group
    (unknown, or a classic group) is answered GROUP_ID_NOT_FOUND (69)."
    """
    req = "KAF-CGRP-12"
    group, classic, unknown = target.name("g"), target.name("classic"), target.name("none")
    dv = usable(target, "ConsumerGroupDescribe")
    with KafkaClient(target) as k, KafkaClient(target) as c:
        topic = create_topic(target, k, "t")
        tid = topic_id(target, k, topic)
        m = join(target, k, group, [topic], req)
        until([(k, m)], owns_all(tid, 1), req, "partition 0")
        join_group(target, c, classic, requirement=req)
        what = f"ConsumerGroupDescribe v{dv}"
        groups = k.call(
            "ConsumerGroupDescribe", dv, {"group_ids": [group, classic, unknown]}, req, what
        )["groups"]
    mine = find(groups, "group_id", group, f"group {group}", req, what)
    expect_code(mine, "error_code", "NONE", req, f"{what} of {group}")
    require(
        mine["group_state"] in ("Empty", "Assigning", "Reconciling", "Stable")
        and mine["group_epoch"] > 0,
        req,
        f"{what}: state {show(mine['group_state'])}, group epoch {mine['group_epoch']}; expected a "
        "consumer group state and an epoch above 0",
        mine.at("group_state") + mine.at("group_epoch"),
    )
    member = find(mine["members"], "member_id", m.member_id, f"member {m.member_id}", req, what)
    got = {
        (str(tp["topic_id"]), p)
        for tp in member["assignment"]["topic_partitions"]
        for p in tp["partitions"]
    }
    require(
        member["member_epoch"] == m.epoch
        and list(member["subscribed_topic_names"]) == [topic]
        and got == all_of(tid, 1),
        req,
        f"{what}: member epoch {member['member_epoch']}, "
        f"topics {list(member['subscribed_topic_names'])}, "
        f"{len(got)} partition(s) assigned; expected epoch {m.epoch}, [{topic}], partition 0",
        member.at(),
    )
    for other in (classic, unknown):
        g = find(groups, "group_id", other, f"group {other}", req, what)
        expect_code(
            g, "error_code", "GROUP_ID_NOT_FOUND", req, f"{what} of {other} (not a consumer group)"
        )


@case("kafka/consumer-groups/13", "KAF-CGRP-13")
def test_a_classic_group_is_not_joined(target: CaseContext) -> None:
    """A join to a classic group with members (not of type consumer) is GROUP_ID_NOT_FOUND (69).

    KAF-CGRP-13: "a join (member epoch 0) to a group id held by a classic group with members that
    does not use the consumer protocol type is refused with GROUP_ID_NOT_FOUND (69)."
    """
    req = "KAF-CGRP-13"
    group = target.name("g")
    with KafkaClient(target) as k, KafkaClient(target) as c:
        topic = create_topic(target, k, "t")
        join_group(target, c, group, protocol_type="connect", requirement=req)
        v = version_of(target)
        r = call(k, v, join_body(group, [topic], v), req, "join to a classic group")
    expect_code(r, "error_code", "GROUP_ID_NOT_FOUND", req, "join to a classic group with members")


def _commit_body(group: str, member: str, epoch: int, topic: str, offset: int) -> dict[str, object]:
    part = {"partition_index": 0, "committed_offset": offset, "committed_metadata": None}
    return {
        "group_id": group,
        "generation_id_or_member_epoch": epoch,
        "member_id": member,
        "group_instance_id": None,
        "topics": [{"name": topic, "partitions": [part]}],
    }


def _fetch_body(group: str, member: str | None, epoch: int, topic: str) -> dict[str, object]:
    entry = {
        "group_id": group,
        "member_id": member,
        "member_epoch": epoch,
        "topics": [{"name": topic, "partition_indexes": [0]}],
    }
    return {"groups": [entry], "require_stable": False}


@case("kafka/consumer-groups/14", "KAF-CGRP-14")
def test_an_empty_classic_group_becomes_a_consumer_group(target: CaseContext) -> None:
    """A join takes over an empty classic group; its committed offsets stay.

    KAF-CGRP-14: "an empty classic group (one holding only committed offsets) becomes a consumer
    group when a member joins with member epoch 0, and its committed offsets stay readable."
    """
    req = "KAF-CGRP-14"
    group = target.name("g")
    cv = usable(target, "OffsetCommit", lowest=9)
    fv = usable(target, "OffsetFetch", lowest=9)
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t")
        r = k.call("OffsetCommit", cv, _commit_body(group, "", -1, topic, 7), req, "simple commit")
        part = first(
            first(r["topics"], "topic", req, "simple commit")["partitions"],
            "partition",
            req,
            "simple commit",
        )
        expect_code(part, "error_code", "NONE", req, "simple commit (member '' epoch -1)")
        m = join(target, k, group, [topic], req, what="join to the empty classic group")
        r = k.call(
            "OffsetFetch", fv, _fetch_body(group, m.member_id, m.epoch, topic), req, "OffsetFetch"
        )
    g = first(r["groups"], "group", req, "OffsetFetch")
    expect_code(g, "error_code", "NONE", req, "OffsetFetch by the member")
    p = first(
        first(g["topics"], "topic", req, "OffsetFetch")["partitions"],
        "partition",
        req,
        "OffsetFetch",
    )
    require(
        p["committed_offset"] == 7,
        req,
        f"OffsetFetch: offset {p['committed_offset']}, expected 7 (committed before the join)",
        p.at("committed_offset"),
    )


@case("kafka/consumer-groups/15", "KAF-CGRP-15")
def test_a_commit_carries_the_member_epoch(target: CaseContext) -> None:
    """OffsetCommit v9 from a member: its epoch is stored, another epoch is STALE_MEMBER_EPOCH
    (113), an unknown member UNKNOWN_MEMBER_ID (25).

    KAF-CGRP-15: "an OffsetCommit (v9) to a consumer group from a member with its current member
    epoch is stored (error 0); with another epoch it is refused per partition with
    STALE_MEMBER_EPOCH (113); from a member id the group does not have, with UNKNOWN_MEMBER_ID
    (25)."
    """
    req = "KAF-CGRP-15"
    cv = usable(target, "OffsetCommit", lowest=9)
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t")
        m = join(target, k, target.name("g"), [topic], req)
        for what, member, epoch, want in (
            ("current epoch", m.member_id, m.epoch, "NONE"),
            ("a stale epoch", m.member_id, m.epoch + 7, "STALE_MEMBER_EPOCH"),
            ("an unknown member", str(uuid.uuid4()), m.epoch, "UNKNOWN_MEMBER_ID"),
        ):
            r = k.call(
                "OffsetCommit",
                cv,
                _commit_body(m.group, member, epoch, topic, 3),
                req,
                f"OffsetCommit v{cv}, {what}",
            )
            part = first(
                first(r["topics"], "topic", req, what)["partitions"], "partition", req, what
            )
            expect_code(part, "error_code", want, req, f"OffsetCommit v{cv} with {what}")


@case("kafka/consumer-groups/16", "KAF-CGRP-16")
def test_a_fetch_with_a_stale_epoch_is_refused(target: CaseContext) -> None:
    """OffsetFetch v9 with a stale member epoch is STALE_MEMBER_EPOCH (113) for the group.

    KAF-CGRP-16: "an OffsetFetch (v9) for a consumer group naming a member and a member epoch other
    than the member's is refused for the group with STALE_MEMBER_EPOCH (113); with the current
    epoch it answers the committed offsets."
    """
    req = "KAF-CGRP-16"
    fv = usable(target, "OffsetFetch", lowest=9)
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t")
        m = join(target, k, target.name("g"), [topic], req)
        stale = k.call(
            "OffsetFetch",
            fv,
            _fetch_body(m.group, m.member_id, m.epoch + 7, topic),
            req,
            "OffsetFetch, stale epoch",
        )
        fresh = k.call(
            "OffsetFetch",
            fv,
            _fetch_body(m.group, m.member_id, m.epoch, topic),
            req,
            "OffsetFetch, current epoch",
        )
    g = first(stale["groups"], "group", req, "OffsetFetch, stale epoch")
    expect_code(
        g, "error_code", "STALE_MEMBER_EPOCH", req, f"OffsetFetch v{fv} with epoch {m.epoch + 7}"
    )
    g = first(fresh["groups"], "group", req, "OffsetFetch, current epoch")
    expect_code(g, "error_code", "NONE", req, f"OffsetFetch v{fv} with the current epoch {m.epoch}")


@case("kafka/consumer-groups/18", "KAF-CGRP-18")
def test_a_classic_join_to_a_consumer_group_is_refused(target: CaseContext) -> None:
    """A classic JoinGroup (type connect) to a consumer group with members is
    INCONSISTENT_GROUP_PROTOCOL (23).

    KAF-CGRP-18: "a classic JoinGroup of a protocol type other than "consumer" to a group id held by
    a consumer group with members is refused with INCONSISTENT_GROUP_PROTOCOL (23)."
    """
    req = "KAF-CGRP-18"
    group = target.name("g")
    jv = usable(target, "JoinGroup")
    with KafkaClient(target) as k, KafkaClient(target) as c:
        topic = create_topic(target, k, "t")
        join(target, k, group, [topic], req)
        body = {
            "group_id": group,
            "session_timeout_ms": 10_000,
            "rebalance_timeout_ms": 10_000,
            "member_id": "",
            "group_instance_id": None,
            "protocol_type": "connect",
            "protocols": [{"name": "x", "metadata": b""}],
            "reason": None,
        }
        what = f"JoinGroup v{jv} (type connect) to a consumer group"
        r = c.call("JoinGroup", jv, body, req, what, timeout=target.timeout + 5)
    expect_code(r, "error_code", "INCONSISTENT_GROUP_PROTOCOL", req, what)


@case("kafka/consumer-groups/19", "KAF-CGRP-19")
def test_list_groups_lists_a_consumer_group_by_type(target: CaseContext) -> None:
    """ListGroups v5 lists a consumer group as type consumer; the filter ["consumer"]
    leaves classic groups out.

    KAF-CGRP-19: "ListGroups lists a consumer group with group type "consumer" (v5) and protocol
    type "consumer"; with the v5 types filter ["consumer"] it lists no classic group."
    """
    req = "KAF-CGRP-19"
    group, classic = target.name("g"), target.name("classic")
    lv = usable(target, "ListGroups", lowest=5)
    with KafkaClient(target) as k, KafkaClient(target) as c:
        topic = create_topic(target, k, "t")
        join(target, k, group, [topic], req)
        join_group(target, c, classic, requirement=req)
        what = f"ListGroups v{lv}"
        every = k.call("ListGroups", lv, {}, req, what)["groups"]
        only = k.call("ListGroups", lv, {"types_filter": ["consumer"]}, req, f"{what} ['consumer']")
    mine = find(every, "group_id", group, f"group {group}", req, what)
    require(
        (mine["group_type"], mine["protocol_type"]) == ("consumer", "consumer"),
        req,
        f"{what}: {group} listed with type {show(mine['group_type'])}, protocol type "
        f"{show(mine['protocol_type'])}; expected 'consumer', 'consumer'",
        mine.at("group_type") + mine.at("protocol_type"),
    )
    listed = [g["group_id"] for g in only["groups"]]
    require(
        group in listed and classic not in listed,
        req,
        f"{what} with types ['consumer']: {group} {'in' if group in listed else 'not in'} the "
        f"list, classic group {classic} {'in' if classic in listed else 'not in'} it; expected "
        "the consumer group alone of the two",
        only["groups"].at(),
    )
