"""Consumer groups (join, sync, heartbeat, leave, expiry), assignors, committed offsets, and
the group policies of the one group model (a V1-like and an Iggy-like one)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from conformance.engine import (
    ASSIGNORS,
    CommitCheck,
    Creation,
    Engine,
    EngineError,
    GroupInfo,
    GroupPolicy,
    HeartbeatStatus,
    MemberIds,
    NewRecord,
    Reaping,
    range_assign,
    roundrobin_assign,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def engine(clock: FakeClock) -> Engine:
    e = Engine(session_timeout_s=10.0, clock=clock)
    e.create_topic("t", 4)
    e.create_topic("u", 3)
    return e


def code(call: Callable[[], object]) -> str:
    with pytest.raises(EngineError) as exc:
        call()
    return exc.value.code


# ------------------------------------------------------------------ assignors

ASSIGNOR_TABLE = [
    # (assignor, partitions, members, expected)
    ("range", 4, ["a"], {"a": [0, 1, 2, 3]}),
    ("range", 4, ["a", "b"], {"a": [0, 1], "b": [2, 3]}),
    ("range", 5, ["a", "b"], {"a": [0, 1, 2], "b": [3, 4]}),
    ("range", 7, ["a", "b", "c"], {"a": [0, 1, 2], "b": [3, 4], "c": [5, 6]}),
    ("range", 2, ["a", "b", "c"], {"a": [0], "b": [1], "c": []}),
    ("range", 3, [], {}),
    ("roundrobin", 4, ["a"], {"a": [0, 1, 2, 3]}),
    ("roundrobin", 5, ["a", "b"], {"a": [0, 2, 4], "b": [1, 3]}),
    ("roundrobin", 7, ["a", "b", "c"], {"a": [0, 3, 6], "b": [1, 4], "c": [2, 5]}),
    ("roundrobin", 2, ["a", "b", "c"], {"a": [0], "b": [1], "c": []}),
    ("roundrobin", 3, [], {}),
]


@pytest.mark.parametrize(("name", "partitions", "members", "expected"), ASSIGNOR_TABLE)
def test_assignor_table(
    name: str, partitions: int, members: list[str], expected: dict[str, list[int]]
) -> None:
    assert ASSIGNORS[name](partitions, members) == expected


@pytest.mark.parametrize("assign", [range_assign, roundrobin_assign])
@pytest.mark.parametrize(("partitions", "n_members"), [(1, 1), (10, 3), (3, 10), (64, 7)])
def test_assignors_cover_every_partition_once_and_balance(
    assign: Callable[[int, list[str]], dict[str, list[int]]], partitions: int, n_members: int
) -> None:
    members = [f"m{i:02}" for i in range(n_members)]
    result = assign(partitions, members)
    dealt = sorted(p for ps in result.values() for p in ps)
    assert dealt == list(range(partitions))
    sizes = [len(result[m]) for m in members]
    assert max(sizes) - min(sizes) <= 1
    assert sizes == sorted(sizes, reverse=True)  # earlier members get the extra ones


def test_sync_uses_the_configured_assignor(clock: FakeClock) -> None:
    for name, expected in (("range", [0, 1, 2]), ("roundrobin", [0, 2, 4])):
        e = Engine(assignor=name, clock=clock)
        e.create_topic("t", 5)
        a = e.join_group("g", "t", "a")
        b = e.join_group("g", "t", "b")
        assert e.sync_group("g", a.member_id, b.generation) == {"t": expected}


# --------------------------------------------------------------------- groups


def test_join_gives_unique_member_ids_and_new_generations(engine: Engine) -> None:
    a = engine.join_group("g", "t", "c")
    b = engine.join_group("g", "t", "c")
    assert (a.member_id, a.generation, a.members) == ("c-1", 1, ("c-1",))
    assert (b.member_id, b.generation, b.members) == ("c-2", 2, ("c-1", "c-2"))
    engine.leave_group("g", "c-2")
    c = engine.join_group("g", "t", "c")
    assert (c.member_id, c.generation) == ("c-3", 4)  # ids are never reused
    assert engine.members_of("g", "c") == ["c-1", "c-3"]
    assert engine.members_of("g", "other") == []
    assert engine.members_of("no-group", "c") == []


def test_join_checks_its_arguments(engine: Engine) -> None:
    assert code(lambda: engine.join_group("g", "nope", "c")) == "UNKNOWN_TOPIC"
    assert code(lambda: engine.join_group("", "t", "c")) == "INVALID_ARGUMENT"
    assert code(lambda: engine.join_group("g", "t", "")) == "INVALID_ARGUMENT"
    assert engine.members_of("g", "c") == []


def test_sync_returns_each_members_share_of_every_subscribed_topic(engine: Engine) -> None:
    a = engine.join_group("g", "t", "a")
    engine.subscribe("g", "u")
    b = engine.join_group("g", "t", "b")
    gen = b.generation
    assert engine.sync_group("g", a.member_id, gen) == {"t": [0, 1], "u": [0, 1]}
    assert engine.sync_group("g", b.member_id, gen) == {"t": [2, 3], "u": [2]}


def test_sync_errors(engine: Engine) -> None:
    a = engine.join_group("g", "t", "a")
    assert code(lambda: engine.sync_group("nope", a.member_id, 1)) == "UNKNOWN_GROUP"
    assert code(lambda: engine.sync_group("g", "ghost-9", 1)) == "UNKNOWN_MEMBER"
    engine.join_group("g", "t", "b")
    assert code(lambda: engine.sync_group("g", a.member_id, 1)) == "GENERATION_MISMATCH"
    assert code(lambda: engine.sync_group("g", a.member_id, 3)) == "GENERATION_MISMATCH"
    assert code(lambda: engine.sync_group("g", a.member_id, -1)) == "GENERATION_MISMATCH"


def test_heartbeat_reports_rebalances(engine: Engine) -> None:
    a = engine.join_group("g", "t", "a")
    assert engine.heartbeat("g", a.member_id, 1) is HeartbeatStatus.OK
    engine.join_group("g", "t", "b")
    assert engine.heartbeat("g", a.member_id, 1) is HeartbeatStatus.REBALANCE_REQUIRED
    assert engine.heartbeat("g", a.member_id, 2) is HeartbeatStatus.OK
    assert code(lambda: engine.heartbeat("g", a.member_id, 3)) == "GENERATION_MISMATCH"
    assert engine.heartbeat("g", a.member_id, 0) is HeartbeatStatus.REBALANCE_REQUIRED
    # a generation below 0 no group has: not out of date (REBALANCE_REQUIRED), a mismatch
    assert code(lambda: engine.heartbeat("g", a.member_id, -1)) == "GENERATION_MISMATCH"
    assert code(lambda: engine.heartbeat("g", a.member_id, -(2**63))) == "GENERATION_MISMATCH"
    assert code(lambda: engine.heartbeat("g", "ghost-1", 2)) == "UNKNOWN_MEMBER"
    assert code(lambda: engine.heartbeat("nope", a.member_id, 2)) == "UNKNOWN_GROUP"


def test_leave_bumps_generation_and_checks_ids(engine: Engine) -> None:
    a = engine.join_group("g", "t", "a")
    engine.leave_group("g", a.member_id)
    assert engine.group_generation("g") == 2
    assert engine.members_of("g", "a") == []
    assert code(lambda: engine.leave_group("g", a.member_id)) == "UNKNOWN_MEMBER"
    assert code(lambda: engine.leave_group("nope", a.member_id)) == "UNKNOWN_GROUP"
    assert code(lambda: engine.group_generation("nope")) == "UNKNOWN_GROUP"


def test_subscribe_creates_the_group_without_a_rebalance(engine: Engine) -> None:
    engine.subscribe("g", "t")
    engine.subscribe("g", "t")
    assert engine.group_generation("g") == 0
    a = engine.join_group("g", "u", "a")
    assert engine.sync_group("g", a.member_id, a.generation) == {"t": [0, 1, 2, 3], "u": [0, 1, 2]}
    assert code(lambda: engine.subscribe("g", "nope")) == "UNKNOWN_TOPIC"


def test_silent_members_expire(engine: Engine, clock: FakeClock) -> None:
    a = engine.join_group("g", "t", "a")
    b = engine.join_group("g", "t", "b")
    clock.now += 6
    assert engine.heartbeat("g", a.member_id, b.generation) is HeartbeatStatus.OK
    clock.now += 5  # b silent for 11 s, a for 5 s
    assert engine.expire_members() == [b.member_id]
    assert engine.group_generation("g") == 3
    assert engine.expire_members() == []
    assert engine.group_generation("g") == 3


def test_expiry_is_lazy_at_the_start_of_group_operations(engine: Engine, clock: FakeClock) -> None:
    a = engine.join_group("g", "t", "a")
    clock.now += 10.5
    assert code(lambda: engine.heartbeat("g", a.member_id, 1)) == "UNKNOWN_MEMBER"
    assert engine.group_generation("g") == 2


def test_sync_refreshes_the_session(engine: Engine, clock: FakeClock) -> None:
    a = engine.join_group("g", "t", "a")
    for _ in range(3):
        clock.now += 8
        engine.sync_group("g", a.member_id, 1)
    assert engine.members_of("g", "a") == [a.member_id]
    clock.now += 10  # exactly the timeout is not yet over
    assert engine.members_of("g", "a") == [a.member_id]


# -------------------------------------------------------------------- offsets


def fill(engine: Engine, topic: str, partition: int, n: int) -> None:
    engine.append(topic, partition, [NewRecord(b"", b"%d" % i) for i in range(n)])


def test_commit_and_fetch(engine: Engine) -> None:
    fill(engine, "t", 0, 3)
    assert engine.committed("g", "t", 0) is None
    engine.commit("g", "t", 0, 3)
    engine.commit("g", "t", 0, 1)  # going back is allowed
    assert engine.committed("g", "t", 0) == 1
    assert engine.committed("g", "t", 1) is None
    assert engine.committed("other", "t", 0) is None
    assert engine.group_generation("g") == 0  # commit created the group


def test_an_offset_past_the_high_watermark_may_be_committed(engine: Engine) -> None:
    fill(engine, "t", 0, 2)
    engine.commit("g", "t", 0, 3)
    assert engine.committed("g", "t", 0) == 3
    engine.commit("g", "t", 1, 2**63 - 1)  # the largest int64, on an empty partition
    assert engine.committed("g", "t", 1) == 2**63 - 1
    a = engine.join_group("h", "t", "a")
    engine.commit_many("h", "t", {0: 50, 1: 7}, a.member_id, a.generation)
    assert (engine.committed("h", "t", 0), engine.committed("h", "t", 1)) == (50, 7)


def test_commit_errors(engine: Engine) -> None:
    fill(engine, "t", 0, 2)
    assert code(lambda: engine.commit("g", "t", 0, -1)) == "OFFSET_OUT_OF_RANGE"
    assert code(lambda: engine.commit("g", "t", 0, 2**63)) == "OFFSET_OUT_OF_RANGE"
    assert code(lambda: engine.commit("g", "t", 9, 0)) == "UNKNOWN_PARTITION"
    assert code(lambda: engine.commit("g", "nope", 0, 0)) == "UNKNOWN_TOPIC"
    assert code(lambda: engine.group_generation("g")) == "UNKNOWN_GROUP"


def test_commit_many_checks_member_and_generation(engine: Engine) -> None:
    fill(engine, "t", 0, 5)
    a = engine.join_group("g", "t", "a")
    engine.commit_many("g", "t", {0: 4, 1: 0}, a.member_id, a.generation)
    assert (engine.committed("g", "t", 0), engine.committed("g", "t", 1)) == (4, 0)
    assert code(lambda: engine.commit_many("nope", "t", {0: 1}, a.member_id, 1)) == "UNKNOWN_GROUP"
    assert code(lambda: engine.commit_many("g", "t", {0: 1}, "ghost-1", 1)) == "UNKNOWN_MEMBER"
    assert (
        code(lambda: engine.commit_many("g", "t", {0: 1}, a.member_id, 2)) == "GENERATION_MISMATCH"
    )
    assert code(lambda: engine.commit_many("g", "nope", {0: 1}, a.member_id, 1)) == "UNKNOWN_TOPIC"
    assert engine.committed("g", "t", 0) == 4


@pytest.mark.parametrize(
    ("offsets", "expected"),
    [({0: 2, 1: -1}, "OFFSET_OUT_OF_RANGE"), ({0: 2, 7: 0}, "UNKNOWN_PARTITION")],
)
def test_commit_many_is_all_or_nothing(
    engine: Engine, offsets: dict[int, int], expected: str
) -> None:
    fill(engine, "t", 0, 3)
    a = engine.join_group("g", "t", "a")
    assert code(lambda: engine.commit_many("g", "t", offsets, a.member_id, 1)) == expected
    assert engine.committed("g", "t", 0) is None


def test_another_members_join_does_not_refresh_a_session(engine: Engine, clock: FakeClock) -> None:
    a = engine.join_group("g", "t", "a")
    clock.now += 8
    b = engine.join_group("g", "t", "b")
    clock.now += 3
    assert engine.expire_members() == [a.member_id]
    assert engine.members_of("g", "b") == [b.member_id]


def test_a_join_that_rebalances_refreshes_the_joiners_session(
    engine: Engine, clock: FakeClock
) -> None:
    """A GIVEN member joining again with another assignor is a join: its session restarts."""
    policy = GroupPolicy(member_ids=MemberIds.GIVEN)
    engine.join_group("g", "t", "a", policy=policy)
    clock.now += 8
    engine.join_group("g", "t", "a", policy=policy, assignor="roundrobin")
    clock.now += 8
    assert engine.expire_members() == []
    clock.now += 3
    assert engine.expire_members() == ["a"]


def test_a_policys_session_timeout_is_its_members(engine: Engine, clock: FakeClock) -> None:
    """session_timeout_s: members joined under the policy expire after it, others after the
    engine's (10 s here)."""
    short = GroupPolicy(member_ids=MemberIds.GIVEN, session_timeout_s=2.0)
    engine.join_group("g", "t", "quick", policy=short)
    engine.join_group("h", "t", "slow")
    clock.now += 3
    assert engine.expire_members() == ["quick"]
    clock.now += 8
    assert engine.expire_members() == ["slow-1"]
    with pytest.raises(ValueError, match="session_timeout_s"):
        GroupPolicy(session_timeout_s=0)


def test_one_topic_a_join_naming_another_topic_switches_the_group(engine: Engine) -> None:
    """one_topic: the group reads the last join's topic; the switch drops the others."""
    policy = GroupPolicy(member_ids=MemberIds.GIVEN, one_topic=True)
    engine.join_group("g", "t", "a", policy=policy)
    b = engine.join_group("g", "t", "b", policy=policy)
    moved = engine.join_group("g", "u", "b", policy=policy)
    assert moved.generation == b.generation + 1 and moved.members == ("b",)
    assert engine.group_info("g").topics == ("u",)
    assert engine.sync_group("g", "b", moved.generation) == {"u": [0, 1, 2]}
    with pytest.raises(EngineError) as owned:  # t is no longer the group's
        engine.commit_many("g", "t", {0: 1}, "b", moved.generation, policy=V1_LIKE)
    assert owned.value.code == "PARTITION_NOT_OWNED"
    again = engine.join_group("g", "u", "b", policy=policy)  # the same topic: nothing changes
    assert again.generation == moved.generation
    plain = engine.join_group("h", "t", "a")  # without one_topic a join adds a subscription
    engine.join_group("h", "u", "a")
    assert engine.group_info("h").topics == ("t", "u") and plain.generation == 1


# ------------------------------------------------------------- group policies
# One coordinator, rules as data (groups.py, "One group model").  Each test below names
# the policy field it relies on and compares with the default (Cursus) policy where the
# rule differs, so a policy field the coordinator ignored would fail it.

V1_LIKE = GroupPolicy(
    member_ids=MemberIds.GIVEN, first_generation=2, commit_check=CommitCheck.OWNERSHIP
)
IGGY_LIKE = GroupPolicy(
    member_ids=MemberIds.GIVEN,
    reaping=Reaping.CONNECTION,
    creation=Creation.EXPLICIT,
    assignor="roundrobin",
)


def test_a_policy_refuses_a_first_generation_below_1_and_an_unknown_assignor() -> None:
    with pytest.raises(ValueError, match="first_generation"):
        GroupPolicy(first_generation=0)
    with pytest.raises(ValueError, match="unknown assignor 'sticky'"):
        GroupPolicy(assignor="sticky")


def test_v1_member_ids_are_the_consumer_ids_and_a_new_group_starts_at_generation_2(
    engine: Engine,
) -> None:
    """member_ids=GIVEN, first_generation=2: JOIN answers generation 2 for a new group."""
    a = engine.join_group("g", "t", "c1", policy=V1_LIKE)
    assert (a.member_id, a.generation) == ("c1", 2)
    b = engine.join_group("g", "t", "c2", policy=V1_LIKE)
    assert (b.member_id, b.generation, b.members) == ("c2", 3, ("c1", "c2"))
    again = engine.join_group("g", "t", "c1", policy=V1_LIKE)  # a rejoin changes nothing
    assert (again.member_id, again.generation, again.members) == ("c1", 3, ("c1", "c2"))
    engine.leave_group("g", "c2")
    assert engine.join_group("g", "t", "c2", policy=V1_LIKE).generation == 5
    # the default policy, on another group: numbered ids from generation 1
    d = engine.join_group("h", "t", "c1")
    assert (d.member_id, d.generation) == ("c1-1", 1)


def test_v1_a_join_chooses_the_groups_assignor(engine: Engine) -> None:
    """assignor per join: the join's ``assignor=`` becomes the group's, kept by later joins."""
    engine.create_topic("five", 5)
    engine.join_group("g", "five", "a", policy=V1_LIKE, assignor="round_robin")
    b = engine.join_group("g", "five", "b", policy=V1_LIKE)
    assert engine.sync_group("g", "a", b.generation) == {"five": [0, 2, 4]}
    assert engine.group_info("g").assignor == "round_robin"
    c = engine.join_group("g", "five", "a", policy=V1_LIKE, assignor="range")
    assert c.generation == b.generation + 1  # a rejoin that changes the assignor rebalances
    assert engine.sync_group("g", "a", c.generation) == {"five": [0, 1, 2]}
    bad = lambda: engine.join_group("g", "five", "a", policy=V1_LIKE, assignor="sticky")  # noqa: E731
    assert code(bad) == "INVALID_ARGUMENT"


def test_a_policys_assignor_is_the_default_of_the_groups_it_creates(engine: Engine) -> None:
    """assignor (policy): the default of a group created under it; the engine's is range."""
    engine.create_topic("five", 5)
    dealt = GroupPolicy(assignor="roundrobin")
    for group, policy in (("rr", dealt), ("default", GroupPolicy())):
        engine.join_group(group, "five", "a", policy=policy)
        engine.join_group(group, "five", "b", policy=policy)
    assert engine.sync_group("rr", "a-1", 2) == {"five": [0, 2, 4]}
    assert engine.sync_group("default", "a-1", 2) == {"five": [0, 1, 2]}
    engine.commit("c", "five", 0, 0, policy=dealt)  # a commit that creates the group
    assert engine.group_info("c").assignor == "roundrobin"


def test_v1_a_commit_needs_the_generation_and_a_partition_the_member_owns(engine: Engine) -> None:
    """commit_check=OWNERSHIP: COMMIT must match the active generation and an owned partition."""
    fill(engine, "t", 2, 3)
    engine.join_group("g", "t", "a", policy=V1_LIKE)
    gen = engine.join_group("g", "t", "b", policy=V1_LIKE).generation  # range: a 0-1, b 2-3
    engine.commit_many("g", "t", {1: 7}, "a", gen, policy=V1_LIKE)
    assert engine.committed("g", "t", 1) == 7
    not_owned = lambda: engine.commit_many("g", "t", {1: 8, 2: 3}, "a", gen, policy=V1_LIKE)  # noqa: E731
    assert code(not_owned) == "PARTITION_NOT_OWNED"
    assert (engine.committed("g", "t", 1), engine.committed("g", "t", 2)) == (7, None)
    stale = lambda: engine.commit_many("g", "t", {1: 8}, "a", gen - 1, policy=V1_LIKE)  # noqa: E731
    assert code(stale) == "GENERATION_MISMATCH"
    # the default policy checks the generation only: the same commit of partition 2 passes
    engine.commit_many("g", "t", {2: 3}, "a", gen)
    assert engine.committed("g", "t", 2) == 3


def test_a_leave_with_a_generation_must_name_the_groups(engine: Engine) -> None:
    engine.join_group("g", "t", "a", policy=V1_LIKE)
    assert code(lambda: engine.leave_group("g", "a", generation=1)) == "GENERATION_MISMATCH"
    engine.leave_group("g", "a", generation=2)
    assert engine.members_of("g", "a") == []


def test_iggy_groups_exist_only_once_created(engine: Engine) -> None:
    """creation=EXPLICIT: join, subscribe and commit refuse a group nobody created."""
    assert code(lambda: engine.join_group("g", "t", "7", policy=IGGY_LIKE)) == "UNKNOWN_GROUP"
    assert code(lambda: engine.subscribe("g", "t", policy=IGGY_LIKE)) == "UNKNOWN_GROUP"
    assert code(lambda: engine.commit("g", "t", 0, 0, policy=IGGY_LIKE)) == "UNKNOWN_GROUP"
    assert engine.list_groups() == []
    info = engine.create_group("g", "t", policy=IGGY_LIKE)
    assert info == GroupInfo("g", 0, "roundrobin", ("t",), ())
    assert code(lambda: engine.create_group("g", "t", policy=IGGY_LIKE)) == "GROUP_EXISTS"
    assert code(lambda: engine.create_group("h", "nope", policy=IGGY_LIKE)) == "UNKNOWN_TOPIC"
    engine.join_group("g", "t", "7", policy=IGGY_LIKE)
    engine.commit("g", "t", 0, 5, policy=IGGY_LIKE)
    assert [g.name for g in engine.list_groups()] == ["g"]
    engine.delete_group("g")
    assert (engine.list_groups(), engine.committed("g", "t", 0)) == ([], None)
    assert code(lambda: engine.delete_group("g")) == "UNKNOWN_GROUP"
    # the default policy creates the group it needs
    engine.join_group("g", "t", "7")
    assert engine.group_generation("g") == 1


def test_iggy_members_have_no_session_and_leave_when_their_connection_ends(
    engine: Engine, clock: FakeClock
) -> None:
    """reaping=CONNECTION: no timeout; ``disconnect`` removes the client from its groups."""
    for name in ("g", "h"):
        engine.create_group(name, "t", policy=IGGY_LIKE)
        engine.join_group(name, "t", "7", policy=IGGY_LIKE)
        engine.join_group(name, "t", "8", policy=IGGY_LIKE)
    engine.join_group("cursus", "t", "7")  # a session member, consumer id "7" as well
    clock.now += 1000
    assert engine.expire_members() == ["7-1"]  # only the session member
    assert [m.member_id for m in engine.group_info("g").members] == ["7", "8"]
    engine.join_group("cursus", "t", "7")
    assert engine.disconnect("7") == ["g", "h"]
    assert [m.member_id for m in engine.group_info("h").members] == ["8"]
    assert engine.group_info("h").generation == 3
    assert engine.members_of("cursus", "7") == ["7-2"]  # a session member is not bound
    assert engine.disconnect("7") == []


@pytest.mark.parametrize(
    ("partitions", "clients", "expected"),
    [
        (5, ["1", "2"], {"1": [0, 2, 4], "2": [1, 3]}),
        (3, ["1", "2", "3", "4"], {"1": [0], "2": [1], "3": [2], "4": []}),
        (6, ["1", "2", "3"], {"1": [0, 3], "2": [1, 4], "3": [2, 5]}),
    ],
)
def test_iggy_the_server_deals_the_topics_partitions_evenly(
    clock: FakeClock, partitions: int, clients: list[str], expected: dict[str, list[int]]
) -> None:
    """assignor=roundrobin, the policy's: partition p goes to member p % members (by id),
    even though the engine's own assignor is range."""
    e = Engine(assignor="range", clock=clock)
    e.create_topic("t", partitions)
    e.create_group("g", "t", policy=IGGY_LIKE)
    for client in clients:
        e.join_group("g", "t", client, policy=IGGY_LIKE)
    got = {m.member_id: m.assignment["t"] for m in e.group_info("g").members}
    assert got == expected
    e.disconnect(clients[0])
    rest = {m.member_id: m.assignment["t"] for m in e.group_info("g").members}
    assert sorted(p for ps in rest.values() for p in ps) == list(range(partitions))
