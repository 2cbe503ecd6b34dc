"""Kafka consumer groups (SPEC.md, area "groups"): how each group request is refused or
answered on its own (a join that does not fit, an unknown member, a group described or listed).

The rebalance itself (members, generations, leaders, sessions) is in :mod:`.test_groups`."""

from __future__ import annotations

from typing import Any

from conformance.evidence import Node, combined
from conformance.protocols.kafka.errors import CODES
from conformance.suite.case import case, require
from conformance.suite.kafka.group_steps import (
    coordinator_ready,
    heartbeat,
    join_body,
    leave_group,
    member_id_required,
    settle,
)
from conformance.suite.kafka.verify import (
    KafkaClient,
    at_every_version,
    expect_code,
    find,
    name_of,
    need,
    usable,
)
from conformance.suite.shown import show, show_all
from conformance.suite.target import CaseContext

REBALANCE = "REBALANCE_IN_PROGRESS"


@case("kafka/groups/8", "KAF-GROUP-8")
def test_an_inconsistent_protocol_is_refused(target: CaseContext) -> None:
    """A join whose protocol type or protocols do not match the group's is
    INCONSISTENT_GROUP_PROTOCOL (23).

    KAF-GROUP-8: "a JoinGroup whose protocol type differs from the group's, or whose protocols share
    none with the group's, is refused with INCONSISTENT_GROUP_PROTOCOL (23)."
    """
    group = target.name("g")
    v = usable(target, "JoinGroup")
    with KafkaClient(target) as a, KafkaClient(target) as b:
        settle(target, a, group)
        for what, body in (
            ("protocol type 'connect'", join_body(group, protocol_type="connect")),
            ("protocol 'roundrobin' only", join_body(group, protocol="roundrobin")),
        ):
            r = b.call(
                "JoinGroup",
                v,
                body,
                "KAF-GROUP-8",
                f"JoinGroup with {what}",
                timeout=target.timeout + 5,
            )
            r = member_id_required(target, b, v, r, body, "KAF-GROUP-8")
            expect_code(
                r,
                "error_code",
                "INCONSISTENT_GROUP_PROTOCOL",
                "KAF-GROUP-8",
                f"JoinGroup with {what}",
            )


def _join_answer(
    target: CaseContext, k: KafkaClient, body: dict[str, Any], requirement: str, what: str
) -> Node:
    """The error a join gets, after answering MEMBER_ID_REQUIRED with the id it gives (a
    broker may ask for the id before it checks the rest)."""
    v = usable(target, "JoinGroup")
    wait = target.timeout + 5
    coordinator_ready(target, k, body["group_id"] or target.name("g"))
    r = k.call("JoinGroup", v, body, requirement, what, timeout=wait)
    return member_id_required(target, k, v, r, body, requirement, wait)


@case("kafka/groups/9", "KAF-GROUP-9")
def test_a_session_timeout_of_1_ms_is_refused(target: CaseContext) -> None:
    """A session timeout outside the allowed range is INVALID_SESSION_TIMEOUT (26).

    KAF-GROUP-9: "a JoinGroup whose session timeout is outside the broker's allowed range (a session
    timeout of 1 ms included) is refused with INVALID_SESSION_TIMEOUT (26)."
    """
    with KafkaClient(target) as k:
        body = join_body(target.name("g"), session_ms=1)
        got = _join_answer(target, k, body, "KAF-GROUP-9", "JoinGroup, session timeout 1 ms")
    expect_code(got, "error_code", "INVALID_SESSION_TIMEOUT", "KAF-GROUP-9", "session timeout 1 ms")


@case("kafka/groups/10", "KAF-GROUP-10")
@at_every_version("Heartbeat")
def test_a_current_members_heartbeat_is_ok(target: CaseContext, version: int) -> None:
    """A heartbeat from a member of a settled group, current generation, is error 0.

    KAF-GROUP-10: "a heartbeat from a member of a settled group, with the group's current
    generation, is answered with error 0."
    """
    need(target, "Heartbeat", version)
    with KafkaClient(target) as k:
        m = settle(target, k, target.name("g"))
        got = heartbeat(target, k, m, version=version)
    expect_code(got, "error_code", "NONE", "KAF-GROUP-10", f"Heartbeat v{version}")


@case("kafka/groups/11", "KAF-GROUP-11")
def test_an_empty_group_id_is_invalid(target: CaseContext) -> None:
    """A JoinGroup with an empty group id is INVALID_GROUP_ID (24).

    KAF-GROUP-11: "a JoinGroup with an empty group id is refused with INVALID_GROUP_ID (24)."
    """
    with KafkaClient(target) as k:
        got = _join_answer(target, k, join_body(""), "KAF-GROUP-11", "JoinGroup, group id ''")
    expect_code(got, "error_code", "INVALID_GROUP_ID", "KAF-GROUP-11", "group id ''")


@case("kafka/groups/12", "KAF-GROUP-12")
def test_describe_and_list_groups_report_a_settled_group(target: CaseContext) -> None:
    """DescribeGroups reports a settled group as Stable with its members; ListGroups lists
    it; an unknown group is Dead or GROUP_ID_NOT_FOUND.

    KAF-GROUP-12: "DescribeGroups reports a settled group as Stable, with its protocol type, its
    chosen protocol and every member; ListGroups lists the group; an unknown group is reported Dead
    (or with GROUP_ID_NOT_FOUND (69) from v6)."
    """
    group, unknown = target.name("g"), target.name("none")
    dv, lv = usable(target, "DescribeGroups"), usable(target, "ListGroups")
    with KafkaClient(target) as k:
        m = settle(target, k, group)
        described = f"DescribeGroups v{dv}"
        groups = k.call(
            "DescribeGroups", dv, {"groups": [group, unknown]}, "KAF-GROUP-12", described
        )["groups"]
        listed = k.call("ListGroups", lv, {}, "KAF-GROUP-12", f"ListGroups v{lv}")["groups"]
    mine = find(groups, "group_id", group, f"group {group}", "KAF-GROUP-12", described)
    fields = ("group_state", "protocol_type", "protocol_data")
    wanted = ("Stable", "consumer", "range")
    require(
        tuple(mine[f] for f in fields) == wanted,
        "KAF-GROUP-12",
        f"{described}: state {show(mine['group_state'])}, type {show(mine['protocol_type'])}, "
        f"protocol {show(mine['protocol_data'])}; expected 'Stable', 'consumer', 'range'",
        combined(mine.at(f) for f, want in zip(fields, wanted, strict=True) if mine[f] != want),
    )
    require(
        [x["member_id"] for x in mine["members"]] == [m.member_id],
        "KAF-GROUP-12",
        f"{described}: members {show_all(x['member_id'] for x in mine['members'])}, "
        f"expected {show(m.member_id)}",
        mine["members"].at(),
    )
    other = find(groups, "group_id", unknown, f"group {unknown}", "KAF-GROUP-12", described)
    require(
        other["group_state"] == "Dead" or other["error_code"] == 69,
        "KAF-GROUP-12",
        f"{described}: unknown group {unknown} has state {show(other['group_state'])} and "
        f"{name_of(other['error_code'])}; expected 'Dead' or {name_of(69)}",
        other.at("group_state") + other.at("error_code"),
    )
    require(
        group in [g["group_id"] for g in listed],
        "KAF-GROUP-12",
        f"ListGroups v{lv} does not list {group} ({len(listed)} group(s) listed)",
        listed.at(),
    )


@case("kafka/groups/13", "KAF-GROUP-13")
def test_leave_from_an_unknown_member_is_refused(target: CaseContext) -> None:
    """A LeaveGroup from a member the group does not have is UNKNOWN_MEMBER_ID (25).

    KAF-GROUP-13: "a LeaveGroup from a member the group does not have is refused with
    UNKNOWN_MEMBER_ID (25) (per member from v3)."
    """
    group = target.name("g")
    with KafkaClient(target) as k:
        settle(target, k, group)
        r = leave_group(target, k, group, "nobody", requirement="KAF-GROUP-13")
    members = r.get("members") or []
    codes = [r["error_code"]] + [m["error_code"] for m in members]
    require(
        CODES["UNKNOWN_MEMBER_ID"] in codes,
        "KAF-GROUP-13",
        f"LeaveGroup from 'nobody' answered {', '.join(name_of(c) for c in codes)}, expected "
        f"{name_of(CODES['UNKNOWN_MEMBER_ID'])} (for the group, or for the member from v3)",
        combined([r.at("error_code"), *(m.at("error_code") for m in members)]),
    )


@case("kafka/groups/14", "KAF-GROUP-14")
def test_a_sync_for_a_group_that_does_not_exist_is_refused_at_once(target: CaseContext) -> None:
    """A SyncGroup from an unknown (static) member of a group that does not exist is
    answered UNKNOWN_MEMBER_ID (25).  From a fuzz campaign against Tansu 0.6, which answers
    it REBALANCE_IN_PROGRESS (27), three seconds later.

    KAF-GROUP-14: "a SyncGroup, at every version, from a member the group does not have (of a group
    that does not exist, or has no members, too) is answered UNKNOWN_MEMBER_ID (25) at once ..."
    """
    v = usable(target, "SyncGroup", lowest=3)
    ghost = target.name("ghost")
    body = {
        "group_id": ghost,
        "generation_id": 3,
        "member_id": "nobody",
        "group_instance_id": "static-1",
        "protocol_type": "consumer",
        "protocol_name": "range",
        "assignments": [{"member_id": "nobody", "assignment": b"a"}],
    }
    with KafkaClient(target) as k:
        coordinator_ready(target, k, ghost)
        r = k.call("SyncGroup", v, body, "KAF-GROUP-14", f"SyncGroup v{v} of a group never made")
    expect_code(
        r, "error_code", "UNKNOWN_MEMBER_ID", "KAF-GROUP-14", "SyncGroup of a group never made"
    )
