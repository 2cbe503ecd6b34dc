"""Kafka consumer groups (SPEC.md, area "groups"): the rebalance, its members, generations,
leaders and sessions.  How each group request is refused or answered on its own is in
:mod:`.test_groups_requests`."""

from __future__ import annotations

import time

from conformance.evidence import combined
from conformance.protocols.kafka.errors import CODES
from conformance.suite.case import Unsupported, Violation, case, require
from conformance.suite.kafka.group_steps import (
    Member,
    coordinator_ready,
    find_coordinator,
    heartbeat,
    join_body,
    join_group,
    leave_group,
    member_id_required,
    other_generation,
    settle,
    sync_group,
)
from conformance.suite.kafka.verify import (
    KafkaClient,
    at_every_version,
    expect_code,
    name_of,
    need,
    usable,
)
from conformance.suite.shown import show, show_all
from conformance.suite.target import CaseContext

REBALANCE = "REBALANCE_IN_PROGRESS"


def _two_members(
    target: CaseContext, a: KafkaClient, b: KafkaClient, group: str, session_ms: int = 10_000
) -> tuple[Member, Member]:
    """Two members joined in one rebalance: both joins sent, then both answers read."""
    first = join_group(target, a, group, session_ms=session_ms)  # a group of one, settled
    sync_group(target, a, first, {first.member_id: b"a"})
    v = usable(target, "JoinGroup")
    wait = target.timeout + 5
    corr_b = b.send("JoinGroup", v, join_body(group, session_ms=session_ms))
    # v4+: MEMBER_ID_REQUIRED at once (waited for up to 3 s: no moment is promised); older
    # versions rightly wait for the rebalance (a MEMBER_ID_REQUIRED there breaks KAF-GROUP-16)
    window = min(target.timeout, 3.0) if v >= 4 else 0.5
    early = b.answer_within("JoinGroup", v, corr_b, "KAF-GROUP-2", "second member's join", window)
    if early is not None and early["error_code"] == CODES["MEMBER_ID_REQUIRED"]:
        if v < 4:  # never asked before v4: a violation of KAF-GROUP-16, not a step to take
            member_id_required(target, b, v, early, join_body(group), "KAF-GROUP-2")
        again = join_body(group, str(early["member_id"]), session_ms=session_ms)
        corr_b, early = b.send("JoinGroup", v, again), None
    # the first member learns of the rebalance and joins again with its id
    corr_a = a.send("JoinGroup", v, join_body(group, first.member_id, session_ms=session_ms))
    reply_a = a.answer("JoinGroup", v, corr_a, "KAF-GROUP-2", "first member's rejoin", timeout=wait)
    reply_b = early or b.answer(
        "JoinGroup", v, corr_b, "KAF-GROUP-2", "second member's join", timeout=wait
    )
    for who, r in (("first", reply_a), ("second", reply_b)):
        expect_code(r, "error_code", "NONE", "KAF-GROUP-2", f"the {who} member's join")
    return Member.of(group, reply_a), Member.of(group, reply_b)


@case("kafka/groups/1", "KAF-GROUP-1")
def test_find_coordinator_names_a_broker_that_serves_the_group(target: CaseContext) -> None:
    """FindCoordinator names a broker (node id, host, port) that serves the group.

    KAF-GROUP-1: "FindCoordinator names a broker (node id, host, port) that serves the group's
    requests."
    """
    group = target.name("g")
    with KafkaClient(target) as k:
        # a fresh Kafka answers COORDINATOR_NOT_AVAILABLE while it makes its offsets topic:
        # asked again, bounded (find_coordinator)
        entry = find_coordinator(target, k, group)
        what = f"FindCoordinator {group}"
        expect_code(entry, "error_code", "NONE", "KAF-GROUP-1", what)
        require(
            entry["host"] and entry["port"] > 0 and entry["node_id"] >= 0,
            "KAF-GROUP-1",
            f"coordinator node_id {entry['node_id']} host {show(entry['host'])} port "
            f"{entry['port']}, expected a "
            "node id >= 0, a host and a port > 0",
            entry.at("node_id") + entry.at("host") + entry.at("port"),
        )
        settle(target, k, group)


@case("kafka/groups/2", "KAF-GROUP-2")
def test_members_of_one_rebalance_share_generation_and_leader(target: CaseContext) -> None:
    """Every member of a rebalance gets the same generation and leader; only the leader
    gets the member list.

    KAF-GROUP-2: "JoinGroup answers every member of one rebalance with the same generation and
    leader; the leader receives every member with its metadata, the others none."
    """
    group = target.name("g")
    with KafkaClient(target) as a, KafkaClient(target) as b:
        ma, mb = _two_members(target, a, b, group)
    require(
        ma.generation == mb.generation and ma.leader == mb.leader,
        "KAF-GROUP-2",
        f"generations {ma.generation}/{mb.generation}, leaders {ma.leader}/{mb.leader}; "
        "expected the same generation and leader in both answers",
        ma.at("generation_id") + ma.at("leader") + mb.at("generation_id") + mb.at("leader"),
    )
    leader, follower = (ma, mb) if ma.member_id == ma.leader else (mb, ma)
    require(
        leader.member_id == leader.leader,
        "KAF-GROUP-2",
        f"leader {ma.leader} is neither member ({ma.member_id}, {mb.member_id})",
        ma.at("leader") + ma.at("member_id") + mb.at("member_id"),
    )
    ids = sorted(m["member_id"] for m in leader.members)
    require(
        ids == sorted([ma.member_id, mb.member_id]),
        "KAF-GROUP-2",
        f"the leader got members {show_all(ids)}, expected both "
        f"({show_all(sorted([ma.member_id, mb.member_id]))})",
        leader.at("members"),
    )
    require(
        not follower.members,
        "KAF-GROUP-2",
        f"a follower got {len(follower.members)} members, expected none",
        follower.at("members"),
    )


@case("kafka/groups/3", "KAF-GROUP-3")
def test_a_follower_sync_waits_for_the_leaders_assignment(target: CaseContext) -> None:
    """SyncGroup from a follower waits for the leader's, then gets what the leader gave it.

    KAF-GROUP-3: "SyncGroup from a follower waits until the leader's SyncGroup arrives and then
    answers each member with the assignment the leader gave it."
    """
    group = target.name("g")
    with KafkaClient(target) as a, KafkaClient(target) as b:
        ma, mb = _two_members(target, a, b, group)
        leader, follower = (ma, mb) if ma.member_id == ma.leader else (mb, ma)
        lk, fk = (a, b) if leader is ma else (b, a)
        v = usable(target, "SyncGroup")
        body = {
            "group_id": group,
            "generation_id": follower.generation,
            "member_id": follower.member_id,
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [],
        }
        corr = fk.send("SyncGroup", v, body)
        fk.expect_silence("KAF-GROUP-3", "the follower's SyncGroup before the leader's", 0.3)
        plan = {leader.member_id: b"L", follower.member_id: b"F"}
        mine = sync_group(target, lk, leader, plan)
        theirs = fk.answer(
            "SyncGroup", v, corr, "KAF-GROUP-3", "the follower's SyncGroup", timeout=target.timeout
        )
    expect_code(theirs, "error_code", "NONE", "KAF-GROUP-3", "the follower's SyncGroup")
    wrong = [n for n, want in ((mine, b"L"), (theirs, b"F")) if n["assignment"] != want]
    require(
        not wrong,
        "KAF-GROUP-3",
        f"assignments {_hex(mine['assignment'])} (leader) / {_hex(theirs['assignment'])} "
        "(follower), expected 4c ('L') / 46 ('F')",
        combined(n.at("assignment") for n in wrong),
    )


@case("kafka/groups/4", "KAF-GROUP-4")
def test_a_member_that_misses_its_session_is_removed(target: CaseContext) -> None:
    """A member that misses its session timeout is removed; the others' heartbeats get
    REBALANCE_IN_PROGRESS (27).

    KAF-GROUP-4: "a member that misses its session timeout is removed and a rebalance begins: the
    other members' heartbeats are answered REBALANCE_IN_PROGRESS (27) until they join again."
    """
    group = target.name("g")
    with KafkaClient(target) as a, KafkaClient(target) as b:
        ma, mb = None, None
        for session_ms in (1000, 6000):
            try:
                ma, mb = _two_members(target, a, b, group, session_ms=session_ms)
                break
            except Violation as exc:
                if "INVALID_SESSION_TIMEOUT" not in exc.message:
                    raise
                group = target.name(f"g{session_ms}")
        if ma is None or mb is None:
            raise Unsupported("the target refuses session timeouts of 1 s and 6 s")
        leader = ma if ma.member_id == ma.leader else mb
        sync_group(
            target, a if leader is ma else b, leader, {ma.member_id: b"a", mb.member_id: b"b"}
        )
        if leader is not ma:
            sync_group(target, a, ma)
        else:
            sync_group(target, b, mb)
        # a keeps heartbeating, b goes silent
        end = time.monotonic() + 3 * session_ms / 1000 + 2
        got = heartbeat(target, a, ma, requirement="KAF-GROUP-4")
        while got["error_code"] != CODES[REBALANCE] and time.monotonic() < end:
            time.sleep(0.2)
            got = heartbeat(target, a, ma, requirement="KAF-GROUP-4")
        if got["error_code"] == CODES[REBALANCE]:
            return
    raise Violation(
        "KAF-GROUP-4",
        f"the survivor's heartbeat was still {name_of(got['error_code'])}, expected "
        f"{name_of(CODES[REBALANCE])}, {3 * session_ms / 1000 + 2:g}s after the other member "
        f"went silent (session {session_ms} ms)",
        got.at("error_code"),
    )


@case("kafka/groups/5", "KAF-GROUP-5")
@at_every_version("Heartbeat")
def test_unknown_members_and_old_generations_are_refused(target: CaseContext, version: int) -> None:
    """A heartbeat from an unknown member is UNKNOWN_MEMBER_ID (25); with another generation
    ILLEGAL_GENERATION (22).

    KAF-GROUP-5: "a Heartbeat, at every version, from a member the group does not have (of a group
    that does not exist too) is answered UNKNOWN_MEMBER_ID (25); from a member of the group with a
    generation other than the group's, ILLEGAL_GENERATION (22)."
    """
    need(target, "Heartbeat", version)
    group = target.name("g")
    with KafkaClient(target) as k:
        m = settle(target, k, group)
        for stale in (other_generation(m), m.generation + 7):
            expect_code(
                heartbeat(
                    target, k, m, generation=stale, version=version, requirement="KAF-GROUP-5"
                ),
                "error_code",
                "ILLEGAL_GENERATION",
                "KAF-GROUP-5",
                f"Heartbeat v{version} with generation {stale} (the group's is {m.generation})",
            )
        expect_code(
            heartbeat(target, k, m, member_id="nobody", version=version, requirement="KAF-GROUP-5"),
            "error_code",
            "UNKNOWN_MEMBER_ID",
            "KAF-GROUP-5",
            f"Heartbeat v{version} from member 'nobody'",
        )
        ghost = Member(target.name("ghost"), "nobody", 1, "", [])
        expect_code(
            heartbeat(target, k, ghost, version=version, requirement="KAF-GROUP-5"),
            "error_code",
            "UNKNOWN_MEMBER_ID",
            "KAF-GROUP-5",
            f"Heartbeat v{version} to group {ghost.group}, never made",
        )


@case("kafka/groups/6", "KAF-GROUP-6")
def test_a_member_that_leaves_makes_the_others_rebalance(target: CaseContext) -> None:
    """A member that leaves is removed at once; the remaining members rebalance.

    KAF-GROUP-6: "a member that leaves (LeaveGroup) is removed at once, and the remaining members
    rebalance."
    """
    group = target.name("g")
    with KafkaClient(target) as a, KafkaClient(target) as b:
        ma, mb = _two_members(target, a, b, group)
        leader = ma if ma.member_id == ma.leader else mb
        sync_group(
            target, a if leader is ma else b, leader, {ma.member_id: b"a", mb.member_id: b"b"}
        )
        sync_group(target, b if leader is ma else a, mb if leader is ma else ma)
        reply = leave_group(target, b, group, mb.member_id)
        expect_code(reply, "error_code", "NONE", "KAF-GROUP-6", "LeaveGroup")
        got = heartbeat(target, a, ma, requirement="KAF-GROUP-6")
    expect_code(
        got,
        "error_code",
        REBALANCE,
        "KAF-GROUP-6",
        "the remaining member's heartbeat after the leave",
    )


@case("kafka/groups/7", "KAF-GROUP-7")
@at_every_version("JoinGroup", since=4)
def test_a_new_member_gets_member_id_required(target: CaseContext, version: int) -> None:
    """From JoinGroup v4, a join with an empty member id is MEMBER_ID_REQUIRED (79) with
    the id to use, and the join with that id is accepted.

    KAF-GROUP-7: "from JoinGroup v4, a new member that joins with an empty member id is answered
    MEMBER_ID_REQUIRED (79) with the member id to use, and its join with that id is then accepted."
    """
    need(target, "JoinGroup", version)
    group = target.name("g")
    with KafkaClient(target) as k:
        coordinator_ready(target, k, group)
        first = k.call(
            "JoinGroup", version, join_body(group), "KAF-GROUP-7", f"JoinGroup v{version}"
        )
        expect_code(
            first, "error_code", "MEMBER_ID_REQUIRED", "KAF-GROUP-7", f"JoinGroup v{version}, no id"
        )
        require(
            first["member_id"],
            "KAF-GROUP-7",
            "MEMBER_ID_REQUIRED came with an empty member id, expected the id to use",
            first.at("member_id"),
        )
        again = k.call(
            "JoinGroup",
            version,
            join_body(group, str(first["member_id"])),
            "KAF-GROUP-7",
            "JoinGroup with the given id",
            timeout=target.timeout + 5,
        )
    expect_code(again, "error_code", "NONE", "KAF-GROUP-7", "JoinGroup with the given id")


def _hex(value: bytes | None) -> str:
    """Bytes as the wire has them (hex), or null."""
    return "null" if value is None else (value.hex(" ") or "empty")
