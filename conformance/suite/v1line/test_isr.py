"""V1 line ISR and high watermark: which followers are in sync, under_replicated, and the hw
CONSUME is bounded by, with the suite playing the followers (SPEC.md, area "replication")."""

from __future__ import annotations

import time

from conformance.protocols.v1line.errors import BAD_REQUEST
from conformance.suite.case import Unsupported, case, require
from conformance.suite.shown import show
from conformance.suite.target import CaseContext
from conformance.suite.v1line.steps import (
    MARGIN_S,
    consume,
    followers,
    lag_timeout,
    min_isr,
    needs_two_followers,
    produce,
    produce_to,
    replication_factor,
    report,
    set_role,
    two_in_one_partition,
)
from conformance.suite.v1line.verify import (
    Reply,
    expect_error,
    real,
)

TRIES = 3
"""Attempts of a case whose few exchanges must end within the lag timeout to be judged."""


@case("v1line/replication/10", "V1L-REPL-10")
def test_the_isr_holds_the_leader_and_a_caught_up_follower(target: CaseContext) -> None:
    """A follower that reports the leader's last offset is listed in the isr, with 0.

    V1L-REPL-10: "the isr list always holds the leader 0, and a follower that has just reported
    the leader's last offset is in it."
    """
    with target.connect() as conn:
        topic = target.name("isr")
        put = produce(target, conn, topic, "k", "v", "V1L-REPL-10")
        for replica in followers(target):
            got = report(target, conn, topic, put.partition, replica, put.offset, "V1L-REPL-10")
            isr = got.ints("isr")
            require(
                0 in isr and replica in isr,
                "V1L-REPL-10",
                f"REPLICA_FETCH by replica {replica} at the leader's last offset {put.offset}:"
                f" isr=[{' '.join(map(str, isr))}], expected 0 and {replica} in it",
                got.at("isr", asked=("replica_id", "offset")),
            )


@case("v1line/replication/11", "V1L-REPL-11")
def test_a_silent_follower_leaves_the_isr_after_the_lag_timeout(target: CaseContext) -> None:
    """Follower 1 catches up, then says nothing for longer than the lag timeout: it is out of
    the isr.

    V1L-REPL-11: "a follower that reports nothing for longer than the replica lag timeout leaves
    the isr."
    """
    needs_two_followers(target)
    with target.connect() as conn:
        topic = target.name("lag")
        put = produce(target, conn, topic, "k", "v", "V1L-REPL-11")
        caught = report(target, conn, topic, put.partition, 1, put.offset, "V1L-REPL-11")
        require(
            1 in caught.ints("isr"),
            "V1L-REPL-10",
            f"REPLICA_FETCH by replica 1 at the leader's last offset {put.offset}:"
            f" isr=[{' '.join(map(str, caught.ints('isr')))}], expected 1 in it",
            caught.at("isr"),
        )
        time.sleep(lag_timeout(target) + MARGIN_S)
        later = report(target, conn, topic, put.partition, 2, put.offset, "V1L-REPL-11")
        require(
            1 not in later.ints("isr"),
            "V1L-REPL-11",
            f"replica 1 silent for {(lag_timeout(target) + MARGIN_S) * 1000:.0f} ms (lag"
            f" timeout {lag_timeout(target) * 1000:.0f} ms, --replica-lag-timeout-ms): isr="
            f"[{' '.join(map(str, later.ints('isr')))}] still lists replica 1, expected it out",
            caught.at("isr") + later.at("isr"),
        )


@case("v1line/replication/12", "V1L-REPL-12")
def test_under_replicated_follows_the_isr_size(target: CaseContext) -> None:
    """under_replicated is true while only the leader is in sync, false once every follower is.

    V1L-REPL-12: "under_replicated is true when the isr is smaller than min ISR and false when it
    holds every replica."
    """
    with target.connect() as conn:
        topic = target.name("underrep")
        # two records in one partition: follower 1 reports the first, a real offset (>= 0)
        first, put = two_in_one_partition(target, conn, topic, "k", "V1L-REPL-12")
        behind = report(target, conn, topic, put.partition, 1, first.offset, "V1L-REPL-12")
        isr = behind.ints("isr")
        if len(isr) < min_isr(target):
            require(
                behind.values["under_replicated"] is True,
                "V1L-REPL-12",
                f"isr=[{' '.join(map(str, isr))}] ({len(isr)} replica(s), min ISR"
                f" {min_isr(target)}): under_replicated=false, expected true",
                behind.at("isr", "under_replicated"),
            )
        last = behind
        for replica in followers(target):
            last = report(target, conn, topic, put.partition, replica, put.offset, "V1L-REPL-12")
        isr = last.ints("isr")
        if len(isr) == replication_factor(target):
            require(
                last.values["under_replicated"] is False,
                "V1L-REPL-12",
                f"isr=[{' '.join(map(str, isr))}] holds every replica: under_replicated=true,"
                " expected false",
                last.at("isr", "under_replicated"),
            )


@case("v1line/replication/13", "V1L-REPL-13")
def test_a_record_an_in_sync_follower_lacks_stays_above_hw(target: CaseContext) -> None:
    """A record appended after follower 1 caught up stays above hw, unreturned, until follower 1
    reports it.

    V1L-REPL-13: "hw is the smallest offset acknowledged by the ISR: a record appended while an
    in-sync follower has not reported it stays above hw (CONSUME does not return it) until that
    follower reports it or leaves the ISR."
    """
    with target.connect() as conn:
        slow = []
        for attempt in range(TRIES):
            topic = target.name(f"hwlag{attempt}")
            first = produce(target, conn, topic, "k", "first", "V1L-REPL-13")
            start = time.monotonic()
            caught = report(target, conn, topic, first.partition, 1, first.offset, "V1L-REPL-13")
            second = produce_to(target, conn, topic, first.partition, "k", "second", "V1L-REPL-13")
            got = consume(target, conn, topic, second.partition, second.offset, "V1L-REPL-13")
            took = time.monotonic() - start
            if took < lag_timeout(target):
                break  # else follower 1 may have left the ISR meanwhile: try again
            slow.append(f"{took * 1000:.0f} ms")
        else:
            raise Unsupported(
                f"inconclusive: in each of {TRIES} tries, follower 1's report, the next PRODUCE"
                f" and the CONSUME took longer than the lag timeout"
                f" ({lag_timeout(target) * 1000:.0f} ms: {', '.join(slow)}), so follower 1 may"
                " have left the ISR before the CONSUME: the client or the target was stalled",
                evidence=got.at("messages", "hw"),
            )
        require(
            got.number("hw") == first.offset and not got.messages(),
            "V1L-REPL-13",
            f"follower 1 in sync at offset {first.offset}, offset {second.offset} not reported:"
            f" CONSUME {topic} {second.partition} {second.offset} answered {got.shown()},"
            f" expected 'messages= hw={first.offset}' (offset {second.offset} stays above hw"
            " until follower 1 reports it)",
            caught.at("isr", "hw", asked=("replica_id", "offset"))
            + got.at("messages", "hw", asked=("partition", "offset")),
        )
        report(target, conn, topic, first.partition, 1, second.offset, "V1L-REPL-13")
        now = consume(target, conn, topic, second.partition, second.offset, "V1L-REPL-13")
        require(
            now.number("hw") >= second.offset and now.messages()[:1] == [(second.offset, "second")],
            "V1L-REPL-13",
            f"follower 1 reported offset {second.offset}: CONSUME {topic} {second.partition}"
            f" {second.offset} answered {now.shown()}, expected '{second.offset}:second' with"
            f" hw {second.offset}",
            now.at("messages", "hw"),
        )


@case("v1line/replication/14", "V1L-REPL-14")
def test_hw_never_passes_the_leaders_last_offset_nor_goes_back(target: CaseContext) -> None:
    """Across produces, followers' reports and consumes, hw rises and stays at or below the last
    offset produced.

    V1L-REPL-14: "hw never exceeds the leader's last offset and, while the partition stays
    leader, never decreases between replies."
    """
    with target.connect() as conn:
        topic = target.name("hwmono")
        # each reply with its partition and the leader's last offset there then: records
        # with one key may go to several partitions (placement is not this case's business)
        seen: list[tuple[Reply, int, int]] = []
        first = produce(target, conn, topic, "k", "a", "V1L-REPL-14")
        seen.append((first.reply, first.partition, first.offset))
        last = {first.partition: first.offset}
        watched = first.partition
        steps = "produce:b report:1 produce:c report:2 consume:0"
        steps += " report:1 produce:d report:2 report:1"
        for step in steps.split():
            kind, arg = step.split(":")
            if kind == "produce":
                put = produce(target, conn, topic, "k", arg, "V1L-REPL-14")
                last[put.partition] = put.offset
                seen.append((put.reply, put.partition, put.offset))
            elif kind == "report" and int(arg) in followers(target):
                got = report(target, conn, topic, watched, int(arg), last[watched], "V1L-REPL-14")
                seen.append((got, watched, last[watched]))
            elif kind == "consume":
                got = consume(target, conn, topic, watched, 0, "V1L-REPL-14")
                seen.append((got, watched, last[watched]))
        previous: dict[int, Reply] = {}
        for reply, partition, leader_last in seen:
            hw = reply.number("hw")
            require(
                hw <= leader_last,
                "V1L-REPL-14",
                f"hw={hw} while the leader's last offset in partition {partition} is"
                f" {leader_last}, expected at most that",
                reply.at("hw"),
            )
            before = previous.get(partition)
            if before is not None:
                require(
                    hw >= before.number("hw"),
                    "V1L-REPL-14",
                    f"hw went from {before.number('hw')} down to {hw} on leader partition"
                    f" {partition}",
                    before.at("hw") + reply.at("hw"),
                )
            previous[partition] = reply


@case("v1line/replication/15", "V1L-REPL-15")
def test_the_reference_brokers_isr_and_progress_conventions(target: CaseContext) -> None:
    """Before any report hw is the leader's last offset; the isr is ascending (``real``: the
    leader first); acked_offset echoes the report; progress never goes back.

    V1L-REPL-15: "before any follower reports, the isr is `[0]` and hw is the leader's last
    offset (-1 when empty); the isr lists the leader first, then the followers, ascending in
    `doc` and in any order in `real`; acked_offset echoes the offset reported and a follower's
    progress never goes back."
    """
    with target.connect() as conn:
        topic = target.name("conv")
        role = set_role(target, conn, topic, 0, "leader", "V1L-REPL-15")
        require(
            role.number("hw") == -1,
            "V1L-REPL-15",
            f"SET_PARTITION_ROLE on an empty partition: hw={role.number('hw')}, expected hw=-1",
            role.at("hw"),
        )
        puts = [produce(target, conn, topic, "k", v, "V1L-REPL-15") for v in ("a", "b")]
        for put in puts:
            require(
                put.hw == put.offset,
                "V1L-REPL-15",
                f"PRODUCE before any follower reported: offset={put.offset} hw={put.hw},"
                " expected hw to be the leader's last offset",
                put.reply.at("offset", "hw"),
            )
        partition, last = puts[-1].partition, puts[-1].offset
        replies = [
            report(target, conn, topic, partition, r, last, "V1L-REPL-15")
            for r in reversed(followers(target))
        ]
        isr = list(replies[-1].ints("isr"))
        if real(target):  # the real broker lists its followers in Go map order
            ordered, how = isr[:1] == [0], "the leader (0) first"
        else:
            ordered, how = isr == sorted(isr), "it ascending"
        require(
            ordered,
            "V1L-REPL-15",
            f"isr=[{' '.join(map(str, isr))}], expected {how}",
            replies[-1].at("isr"),
        )
        back = report(target, conn, topic, partition, 1, last - 1, "V1L-REPL-15")
        require(
            back.number("acked_offset") == last - 1,
            "V1L-REPL-15",
            f"REPLICA_FETCH reporting offset {last - 1}: acked_offset="
            f"{back.number('acked_offset')}, expected the offset reported",
            back.at("acked_offset", asked=("offset",)),
        )
        require(
            back.number("hw") == last,
            "V1L-REPL-15",
            f"replica 1 reported {last} then {last - 1}: hw={back.number('hw')}, expected"
            f" hw={last} (its progress does not go back)",
            replies[-1].at("hw") + back.at("hw"),
        )


@case("v1line/replication/16", "V1L-REPL-16")
def test_the_real_brokers_isr_rules(target: CaseContext) -> None:
    """A lagging follower is out of the isr at once, hw is the leader's last offset, a report on
    a follower partition is BAD_REQUEST, roles match any case.

    V1L-REPL-16: "a follower behind the leader's last offset is out of the ISR at once (max lag
    0), so hw is always the leader's last offset; under_replicated is exactly isr smaller than
    min ISR; REPLICA_FETCH on a follower-role partition is BAD_REQUEST; roles are matched
    case-insensitively."
    """
    with target.connect() as conn:
        topic = target.name("realisr")
        first = produce(target, conn, topic, "k", "a", "V1L-REPL-16")
        report(target, conn, topic, first.partition, 1, first.offset, "V1L-REPL-16")
        second = produce_to(target, conn, topic, first.partition, "k", "b", "V1L-REPL-16")
        got = report(target, conn, topic, first.partition, 1, first.offset, "V1L-REPL-16")
        isr = got.ints("isr")
        require(
            1 not in isr and got.number("hw") == second.offset,
            "V1L-REPL-16",
            f"replica 1 at offset {first.offset}, leader at {second.offset}:"
            f" isr=[{' '.join(map(str, isr))}] hw={got.number('hw')}, expected 1 out of the isr"
            f" and hw={second.offset}",
            got.at("isr", "hw"),
        )
        require(
            got.values["under_replicated"] is (len(isr) < min_isr(target)),
            "V1L-REPL-16",
            f"isr=[{' '.join(map(str, isr))}], min ISR {min_isr(target)}: under_replicated="
            f"{show(got.values['under_replicated'])}, expected {show(len(isr) < min_isr(target))}",
            got.at("isr", "under_replicated"),
        )
        set_role(target, conn, topic, first.partition, "FOLLOWER", "V1L-REPL-16")
        args = f"{topic} {first.partition} 1 {second.offset}"
        expect_error(
            target,
            conn,
            "REPLICA_FETCH",
            args,
            BAD_REQUEST,
            "V1L-REPL-16",
            f"REPLICA_FETCH {args} on a follower partition",
        )
        set_role(target, conn, topic, first.partition, "Leader", "V1L-REPL-16")
