"""Cursus consumer groups (SPEC.md, area "groups")."""

from __future__ import annotations

from conformance.protocols.cursus.messages import GEN_MISMATCH, REBALANCE_REQUIRED, Command
from conformance.suite.case import case, require
from conformance.suite.cursus.group_steps import fetch_offset, join, stale_member, sync
from conformance.suite.cursus.verify import (
    create_topic,
    evidence_of,
    expect_ok,
    expect_rebalance,
    kind_of_payload,
    reply_payload,
    send,
    shown,
)
from conformance.suite.shown import joined, show, show_all
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
        a = join(target, conn, topic, group, "alice")
        b = join(target, conn, topic, group, "bob")
        require(
            a.reply.id != b.reply.id,
            "CUR-CONV-4",
            f"two joins got the same member id {show(a.reply.id)}, expected one each",
            a.at("member") + b.at("member"),
        )
        gen_a, gen = a.reply.generation, b.reply.generation
        require(
            gen > gen_a,
            "CUR-CONV-4",
            f"generation went {gen_a} -> {gen} on a join, expected it to grow",
            a.at("generation") + b.at("generation"),
        )
        syncs = [
            sync(target, conn, topic, group, m.reply.id, gen, requirement="CUR-GROUP-1")
            for m in (a, b)
        ]
        both = syncs[0].reply + syncs[1].reply
        require(
            both == [0],
            "CUR-GROUP-1",
            f"the two members were assigned partitions {show_all(both)}, expected 0 once",
            syncs[0].at("assignment") + syncs[1].at("assignment"),
        )


@case("cursus/groups/2", "CUR-GROUP-2", "CUR-CONV-5")
def test_assignments_cover_every_partition_exactly_once(target: CaseContext) -> None:
    """The assignments of all members of one generation cover every partition once.

    CUR-GROUP-2: "`SYNC_GROUP` returns the member's partition assignment; the assignments of all
    members of one generation cover every partition of the topic exactly once."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "assign", partitions=5)
        group = target.name("g")
        members = [join(target, conn, topic, group, f"c{i}").reply.id for i in range(3)]
        last = join(target, conn, topic, group, "c3").reply
        members.append(last.id)
        syncs = [sync(target, conn, topic, group, m, last.generation) for m in members]
        parts = sorted(p for s in syncs for p in s.reply)
        require(
            parts == [0, 1, 2, 3, 4],
            "CUR-GROUP-2",
            f"4 members of a 5-partition topic were assigned partitions {show_all(parts)}, "
            "expected 0, 1, 2, 3, 4",
            evidence_of(*syncs, field="assignment"),
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
        a = join(target, conn, topic, group, "alice").reply.id
        b, gen = join(target, conn, topic, group, "bob").reply
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
        read = reply_payload(target, conn, "CUR-GROUP-3", "SYNC_GROUP of the member that left")
        require(
            not read.payload.startswith(b"OK"),
            "CUR-GROUP-3",
            f"the member that left still syncs: {shown(read)}, expected an error or a rebalance",
            read.at("word0", asked=("memberId",)),
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
        topic, group, alice = stale_member(target, conn, "hb")
        cmd = Command("HEARTBEAT", (topic, group, "alice", alice.id, alice.generation))
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
        a, gen = join(target, conn, topic, group, "alice").reply
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
        topic, group, alice = stale_member(target, conn, "stale")
        send(conn, Command("SYNC_GROUP", (topic, group, alice.id, alice.generation)))
        read = reply_payload(target, conn, "CUR-GROUP-6", "SYNC_GROUP at a stale generation")
        keyword = any(k.encode() in read.payload for k in (GEN_MISMATCH, REBALANCE_REQUIRED))
        require(
            keyword,
            "CUR-GROUP-6",
            f"a stale SYNC_GROUP got {shown(read)}, expected GEN_MISMATCH or REBALANCE_REQUIRED",
            read.at(*kind_of_payload(read.payload), asked=("generation",)),
        )
        require(
            read.payload[:1] != b"{",
            "CUR-ERR-2",
            f"the special reply is JSON: {shown(read)}, expected a text reply",
            read.at(*kind_of_payload(read.payload)),
        )


@case("cursus/groups/7", "CUR-GROUP-6", "CUR-CONV-7")
def test_a_stale_batch_commit_is_refused_and_commits_nothing(target: CaseContext) -> None:
    """BATCH_COMMIT at an out-of-date generation gets GEN_MISMATCH and commits nothing.

    CUR-GROUP-6: "... BATCH_COMMIT with an out-of-date generation is answered with GEN_MISMATCH (or
    REBALANCE_REQUIRED), and a BATCH_COMMIT so refused commits nothing."
    """
    with target.connect() as conn:
        topic, group, alice = stale_member(target, conn, "stalebc")
        cmd = Command("BATCH_COMMIT", (topic, group, alice.id, alice.generation, ((0, 0),)))
        refused = expect_rebalance(
            target, conn, cmd, "CUR-GROUP-6", "BATCH_COMMIT at a stale generation"
        )
        offset = fetch_offset(target, conn, topic, group, 0)
        require(
            offset.reply == -1,
            "CUR-GROUP-6",
            f"after the refused BATCH_COMMIT, FETCH_OFFSET answers offset={offset.reply},"
            " expected -1 (nothing committed)",
            refused.at("word0") + offset.at("offset"),
        )


@case("cursus/groups/8", "CUR-CONV-5")
def test_a_member_without_partitions_gets_an_empty_assignment(target: CaseContext) -> None:
    """SYNC_GROUP answers assignment= with an empty list for a member with no partition.

    CUR-CONV-5: "SYNC_GROUP is answered `OK generation=<n> assignment=<p>,<p>...` (an empty list
    when the member gets no partition)."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "empty")
        group = target.name("g")
        a = join(target, conn, topic, group, "alice").reply.id
        b, gen = join(target, conn, topic, group, "bob").reply
        syncs = [sync(target, conn, topic, group, m, gen) for m in (a, b)]
        got = sorted(s.reply for s in syncs)
        require(
            got == [[], [0]],
            "CUR-CONV-5",
            f"assignments {joined((show_all(a, empty='empty') for a in got), sep='; ')}, "
            "expected empty; 0",
            evidence_of(*syncs, field="assignment"),
        )
