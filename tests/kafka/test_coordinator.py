"""The classic group coordinator (conformance.protocols.kafka.coordinator), on a fake clock.

Every test drives the coordinator by hand: requests in, tickets polled, the clock advanced
explicitly.  The stateful test at the end states its invariants first.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from conformance.protocols.kafka.coordinator import (
    STATES,
    TRANSITIONS,
    Coordinator,
    InvalidTransition,
    JoinResult,
    SyncResult,
    Ticket,
)
from conformance.protocols.kafka.coordinator_state import EVENTS, Group, next_state

SESSION_MS = 10_000
REBALANCE_MS = 30_000
DELAY = 0.3


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def coord(clock: Clock) -> Coordinator:
    return Coordinator(clock, join_delay_s=DELAY)


def join(
    coord: Coordinator,
    member_id: str = "",
    *,
    group: str = "g",
    protocols: Sequence[tuple[str, bytes]] = (("range", b"meta"),),
    **kw: Any,
) -> Ticket[JoinResult]:
    kw.setdefault("protocol_type", "consumer")
    kw.setdefault("session_timeout_ms", SESSION_MS)
    kw.setdefault("rebalance_timeout_ms", REBALANCE_MS)
    return coord.join(group, member_id, protocols=protocols, **kw)


def done(ticket: Ticket[Any]) -> Any:
    result = ticket.result()
    assert result is not None, "ticket still waiting"
    return result


def form(coord: Coordinator, clock: Clock, n: int) -> list[JoinResult]:
    """n new members join group g together and the rebalance completes (not yet synced)."""
    tickets = [
        join(coord, client_id=f"c{i}", protocols=[("range", f"m{i}".encode())]) for i in range(n)
    ]
    assert all(t.result() is None for t in tickets)
    clock.advance(DELAY)
    return [done(t) for t in tickets]


def stable(coord: Coordinator, clock: Clock, n: int) -> list[JoinResult]:
    """n members in a Stable group g, each assigned its own member id."""
    results = form(coord, clock, n)
    leader = next(r for r in results if r.members)
    assignments = {r.member_id: r.member_id.encode() for r in results}
    assert (
        done(coord.sync("g", leader.member_id, leader.generation, assignments=assignments)).error
        == "NONE"
    )
    assert coord.describe("g").state == "Stable"
    return results


# -- joining and syncing ---------------------------------------------------------------


def test_two_members_joining_within_the_delay_share_one_generation(
    coord: Coordinator, clock: Clock
) -> None:
    a = join(coord, client_id="a", protocols=[("range", b"A")])
    clock.advance(0.1)
    b = join(coord, client_id="b", protocols=[("range", b"B")])
    assert coord.describe("g").state == "PreparingRebalance"
    clock.advance(0.1)
    assert a.result() is None and b.result() is None, "answered before the join delay"
    clock.advance(0.2)
    ra, rb = done(a), done(b)
    assert (ra.error, rb.error) == ("NONE", "NONE")
    assert ra.generation == rb.generation == 1
    assert ra.leader == rb.leader == ra.member_id, "the first to join leads"
    assert ra.member_id.startswith("a-") and rb.member_id.startswith("b-")
    assert [(m.member_id, m.metadata) for m in ra.members] == [
        (ra.member_id, b"A"),
        (rb.member_id, b"B"),
    ]
    assert rb.members == (), "a follower gets no member list"
    assert (ra.protocol_type, ra.protocol_name) == ("consumer", "range")
    assert coord.describe("g").state == "CompletingRebalance"

    follower = coord.sync("g", rb.member_id, 1)
    assert follower.result() is None, "a follower waits for the leader's assignment"
    leader = coord.sync("g", ra.member_id, 1, assignments={ra.member_id: b"x", rb.member_id: b"y"})
    assert done(leader) == SyncResult("NONE", "consumer", "range", b"x")
    assert done(follower) == SyncResult("NONE", "consumer", "range", b"y")
    view = coord.describe("g")
    assert view.state == "Stable" and view.protocol_name == "range"
    assert [(m.metadata, m.assignment) for m in view.members] == [(b"A", b"x"), (b"B", b"y")]
    # in Stable a sync is answered at once
    assert done(coord.sync("g", rb.member_id, 1)).assignment == b"y"


def test_members_the_leader_leaves_out_get_an_empty_assignment(
    coord: Coordinator, clock: Clock
) -> None:
    ra, rb = form(coord, clock, 2)
    follower = coord.sync("g", rb.member_id, 1)
    coord.sync("g", ra.member_id, 1, assignments={ra.member_id: b"x", "stranger": b"z"})
    assert done(follower).assignment == b""


def test_an_unchanged_rejoin_gets_the_current_generation_back(
    coord: Coordinator, clock: Clock
) -> None:
    """Kafka answers a member that joins again with the same protocols (a resent join)
    from the current generation; a rebalance on every join would never settle a client
    that resends its join while another member is still joining (kafka-python does)."""
    ra, rb = stable(coord, clock, 2)
    again = done(join(coord, rb.member_id, protocols=[("range", b"m1")]))
    assert (again.error, again.generation, again.leader, again.members) == (
        "NONE",
        1,
        ra.member_id,
        (),
    )
    assert coord.describe("g").state == "Stable"
    changed = join(coord, rb.member_id, protocols=[("range", b"new metadata")])
    assert changed.result() is None and coord.describe("g").state == "PreparingRebalance"


def test_a_third_member_makes_the_others_rejoin(coord: Coordinator, clock: Clock) -> None:
    ra, rb = stable(coord, clock, 2)
    c = join(coord, client_id="c")
    assert coord.describe("g").state == "PreparingRebalance"
    assert coord.heartbeat("g", ra.member_id, 1) == "REBALANCE_IN_PROGRESS"
    assert coord.heartbeat("g", rb.member_id, 1) == "REBALANCE_IN_PROGRESS"
    assert coord.check_commit("g", ra.member_id, 1) == "NONE", "Kafka commits while preparing"
    a2, b2 = join(coord, ra.member_id), join(coord, rb.member_id)
    clock.advance(DELAY)
    results = [done(t) for t in (a2, b2, c)]
    assert {r.generation for r in results} == {2}
    assert {r.leader for r in results} == {ra.member_id}, "the old leader stays leader"
    assert len(results[0].members) == 3


def test_a_member_that_does_not_rejoin_by_the_rebalance_timeout_is_dropped(
    coord: Coordinator, clock: Clock
) -> None:
    ra, rb = stable(coord, clock, 2)
    a2 = join(coord, ra.member_id)
    assert a2.deadline == pytest.approx(clock.now + REBALANCE_MS / 1000 + DELAY)
    for _ in range(4):  # b keeps its session alive but never rejoins
        clock.advance(REBALANCE_MS / 1000 / 4 - 0.01)
        assert a2.result() is None
        coord.heartbeat("g", rb.member_id, 1)
    clock.advance(0.05)
    result = done(a2)
    assert (result.error, result.generation, result.leader) == ("NONE", 2, ra.member_id)
    assert [m.member_id for m in result.members] == [ra.member_id]
    assert coord.heartbeat("g", rb.member_id, 2) == "UNKNOWN_MEMBER_ID"


def test_the_leader_is_the_first_to_join_once_the_old_leader_is_gone(
    coord: Coordinator, clock: Clock
) -> None:
    ra, rb, rc = stable(coord, clock, 3)
    coord.leave("g", [(ra.member_id, None)])
    c2, b2 = join(coord, rc.member_id), join(coord, rb.member_id)
    clock.advance(DELAY)
    assert done(c2).leader == done(b2).leader == rb.member_id


def test_a_newer_join_of_the_same_member_replaces_the_waiting_one(coord: Coordinator) -> None:
    first = join(coord, client_id="a")
    member_id = coord.describe("g").members[0].member_id
    second = join(coord, member_id)
    assert done(first).error == "REBALANCE_IN_PROGRESS"
    assert second.result() is None


def test_member_id_required_then_join_with_the_given_id(coord: Coordinator, clock: Clock) -> None:
    first = done(join(coord, client_id="cli", require_known_member_id=True))
    assert first.error == "MEMBER_ID_REQUIRED" and first.member_id.startswith("cli-")
    assert coord.describe("g").state == "Empty" and coord.describe("g").members == ()
    again = join(coord, first.member_id, require_known_member_id=True)
    clock.advance(DELAY)
    result = done(again)
    assert (result.error, result.member_id, result.leader) == (
        "NONE",
        first.member_id,
        first.member_id,
    )


def test_a_pending_member_id_expires_after_its_session_timeout(
    coord: Coordinator, clock: Clock
) -> None:
    first = done(join(coord, require_known_member_id=True))
    clock.advance(SESSION_MS / 1000)
    assert done(join(coord, first.member_id)).error == "UNKNOWN_MEMBER_ID"


# -- leaving and expiring --------------------------------------------------------------


def test_leave_starts_a_rebalance_and_the_last_leave_empties_the_group(
    coord: Coordinator, clock: Clock
) -> None:
    ra, rb = stable(coord, clock, 2)
    assert coord.leave("g", [(rb.member_id, None), ("nobody", None)]) == [
        "NONE",
        "UNKNOWN_MEMBER_ID",
    ]
    assert coord.describe("g").state == "PreparingRebalance"
    assert coord.leave("g", [(ra.member_id, None)]) == ["NONE"]
    view = coord.describe("g")
    assert (view.state, view.members) == ("Empty", ())
    assert coord.leave("nope", [("x", None)]) == ["UNKNOWN_MEMBER_ID"]


def test_a_waiting_sync_is_refused_when_a_member_leaves(coord: Coordinator, clock: Clock) -> None:
    _, rb, rc = form(coord, clock, 3)
    follower = coord.sync("g", rb.member_id, 1)
    coord.leave("g", [(rc.member_id, None)])
    assert done(follower).error == "REBALANCE_IN_PROGRESS"


def test_a_waiting_sync_gives_up_after_the_session_timeout(
    coord: Coordinator, clock: Clock
) -> None:
    _, rb = form(coord, clock, 2)
    follower = coord.sync("g", rb.member_id, 1)
    assert follower.deadline == clock.now + SESSION_MS / 1000
    clock.advance(SESSION_MS / 1000)
    assert done(follower).error == "REBALANCE_IN_PROGRESS"


def test_session_expiry_starts_a_rebalance(coord: Coordinator, clock: Clock) -> None:
    ra, rb = stable(coord, clock, 2)
    clock.advance(SESSION_MS / 1000 / 2)
    assert coord.heartbeat("g", ra.member_id, 1) == "NONE"
    clock.advance(SESSION_MS / 1000 / 2)  # b, silent since the join completed, expires
    assert coord.heartbeat("g", ra.member_id, 1) == "REBALANCE_IN_PROGRESS"
    assert [m.member_id for m in coord.describe("g").members] == [ra.member_id]
    assert coord.heartbeat("g", rb.member_id, 1) == "UNKNOWN_MEMBER_ID"
    clock.advance(SESSION_MS / 1000)
    assert coord.describe("g").state == "Empty"


# -- errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"group": ""}, "INVALID_GROUP_ID"),
        ({"session_timeout_ms": 999}, "INVALID_SESSION_TIMEOUT"),
        ({"session_timeout_ms": 1_800_001}, "INVALID_SESSION_TIMEOUT"),
        ({"protocols": []}, "INCONSISTENT_GROUP_PROTOCOL"),
        ({"protocol_type": ""}, "INCONSISTENT_GROUP_PROTOCOL"),
        ({"member_id": "stranger"}, "UNKNOWN_MEMBER_ID"),
    ],
)
def test_join_refusals(coord: Coordinator, kwargs: dict[str, Any], error: str) -> None:
    result = done(join(coord, **kwargs))
    assert (result.error, result.generation) == (error, -1)


def test_joins_inconsistent_with_the_group_are_refused(coord: Coordinator, clock: Clock) -> None:
    stable(coord, clock, 1)
    assert done(join(coord, protocol_type="connect")).error == "INCONSISTENT_GROUP_PROTOCOL"
    assert done(join(coord, protocols=[("sticky", b"")])).error == "INCONSISTENT_GROUP_PROTOCOL"
    assert coord.describe("g").state == "Stable", "a refused join does not rebalance"


def test_sync_and_heartbeat_refusals(coord: Coordinator, clock: Clock) -> None:
    (ra,) = form(coord, clock, 1)
    for group, member, generation, error in [
        ("nope", ra.member_id, 1, "UNKNOWN_MEMBER_ID"),
        ("g", "stranger", 1, "UNKNOWN_MEMBER_ID"),
        ("g", ra.member_id, 2, "ILLEGAL_GENERATION"),
        ("", ra.member_id, 1, "INVALID_GROUP_ID"),
    ]:
        assert done(coord.sync(group, member, generation)).error == error
        assert coord.heartbeat(group, member, generation) == error
    wrong_name = coord.sync("g", ra.member_id, 1, protocol_name="sticky")
    assert done(wrong_name).error == "INCONSISTENT_GROUP_PROTOCOL"
    wrong_type = coord.sync("g", ra.member_id, 1, protocol_type="connect")
    assert done(wrong_type).error == "INCONSISTENT_GROUP_PROTOCOL"
    assert coord.heartbeat("g", ra.member_id, 1) == "NONE", "CompletingRebalance heartbeats"
    join(coord, ra.member_id)
    assert done(coord.sync("g", ra.member_id, 1)).error == "REBALANCE_IN_PROGRESS"


def test_check_commit(coord: Coordinator, clock: Clock) -> None:
    """As Kafka's OffsetMetadataManager.validateOffsetCommit and
    ClassicGroup.validateOffsetCommit (KAF-GROUP-15)."""
    assert coord.check_commit("", "", -1) == "INVALID_GROUP_ID"
    assert coord.check_commit("ghost", "m", 1) == "ILLEGAL_GENERATION", "no group, before v9"
    assert coord.check_commit("ghost", "m", 1, version=8) == "ILLEGAL_GENERATION"
    assert coord.check_commit("ghost", "m", 1, version=9) == "GROUP_ID_NOT_FOUND"
    assert coord.describe("ghost").state == "Dead", "a refused commit makes no group"
    assert coord.check_commit("nope", "", -1) == "NONE", "a simple commit, no group"
    assert coord.describe("nope").state == "Empty", "a simple commit makes the group, Empty"
    assert coord.check_commit("nope", "m", -1) == "NONE", "a negative generation, Empty group"
    assert coord.check_commit("nope", "m", 1) == "UNKNOWN_MEMBER_ID", "the group has no m"
    (ra,) = form(coord, clock, 1)
    assert coord.check_commit("g", "", -1) == "UNKNOWN_MEMBER_ID", "the group has members"
    assert coord.check_commit("g", ra.member_id, 1) == "REBALANCE_IN_PROGRESS", "no assignment yet"
    coord.sync("g", ra.member_id, 1)
    assert coord.check_commit("g", ra.member_id, 1) == "NONE"
    assert coord.check_commit("g", ra.member_id, 0) == "ILLEGAL_GENERATION"
    assert coord.check_commit("g", "stranger", 1) == "UNKNOWN_MEMBER_ID"
    coord.leave("g", [(ra.member_id, None)])
    assert coord.check_commit("g", "", -1) == "NONE", "a simple commit to an Empty group"


# -- views and the table ---------------------------------------------------------------


def test_describe_and_list_groups_report_the_states(coord: Coordinator, clock: Clock) -> None:
    assert coord.describe("nope") == coord.describe("nope")
    assert (coord.describe("nope").state, coord.describe("nope").members) == ("Dead", ())
    form(coord, clock, 1)
    join(coord, group="h")
    done(join(coord, group="e", require_known_member_id=True))
    view = coord.describe("g")
    assert (view.state, view.protocol_type, view.protocol_name) == (
        "CompletingRebalance",
        "consumer",
        "",
    ), "the protocol shows only when Stable, as Kafka"
    assert view.members[0].metadata == b""
    states = {v.group_id: v.state for v in coord.list_groups()}
    assert states == {"e": "Empty", "g": "CompletingRebalance", "h": "PreparingRebalance"}
    assert [v.group_id for v in coord.list_groups(["empty", "PreparingRebalance"])] == ["e", "h"]
    assert coord.forget_empty("g") == "NON_EMPTY_GROUP"
    assert coord.forget_empty("e") == "NONE"
    assert coord.forget_empty("e") == "GROUP_ID_NOT_FOUND"
    assert coord.describe("e").state == "Dead"


def test_protocol_voting(coord: Coordinator, clock: Clock) -> None:
    a = join(coord, protocols=[("range", b"a-r"), ("sticky", b"a-s"), ("rr", b"a-rr")])
    b = join(coord, protocols=[("sticky", b"b-s"), ("range", b"b-r")])
    c = join(coord, protocols=[("rr", b"c-rr"), ("sticky", b"c-s"), ("range", b"c-r")])
    clock.advance(DELAY)
    # common: range, sticky; votes: a range, b sticky, c sticky
    ra = done(a)
    assert ra.protocol_name == done(b).protocol_name == done(c).protocol_name == "sticky"
    assert [m.metadata for m in ra.members] == [b"a-s", b"b-s", b"c-s"]


def test_a_tied_vote_goes_to_the_leaders_first_choice(coord: Coordinator, clock: Clock) -> None:
    a = join(coord, protocols=[("sticky", b""), ("range", b"")])
    b = join(coord, protocols=[("range", b""), ("sticky", b"")])
    clock.advance(DELAY)
    assert done(a).protocol_name == done(b).protocol_name == "sticky"


def test_an_event_outside_the_table_raises_naming_state_and_event() -> None:
    with pytest.raises(InvalidTransition, match=r"group 'g'.*'leader_synced'.*'Stable'"):
        next_state("g", "Stable", "leader_synced")
    for state, event in itertools.product(STATES, EVENTS):
        if (state, event) in TRANSITIONS:
            assert next_state("g", state, event) == TRANSITIONS[(state, event)]
        else:
            with pytest.raises(InvalidTransition) as caught:
                next_state("g", state, event)
            assert (caught.value.state, caught.value.event) == (state, event)


def test_on_change_reports_each_change_once_even_when_a_listener_polls(clock: Clock) -> None:
    calls: list[str] = []
    tickets: list[Ticket[JoinResult]] = []

    def listener() -> None:
        calls.append(watched.describe("g").state)
        for t in tickets:
            t.result()  # the server re-polls from inside on_change

    watched = Coordinator(clock, join_delay_s=DELAY, on_change=listener)
    tickets.append(join(watched))
    assert calls == ["PreparingRebalance"]
    clock.advance(DELAY)
    watched.tick()
    assert calls[-1] == "CompletingRebalance"
    count = len(calls)
    watched.tick()
    assert len(calls) == count, "nothing changed, nothing reported"


# -- the stateful test -------------------------------------------------------------------

CLIENTS = 3


class GroupMachine(RuleBasedStateMachine):
    """Oracle: generation never decreases; the state is always one of the five; in Stable
    the leader is a member and each member holds the assignment the leader gave it; once
    the clock passes a ticket's deadline the ticket has a result, and a result never
    changes once given."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = Clock()
        self.coord = Coordinator(self.clock, join_delay_s=DELAY)
        self.member_id = [""] * CLIENTS
        self.joined: list[JoinResult | None] = [None] * CLIENTS
        self.tickets: list[tuple[int, Ticket[Any]]] = []
        self.seen: dict[int, Any] = {}
        self.generation = 0
        self.leaders: dict[int, str] = {}

    def _group(self) -> Group | None:
        return self.coord._groups.get("g")

    def _poll(self) -> None:
        for index, (client, ticket) in enumerate(self.tickets):
            result = ticket.result()
            if index in self.seen:
                assert result == self.seen[index], "a ticket's result changed"
            elif result is not None:
                self.seen[index] = result
                if isinstance(result, JoinResult) and result.error in (
                    "NONE",
                    "MEMBER_ID_REQUIRED",
                ):
                    self.member_id[client] = result.member_id
                    if result.error == "NONE":
                        self.joined[client] = result
                        assert (
                            self.leaders.setdefault(result.generation, result.leader)
                            == result.leader
                        )
            if result is None:
                assert self.clock.now < ticket.deadline, "a ticket outlived its deadline"

    @initialize()
    def everyone_joins(self) -> None:
        for client in range(CLIENTS):
            self.join(client, [("range", b"r")], require=False, rebalance_ms=4000)

    @rule(
        client=st.integers(0, CLIENTS - 1),
        protocols=st.sampled_from([[("range", b"r")], [("sticky", b"s"), ("range", b"r")]]),
        require=st.booleans(),
        rebalance_ms=st.sampled_from([1000, 4000]),
    )
    def join(
        self, client: int, protocols: list[tuple[str, bytes]], require: bool, rebalance_ms: int
    ) -> None:
        ticket = self.coord.join(
            "g",
            self.member_id[client],
            protocol_type="consumer",
            protocols=protocols,
            session_timeout_ms=2000,
            rebalance_timeout_ms=rebalance_ms,
            client_id=f"c{client}",
            require_known_member_id=require,
        )
        self.tickets.append((client, ticket))

    @rule(client=st.integers(0, CLIENTS - 1))
    def sync(self, client: int) -> None:
        joined = self.joined[client]
        generation = joined.generation if joined else 0
        assignments = (
            {m.member_id: f"{m.member_id}@{generation}".encode() for m in joined.members}
            if joined
            else {}
        )
        ticket = self.coord.sync("g", self.member_id[client], generation, assignments=assignments)
        self.tickets.append((client, ticket))

    @rule()
    def leaders_sync(self) -> None:
        for client, joined in enumerate(self.joined):
            if joined is not None and joined.members:
                self.sync(client)

    @rule(client=st.integers(0, CLIENTS - 1))
    def heartbeat(self, client: int) -> None:
        joined = self.joined[client]
        error = self.coord.heartbeat(
            "g", self.member_id[client], joined.generation if joined else 0
        )
        assert error in ("NONE", "UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS")

    @rule(client=st.integers(0, CLIENTS - 1))
    def leave(self, client: int) -> None:
        self.coord.leave("g", [(self.member_id[client], None)])
        self.member_id[client] = ""
        self.joined[client] = None

    @rule(seconds=st.sampled_from([0.05, DELAY, 1.0, 2.5]))
    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)

    @rule()
    def pass_every_deadline(self) -> None:
        self.clock.now = max([self.clock.now, *(t.deadline for _, t in self.tickets)])
        self._poll()
        assert all(t.result() is not None for _, t in self.tickets)

    @invariant()
    def group_invariants(self) -> None:
        self._poll()
        view = self.coord.describe("g")
        assert view.state in STATES
        group = self._group()
        generation = group.generation if group else self.generation
        assert generation >= self.generation, "the generation went down"
        self.generation = generation
        if view.state == "Stable":
            assert group is not None and group.leader in group.members
            assert self.leaders.get(generation) == group.leader
            for m in view.members:
                assert m.assignment == f"{m.member_id}@{generation}".encode()


GroupMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
test_group_machine = GroupMachine.TestCase
