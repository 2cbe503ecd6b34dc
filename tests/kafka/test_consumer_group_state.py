"""The KIP-848 coordinator without a socket: the reconciliation table, the assignors,
and :class:`ConsumerGroups` driven by heartbeats and an injected clock (joins, revocation
before assignment, fencing, a lost response, static members, session and rebalance
timeouts, the member checks of OffsetCommit and OffsetFetch)."""

from __future__ import annotations

import itertools

import pytest

from conformance.protocols.kafka import consumer_group_state as cgs
from conformance.protocols.kafka.consumer_group import (
    ConsumerGroups,
    GroupError,
    Heartbeat,
    HeartbeatResult,
)
from conformance.protocols.kafka.consumer_group_assignors import range_, uniform

TOPICS = {"t": ("tid-t", 4), "u": ("tid-u", 2)}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def groups(clock: Clock) -> ConsumerGroups:
    return ConsumerGroups(clock, lambda names: {n: TOPICS[n] for n in names if n in TOPICS})


def _join(groups: ConsumerGroups, member: str, topics: list[str], **kw: object) -> HeartbeatResult:
    hb = Heartbeat(
        "g",
        member,
        0,
        rebalance_timeout_ms=5000,
        subscribed_topic_names=topics,
        owned={},
        **kw,  # type: ignore[arg-type]
    )
    return groups.heartbeat(hb, create=lambda: None)


def _beat(
    groups: ConsumerGroups, member: str, epoch: int, owned: cgs.Partitions | None, **kw: object
) -> HeartbeatResult:
    return groups.heartbeat(Heartbeat("g", member, epoch, owned=owned, **kw), create=lambda: None)  # type: ignore[arg-type]


def _owned(r: HeartbeatResult, before: cgs.Partitions) -> cgs.Partitions:
    return before if r.assignment is None else r.assignment


def _settle(groups: ConsumerGroups, member: str, r: HeartbeatResult) -> cgs.Partitions:
    """Heartbeat a few times as a consumer does (owning what it was last told); what it
    owns then.  (A partition the member itself is revoking counts as owned by it until
    its next heartbeat, as in Kafka: it can take a round more.)"""
    owned = _owned(r, {})
    for _ in range(3):
        r = _beat(groups, member, r.member_epoch, owned)
        owned = _owned(r, owned)
    return owned


# ------------------------------------------------------------------ the table


def test_every_state_and_event_has_a_transition_but_unknown() -> None:
    for state, event in itertools.product(cgs.MEMBER_STATES, cgs.EVENTS):
        if state == cgs.UNKNOWN:
            assert (state, event) not in cgs.TRANSITIONS
        else:
            assert cgs.TRANSITIONS[state, event] in cgs.MEMBER_STATES


def test_a_step_the_table_lacks_names_group_member_state_and_event() -> None:
    with pytest.raises(cgs.InvalidTransition, match=r"'g'.*'m'.*'revoke'.*UNKNOWN"):
        cgs.step("g", "m", cgs.UNKNOWN, cgs.REVOKE)


# ------------------------------------------------------------------ assignors


@pytest.mark.parametrize("assignor", [uniform, range_])
@pytest.mark.parametrize("count", [1, 2, 3, 5])
def test_an_assignor_gives_every_partition_once_and_balances(assignor: object, count: int) -> None:
    members = {f"m{i}": ["t"] for i in range(count)}
    got = assignor(members, {"t": ("tid-t", 4)}, {})  # type: ignore[operator]
    parts = [p for m in got.values() for p in m.get("tid-t", ())]
    assert sorted(parts) == [0, 1, 2, 3]
    sizes = [len(m.get("tid-t", ())) for m in got.values()]
    assert max(sizes) - min(sizes) <= 1


def test_uniform_is_sticky_when_a_member_joins() -> None:
    first = uniform({"a": ["t"], "b": ["t"]}, {"t": ("x", 4)}, {})
    second = uniform({"a": ["t"], "b": ["t"], "c": ["t"]}, {"t": ("x", 4)}, first)
    for m in ("a", "b"):  # nobody is given a partition another kept
        assert second[m]["x"] <= first[m]["x"]
    assert sorted(len(second[m].get("x", ())) for m in second) == [1, 1, 2]


def test_range_gives_contiguous_ranges_in_member_order() -> None:
    got = range_({"b": ["t"], "a": ["t"]}, {"t": ("x", 5)}, {})
    assert got == {"a": {"x": {0, 1, 2}}, "b": {"x": {3, 4}}}


# ------------------------------------------------------------------ the coordinator


def test_a_join_makes_epoch_1_and_assigns_everything(groups: ConsumerGroups) -> None:
    r = _join(groups, "", ["t"])
    assert r.member_id and r.member_epoch == 1 and r.heartbeat_interval_ms > 0
    assert r.assignment == {"tid-t": {0, 1, 2, 3}}
    group = groups.group("g")
    assert group is not None and group.state == cgs.GROUP_STABLE


def test_a_partition_moves_only_after_its_owner_revoked_it(groups: ConsumerGroups) -> None:
    a = _join(groups, "a", ["t"])
    b = _join(groups, "b", ["t"])
    assert b.member_epoch == 2 and b.assignment == {}  # all still owned by a
    group = groups.group("g")
    assert group is not None and group.state == cgs.GROUP_RECONCILING
    a2 = _beat(groups, "a", a.member_epoch, a.assignment)
    assert a2.member_epoch == 1  # revoking: epoch kept, kept partitions only
    kept = _owned(a2, {})
    assert sum(len(p) for p in kept.values()) == 2
    b2 = _beat(groups, "b", b.member_epoch, {})
    assert not b2.assignment  # a still owns what b is to get
    a3 = _beat(groups, "a", a2.member_epoch, kept)
    assert a3.member_epoch == 2
    b3 = _beat(groups, "b", b.member_epoch, {})
    assert b3.assignment is not None
    assert b3.assignment["tid-t"] | kept["tid-t"] == {0, 1, 2, 3}
    assert not b3.assignment["tid-t"] & kept["tid-t"]
    assert group.state == cgs.GROUP_STABLE


def test_an_epoch_the_member_never_had_is_fenced(groups: ConsumerGroups) -> None:
    a = _join(groups, "a", ["t"])
    with pytest.raises(GroupError) as err:
        _beat(groups, "a", a.member_epoch + 1, None)
    assert err.value.error == "FENCED_MEMBER_EPOCH"


def test_the_previous_epoch_with_owned_partitions_inside_is_accepted(
    groups: ConsumerGroups,
) -> None:
    """A lost response: the member comes back with its previous epoch (0) and owns
    nothing outside its assignment."""
    _join(groups, "a", ["t"])
    r = _beat(groups, "a", 0, {})
    assert r.member_epoch == 1
    with pytest.raises(GroupError) as err:
        _beat(groups, "a", 0, None)  # owned null: not a subset, fenced
    assert err.value.error == "FENCED_MEMBER_EPOCH"


def test_unknown_member_and_unknown_group(groups: ConsumerGroups) -> None:
    _join(groups, "a", ["t"])
    with pytest.raises(GroupError, match="not a member") as err:
        _beat(groups, "x", 1, None)
    assert err.value.error == "UNKNOWN_MEMBER_ID"
    with pytest.raises(GroupError) as err:
        groups.heartbeat(Heartbeat("other", "x", 3), create=lambda: None)
    assert err.value.error == "GROUP_ID_NOT_FOUND"


def test_a_leave_frees_the_partitions(groups: ConsumerGroups) -> None:
    a = _join(groups, "a", ["t"])
    b = _join(groups, "b", ["t"])
    left = _beat(groups, "b", -1, None)
    assert (left.member_id, left.member_epoch) == ("b", -1)
    assert b.member_epoch == 2
    assert _settle(groups, "a", a) == {"tid-t": {0, 1, 2, 3}}
    group = groups.group("g")
    assert group is not None and group.group_epoch == 3


def test_a_static_member_leaves_for_now_and_comes_back(groups: ConsumerGroups) -> None:
    a = _join(groups, "a", ["t"], instance_id="i")
    with pytest.raises(GroupError) as err:
        _join(groups, "a2", ["t"], instance_id="i")
    assert err.value.error == "UNRELEASED_INSTANCE_ID"
    gone = _beat(groups, "a", -2, None, instance_id="i")
    assert gone.member_epoch == -2
    back = _join(groups, "a2", ["t"], instance_id="i")
    assert back.member_id == "a2" and back.assignment == a.assignment
    with pytest.raises(GroupError) as err:
        _beat(groups, "a", 1, None, instance_id="i")
    assert err.value.error == "FENCED_INSTANCE_ID"


def test_a_silent_member_is_removed_after_its_session(groups: ConsumerGroups, clock: Clock) -> None:
    a = _join(groups, "a", ["t"])
    _join(groups, "b", ["t"])
    clock.now = groups.session_timeout_ms / 1000 - 1
    a = _beat(groups, "a", a.member_epoch, a.assignment)
    clock.now += 2  # b's session is over; a's is not
    owned = _settle(groups, "a", a)
    group = groups.group("g")
    assert group is not None and set(group.members) == {"a"}
    assert owned == {"tid-t": {0, 1, 2, 3}}


def test_a_member_that_does_not_revoke_in_time_is_removed(
    groups: ConsumerGroups, clock: Clock
) -> None:
    a = _join(groups, "a", ["t"])
    _join(groups, "b", ["t"])
    _beat(groups, "a", a.member_epoch, a.assignment)  # told to revoke two, does not
    clock.now += 6  # past a's rebalance timeout (5 s), within b's session
    group = groups.group("g")
    assert group is not None and set(group.members) == {"b"}


def test_a_changed_subscription_bumps_the_group_epoch(groups: ConsumerGroups) -> None:
    a = _join(groups, "a", ["t"])
    r = _beat(groups, "a", a.member_epoch, a.assignment, subscribed_topic_names=["t", "u"])
    assert r.member_epoch == 2
    assert r.assignment == {"tid-t": {0, 1, 2, 3}, "tid-u": {0, 1}}


def test_offset_commit_and_fetch_checks(groups: ConsumerGroups) -> None:
    a = _join(groups, "a", ["t"])
    assert groups.check_commit("g", "a", a.member_epoch, 9) == "NONE"
    assert groups.check_commit("g", "a", a.member_epoch + 1, 9) == "STALE_MEMBER_EPOCH"
    assert groups.check_commit("g", "a", a.member_epoch, 8) == "UNSUPPORTED_VERSION"
    assert groups.check_commit("g", "zz", a.member_epoch, 9) == "UNKNOWN_MEMBER_ID"
    assert groups.check_commit("g", "", -1, 9) == "UNKNOWN_MEMBER_ID"  # members: no simple commit
    assert groups.check_commit("nope", "", -1, 9) == "NONE"
    assert groups.check_fetch("g", None, -1) == "NONE"
    assert groups.check_fetch("g", "a", a.member_epoch - 1) == "STALE_MEMBER_EPOCH"
    assert groups.check_fetch("g", "zz", 1) == "UNKNOWN_MEMBER_ID"


def test_an_empty_group_gives_up_its_id(groups: ConsumerGroups) -> None:
    _join(groups, "a", ["t"])
    assert not groups.delete_if_empty("g")
    _beat(groups, "a", -1, None)
    assert groups.delete_if_empty("g") and not groups.is_consumer("g")
