"""Static members (KIP-345) in the classic group coordinator, on a fake clock: a static
member that joins again with an empty member id takes its old place (Kafka's
``updateStaticMemberThenRebalanceOrCompleteJoin`` in each group state), an old member id
is fenced everywhere (``ClassicGroup.validateMember``), a static member that does not rejoin
stays through a rebalance, and LeaveGroup by group instance id."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from conformance.protocols.kafka.coordinator import Coordinator, JoinResult
from tests.kafka.test_coordinator import DELAY, Clock, done, join

INSTANCE = "i-1"


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def coord(clock: Clock) -> Coordinator:
    return Coordinator(clock, join_delay_s=DELAY)


def static(coord: Coordinator, instance: str = INSTANCE, **kw: Any) -> Any:
    return join(coord, group_instance_id=instance, client_id=f"client-{instance}", **kw)


def settled(coord: Coordinator, clock: Clock, *instances: str | None) -> list[JoinResult]:
    """Group g with one member per instance id (None: a dynamic member), joined together
    and synced by the leader, who assigns each member its own id."""
    tickets = [
        static(coord, i) if i is not None else join(coord, client_id="dyn") for i in instances
    ]
    clock.advance(DELAY)
    results = [done(t) for t in tickets]
    leader = next(r for r in results if r.members)
    coord.sync(
        "g", leader.member_id, 1, assignments={r.member_id: r.member_id.encode() for r in results}
    )
    assert coord.describe("g").state == "Stable"
    return results


def test_a_static_member_is_never_asked_for_a_member_id_and_its_id_names_its_instance(
    coord: Coordinator, clock: Clock
) -> None:
    ticket = static(coord, require_known_member_id=False)
    clock.advance(DELAY)
    assert done(ticket).member_id.startswith(f"{INSTANCE}-")


@pytest.mark.parametrize("skip", [False, True])
def test_a_replaced_leader_keeps_its_place_generation_and_assignment(
    coord: Coordinator, clock: Clock, skip: bool
) -> None:
    (old,) = settled(coord, clock, INSTANCE)
    new = done(static(coord, protocols=[("range", b"meta")], skip_assignment=skip))
    assert (new.error, new.generation) == ("NONE", 1)
    assert new.member_id not in ("", old.member_id)
    if skip:  # v9+: the leader is named as it now is, listed with every member
        assert (new.leader, new.skip_assignment) == (new.member_id, True)
        assert [m.member_id for m in new.members] == [new.member_id]
    else:  # before v9: the leader before the replacement, no member listed
        assert (new.leader, new.skip_assignment, new.members) == (old.member_id, False, ())
    view = coord.describe("g")
    assert view.state == "Stable"
    assert [(m.member_id, m.group_instance_id, m.client_id) for m in view.members] == [
        (new.member_id, INSTANCE, f"client-{INSTANCE}")
    ]
    synced = done(coord.sync("g", new.member_id, 1, group_instance_id=INSTANCE))
    assert (synced.error, synced.assignment) == ("NONE", old.member_id.encode())
    assert coord.heartbeat("g", new.member_id, 1, INSTANCE) == "NONE"


def test_the_old_member_id_is_fenced_everywhere_and_a_stranger_is_unknown(
    coord: Coordinator, clock: Clock
) -> None:
    (old,) = settled(coord, clock, INSTANCE)
    new = done(static(coord))
    fenced = "FENCED_INSTANCE_ID"
    assert coord.heartbeat("g", old.member_id, 1, INSTANCE) == fenced
    assert done(coord.sync("g", old.member_id, 1, group_instance_id=INSTANCE)).error == fenced
    assert coord.check_commit("g", old.member_id, 1, group_instance_id=INSTANCE) == fenced
    assert coord.check_commit("g", old.member_id, -1, group_instance_id=INSTANCE) == fenced
    assert done(static(coord, member_id=old.member_id)).error == fenced
    assert coord.leave("g", [(old.member_id, INSTANCE)]) == [fenced]
    # an instance id the group does not know, or no instance id: the member id decides
    assert coord.heartbeat("g", new.member_id, 1, "i-9") == "UNKNOWN_MEMBER_ID"
    assert coord.heartbeat("g", old.member_id, 1) == "UNKNOWN_MEMBER_ID"
    assert coord.heartbeat("g", new.member_id, 1) == "NONE"
    assert done(static(coord, "i-9", member_id="x")).error == "UNKNOWN_MEMBER_ID"
    assert coord.describe("g").state == "Stable", "nothing fenced changed the group"


def test_a_replaced_follower_leaves_the_leader_alone(coord: Coordinator, clock: Clock) -> None:
    leader, follower = settled(coord, clock, None, INSTANCE)
    assert leader.members, "the dynamic member joined first and leads"
    new = done(static(coord, skip_assignment=True))
    assert (new.leader, new.members, new.skip_assignment) == (leader.member_id, (), False)
    assert done(coord.sync("g", new.member_id, 1)).assignment == follower.member_id.encode()


def test_a_replacement_that_changes_the_protocol_rebalances(
    coord: Coordinator, clock: Clock
) -> None:
    settled(coord, clock, INSTANCE)
    ticket = static(coord, protocols=[("roundrobin", b"r"), ("range", b"meta")])
    assert ticket.result() is None and coord.describe("g").state == "PreparingRebalance"
    clock.advance(DELAY)
    result = done(ticket)
    assert (result.error, result.generation, result.leader) == ("NONE", 2, result.member_id)


def test_a_replacement_while_completing_answers_the_old_sync_fenced_and_rebalances(
    coord: Coordinator, clock: Clock
) -> None:
    leader, follower = (done(t) for t in _formed(coord, clock, None, INSTANCE))
    waiting = coord.sync("g", follower.member_id, 1)
    assert waiting.result() is None
    ticket = static(coord)
    assert done(waiting).error == "FENCED_INSTANCE_ID"
    assert coord.describe("g").state == "PreparingRebalance"
    join(coord, leader.member_id, client_id="dyn")
    clock.advance(DELAY)
    assert done(ticket).generation == 2


def test_a_replacement_while_preparing_fences_the_old_join_and_waits(
    coord: Coordinator, clock: Clock
) -> None:
    first = static(coord)
    second = static(coord)
    assert done(first).error == "FENCED_INSTANCE_ID"
    clock.advance(DELAY)
    result = done(second)
    assert (result.error, result.generation) == ("NONE", 1)
    assert [m.member_id for m in coord.describe("g").members] == [result.member_id]


def test_a_static_member_that_does_not_rejoin_stays_through_the_rebalance(
    coord: Coordinator, clock: Clock
) -> None:
    lead = join(coord, client_id="dyn")
    quiet = static(coord, session_timeout_ms=60_000)  # outlives the rebalance timeout
    clock.advance(DELAY)
    dynamic, absent = done(lead), done(quiet)
    coord.sync("g", dynamic.member_id, 1)
    again = join(coord, dynamic.member_id, client_id="dyn")  # the leader rejoins: a rebalance
    clock.advance(DELAY)
    assert again.result() is None, "the static member has not rejoined yet"
    clock.advance(30)  # the rebalance timeout: a dynamic member that did not rejoin would go
    result = done(again)
    assert (result.generation, result.leader) == (2, dynamic.member_id)
    assert {m.member_id for m in result.members} == {dynamic.member_id, absent.member_id}
    clock.advance(59)
    assert absent.member_id in {m.member_id for m in coord.describe("g").members}
    clock.advance(2)  # the static member's session (from the completion) expires
    assert absent.member_id not in {m.member_id for m in coord.describe("g").members}


def test_a_rebalance_no_member_rejoined_is_tried_again_later(
    coord: Coordinator, clock: Clock
) -> None:
    """Kafka's maybeElectNewJoinedLeader: only static members left, none rejoined."""
    ticket = static(coord, session_timeout_ms=120_000)
    clock.advance(DELAY)
    member = done(ticket)
    coord.sync("g", member.member_id, 1)
    assert coord.rebalance("g")
    clock.advance(31)
    view = coord.describe("g")
    assert (view.state, [m.member_id for m in view.members]) == (
        "PreparingRebalance",
        [member.member_id],
    )
    rejoined = static(coord)  # replaced while preparing: it waits, then completes
    clock.advance(DELAY)
    assert (done(rejoined).error, done(rejoined).generation) == ("NONE", 2)


def test_leave_by_group_instance_id(coord: Coordinator, clock: Clock) -> None:
    settled(coord, clock, INSTANCE, "i-2")
    assert coord.leave("g", [("", INSTANCE), ("", "i-3"), ("", None)]) == [
        "NONE",
        "UNKNOWN_MEMBER_ID",
        "UNKNOWN_MEMBER_ID",
    ]
    assert [m.group_instance_id for m in coord.describe("g").members] == ["i-2"]
    # each member leaves at once, as Kafka's classicGroupLeaveToClassicGroup: named twice,
    # the second time it is a member the group no longer has
    assert coord.leave("g", [("", "i-2"), ("", "i-2")]) == ["NONE", "UNKNOWN_MEMBER_ID"]
    assert coord.describe("g").state == "Empty"


def test_a_pending_member_id_with_a_group_instance_id_is_refused_as_kafka_does(
    coord: Coordinator,
) -> None:
    pending = done(join(coord, require_known_member_id=True)).member_id
    assert done(static(coord, member_id=pending)).error == "UNKNOWN_SERVER_ERROR"


def _formed(coord: Coordinator, clock: Clock, *instances: str | None) -> list[Any]:
    tickets = [
        static(coord, i) if i is not None else join(coord, client_id="dyn") for i in instances
    ]
    clock.advance(DELAY)
    return tickets


# -- the stateful test -------------------------------------------------------------------


class StaticGroupMachine(RuleBasedStateMachine):
    """Oracle, with static members restarting at any moment: the generation never goes
    down; an instance id is held by one member at most; in Stable the leader is a member;
    a ticket is answered once its deadline passes and its answer never changes."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = Clock()
        self.coord = Coordinator(self.clock, join_delay_s=DELAY)
        self.ids = {i: "" for i in ("i-0", "i-1", "dyn")}
        self.generation = 0
        self.tickets: list[tuple[Any, Any]] = []

    def _instance(self, who: str) -> str | None:
        return None if who == "dyn" else who

    @rule(who=st.sampled_from(["i-0", "i-1", "dyn"]), restart=st.booleans())
    def join(self, who: str, restart: bool) -> None:
        member_id = "" if restart else self.ids[who]
        ticket = join(self.coord, member_id, group_instance_id=self._instance(who), client_id=who)
        self.tickets.append((who, ticket))

    @rule(who=st.sampled_from(["i-0", "i-1", "dyn"]))
    def sync(self, who: str) -> None:
        group = self.coord._groups.get("g")
        generation = group.generation if group else 0
        assignments = {mid: mid.encode() for mid in group.members} if group else {}
        ticket = self.coord.sync(
            "g", self.ids[who], generation, assignments=assignments,
            group_instance_id=self._instance(who),
        )  # fmt: skip
        self.tickets.append((who, ticket))

    @rule(who=st.sampled_from(["i-0", "i-1", "dyn"]))
    def leave(self, who: str) -> None:
        self.coord.leave("g", [(self.ids[who], self._instance(who))])

    @rule(seconds=st.sampled_from([0.05, DELAY, 5.0, 31.0]))
    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)

    @invariant()
    def group_invariants(self) -> None:
        seen: dict[int, Any] = {}
        for index, (who, ticket) in enumerate(self.tickets):
            result = ticket.result()
            if result is None:
                assert self.clock.now < ticket.deadline, "a ticket outlived its deadline"
                continue
            seen[index] = result
            if isinstance(result, JoinResult) and result.error == "NONE":
                self.ids[who] = result.member_id
        for index, result in seen.items():
            assert self.tickets[index][1].result() == result, "an answer changed"
        group = self.coord._groups.get("g")
        if group is None:
            return
        assert group.generation >= self.generation, "the generation went down"
        self.generation = group.generation
        instances = [m.group_instance_id for m in group.members.values() if m.group_instance_id]
        assert len(instances) == len(set(instances)), "an instance id held twice"
        if group.state == "Stable":
            assert group.leader in group.members


StaticGroupMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=30, deadline=None
)
test_static_group_machine = StaticGroupMachine.TestCase
