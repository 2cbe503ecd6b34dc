"""Cursus consumer groups (SPEC.md, area "groups")."""

from __future__ import annotations

from conformance.protocols.cursus.messages import GEN_MISMATCH, REBALANCE_REQUIRED, Command
from conformance.suite.case import case, require
from conformance.suite.cursus.verify import (
    create_topic,
    expect_ok,
    expect_rebalance,
    fetch_offset,
    join,
    reply_payload,
    send,
    stale_member,
    sync,
)
from conformance.suite.target import CaseContext


@case("cursus/groups/1", "CUR-GROUP-1", "CUR-CONV-4")
def test_join_registers_each_consumer_as_a_member(target: CaseContext) -> None:
    """JOIN_GROUP registers the member; each join gets its own member id.

    CUR-GROUP-1: "`JOIN_GROUP <topic> <group> <consumerId>` registers the consumer as a member of
    the group."

    CUR-CONV-4: "... member ids are unique per join."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "join")
        group = target.name("g")
        a, gen_a = join(target, conn, topic, group, "alice")
        b, gen_b = join(target, conn, topic, group, "bob")
        require(a != b, "CUR-CONV-4", f"two joins got the same member id {a!r}")
        require(gen_b > gen_a, "CUR-CONV-4", f"generation went {gen_a} -> {gen_b} on a join")
        both = sync(target, conn, topic, group, a, gen_b, requirement="CUR-GROUP-1")
        both += sync(target, conn, topic, group, b, gen_b, requirement="CUR-GROUP-1")
        require(both == [0], "CUR-GROUP-1", f"the two members were assigned {both} of [0]")


@case("cursus/groups/2", "CUR-GROUP-2", "CUR-CONV-5")
def test_assignments_cover_every_partition_exactly_once(target: CaseContext) -> None:
    """The assignments of all members of one generation cover every partition once.

    CUR-GROUP-2: "`SYNC_GROUP` returns the member's partition assignment; the assignments of all
    members of one generation cover every partition of the topic exactly once."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "assign", partitions=5)
        group = target.name("g")
        members = [join(target, conn, topic, group, f"c{i}")[0] for i in range(3)]
        last, gen = join(target, conn, topic, group, "c3")
        members.append(last)
        parts: list[int] = []
        for m in members:
            parts += sync(target, conn, topic, group, m, gen)
        require(
            sorted(parts) == [0, 1, 2, 3, 4],
            "CUR-GROUP-2",
            f"4 members of a 5-partition topic were assigned {sorted(parts)}",
        )


@case("cursus/groups/3", "CUR-GROUP-3")
def test_leave_removes_the_member_and_rebalances(target: CaseContext) -> None:
    """LEAVE_GROUP removes the member and triggers a rebalance.

    CUR-GROUP-3: "`LEAVE_GROUP` removes the member and triggers a rebalance: the leaver's member id
    no longer gets an assignment, and the generation the members held before the leave is out of
    date."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "leave", partitions=2)
        group = target.name("g")
        a, _ = join(target, conn, topic, group, "alice")
        b, gen = join(target, conn, topic, group, "bob")
        sync(target, conn, topic, group, a, gen)
        sync(target, conn, topic, group, b, gen)
        expect_ok(
            target,
            conn,
            Command("LEAVE_GROUP", (topic, group, "alice")),
            "CUR-GROUP-3",
            "LEAVE_GROUP alice",
        )
        gone = Command("SYNC_GROUP", (topic, group, a, gen))
        send(conn, gone)
        payload = reply_payload(target, conn, "CUR-GROUP-3", "SYNC_GROUP of the member that left")
        require(
            not payload.startswith(b"OK"),
            "CUR-GROUP-3",
            f"the member that left still syncs: {payload[:80]!r}",
        )
        expect_rebalance(
            target,
            conn,
            Command("SYNC_GROUP", (topic, group, b, gen)),
            "CUR-GROUP-3",
            "SYNC_GROUP of the remaining member at the pre-leave generation",
        )


@case("cursus/groups/4", "CUR-GROUP-4", "CUR-ERR-2")
def test_a_stale_heartbeat_is_told_to_rebalance(target: CaseContext) -> None:
    """A HEARTBEAT with an out-of-date generation gets REBALANCE_REQUIRED or GEN_MISMATCH.

    CUR-GROUP-4: "a HEARTBEAT from a member whose generation is out of date (the group rebalanced
    since) is answered with REBALANCE_REQUIRED or GEN_MISMATCH, not with plain success."
    """
    with target.connect() as conn:
        topic, group, a, gen_a = stale_member(target, conn, "hb")
        cmd = Command("HEARTBEAT", (topic, group, "alice", a, gen_a))
        expect_rebalance(target, conn, cmd, "CUR-GROUP-4", "HEARTBEAT after another member joined")


@case("cursus/groups/5", "CUR-GROUP-5")
def test_a_current_heartbeat_succeeds(target: CaseContext) -> None:
    """A HEARTBEAT from a current member with the current generation succeeds.

    CUR-GROUP-5: "a HEARTBEAT from a current member with the current generation succeeds (no error,
    no rebalance)."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "hbok")
        group = target.name("g")
        a, gen = join(target, conn, topic, group, "alice")
        for _ in range(3):
            cmd = Command("HEARTBEAT", (topic, group, "alice", a, gen))
            expect_ok(target, conn, cmd, "CUR-GROUP-5", "HEARTBEAT at the current generation")


@case("cursus/groups/6", "CUR-GROUP-6", "CUR-ERR-2")
def test_a_stale_sync_gets_gen_mismatch_as_text(target: CaseContext) -> None:
    """SYNC_GROUP with an out-of-date generation gets GEN_MISMATCH, a text reply (not JSON).

    CUR-GROUP-6: "SYNC_GROUP ... with an out-of-date generation is answered with GEN_MISMATCH (or
    REBALANCE_REQUIRED) ..."

    CUR-ERR-2: "the special replies carry their keyword verbatim (NOT_LEADER, REBALANCE_REQUIRED,
    GEN_MISMATCH) in a text reply, not JSON."
    """
    with target.connect() as conn:
        topic, group, a, gen_a = stale_member(target, conn, "stale")
        send(conn, Command("SYNC_GROUP", (topic, group, a, gen_a)))
        payload = reply_payload(target, conn, "CUR-GROUP-6", "SYNC_GROUP at a stale generation")
        keyword = any(k.encode() in payload for k in (GEN_MISMATCH, REBALANCE_REQUIRED))
        require(keyword, "CUR-GROUP-6", f"a stale SYNC_GROUP got {payload[:80]!r}")
        require(payload[:1] != b"{", "CUR-ERR-2", f"the special reply is JSON: {payload[:80]!r}")


@case("cursus/groups/7", "CUR-GROUP-6", "CUR-CONV-7")
def test_a_stale_batch_commit_is_refused_and_commits_nothing(target: CaseContext) -> None:
    """BATCH_COMMIT at an out-of-date generation gets GEN_MISMATCH and commits nothing.

    CUR-GROUP-6: "... BATCH_COMMIT with an out-of-date generation is answered with GEN_MISMATCH (or
    REBALANCE_REQUIRED), and a BATCH_COMMIT so refused commits nothing."
    """
    with target.connect() as conn:
        topic, group, a, gen_a = stale_member(target, conn, "stalebc")
        cmd = Command("BATCH_COMMIT", (topic, group, a, gen_a, ((0, 0),)))
        expect_rebalance(target, conn, cmd, "CUR-GROUP-6", "BATCH_COMMIT at a stale generation")
        offset = fetch_offset(target, conn, topic, group, 0)
        require(offset == -1, "CUR-GROUP-6", f"the refused BATCH_COMMIT committed offset {offset}")


@case("cursus/groups/8", "CUR-CONV-5")
def test_a_member_without_partitions_gets_an_empty_assignment(target: CaseContext) -> None:
    """SYNC_GROUP answers assignment= with an empty list for a member with no partition.

    CUR-CONV-5: "SYNC_GROUP is answered `OK generation=<n> assignment=<p>,<p>...` (an empty list
    when the member gets no partition)."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "empty")
        group = target.name("g")
        a, _ = join(target, conn, topic, group, "alice")
        b, gen = join(target, conn, topic, group, "bob")
        got = sorted(
            [sync(target, conn, topic, group, a, gen), sync(target, conn, topic, group, b, gen)]
        )
        require(got == [[], [0]], "CUR-CONV-5", f"assignments {got}")
