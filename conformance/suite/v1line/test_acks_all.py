"""V1 line PRODUCE acks=all, with the suite playing the followers (SPEC.md, area
"replication"): it times out when min ISR does not hold, and succeeds once enough followers
report the record.  When a REPLICATION_TIMEOUT can be judged is :mod:`.acks`'s."""

from __future__ import annotations

import time

from conformance.protocols.v1line.errors import REPLICATION_TIMEOUT
from conformance.suite.case import Unsupported, case, require
from conformance.suite.target import CaseContext
from conformance.suite.v1line.acks import AcksAll, acks_all_until_judged, produce_acks_all
from conformance.suite.v1line.steps import (
    MARGIN_S,
    ack_timeout,
    followers,
    lag_timeout,
    min_isr,
    needs_two_followers,
    produce_committed,
    report,
    wait_read,
)
from conformance.suite.v1line.verify import read, send


def needs_min_isr_2(ctx: CaseContext) -> None:
    if min_isr(ctx) < 2:
        raise Unsupported(f"the target runs with min ISR {min_isr(ctx)}: acks=all never waits")


@case("v1line/replication/8", "V1L-REPL-8")
def test_acks_all_with_no_follower_times_out_no_sooner_than_the_timeout(
    target: CaseContext,
) -> None:
    """PRODUCE acks=all with no follower reporting is REPLICATION_TIMEOUT after the acks=all
    timeout.

    V1L-REPL-8: "PRODUCE `acks=all` while fewer than min ISR replicas are in sync, with no
    follower reporting during the wait, is answered REPLICATION_TIMEOUT, no sooner than the
    acks=all timeout."
    """
    needs_min_isr_2(target)
    with target.connect() as conn:
        topic = target.name("timeout")
        args = f"{topic} k:v acks=all"
        waits = ack_timeout(target)
        start = time.monotonic()
        send(conn, "PRODUCE", args)
        reply = read(
            target,
            conn,
            "V1L-REPL-8",
            f"PRODUCE {args}",
            command="PRODUCE",
            timeout=wait_read(target, waits),
        )
        took = time.monotonic() - start
        require(
            not reply.ok and reply.code == REPLICATION_TIMEOUT,
            "V1L-REPL-8",
            f"PRODUCE {args} with no follower in sync (min ISR {min_isr(target)}): answered"
            f" {reply.shown()} after {took * 1000:.0f} ms, expected ERR REPLICATION_TIMEOUT",
            reply.at("status", "code", asked=("acks",)),
        )
        require(
            took >= waits,
            "V1L-REPL-8",
            f"PRODUCE {args}: REPLICATION_TIMEOUT after {took * 1000:.0f} ms, expected no"
            f" sooner than the acks=all timeout ({waits * 1000:.0f} ms: this run's"
            " --ack-timeout-ms, which must match the target's)",
            reply.at("code"),
        )


@case("v1line/replication/9", "V1L-REPL-9")
def test_acks_all_succeeds_once_the_followers_report_the_record(target: CaseContext) -> None:
    """PRODUCE acks=all, on a new partition and on one whose followers are in sync, is answered
    OK with hw at least its offset once the followers report it.

    V1L-REPL-9: "PRODUCE `acks=all` succeeds when, before the timeout, enough followers report
    the produced offset for min ISR to hold; its reply's hw is at least the produced offset."
    """
    with target.connect() as conn, target.connect() as other:
        for state in ("new", "in-sync"):

            def attempt(i: int, state: str = state) -> AcksAll:
                topic = target.name(f"acksall-{state}{i}")
                if state == "in-sync":  # the followers in the ISR, at the leader's last offset
                    produce_committed(target, conn, topic, "k", ["before"], "V1L-REPL-9")
                return produce_acks_all(target, conn, other, topic, "k", "v", "V1L-REPL-9")

            got = acks_all_until_judged(target, attempt, conn, "V1L-REPL-9")
            reply = got.reply
            what = f"PRODUCE {got.topic} k:v acks=all ({state} followers)"
            require(
                reply.ok,
                "V1L-REPL-9",
                f"{what}, every follower reporting offset {got.offset}: answered"
                f" {reply.shown()}, {got.timing()}, expected OK",
                reply.at("status", "code"),
            )
            offset, hw = reply.number("offset"), reply.number("hw")
            require(
                hw >= offset,
                "V1L-REPL-9",
                f"{what}: answered offset={offset} hw={hw} after {got.took * 1000:.0f} ms,"
                f" expected hw {offset} or more (the reply came before every in-sync follower"
                " reported it)",
                reply.at("offset", "hw"),
            )


@case("v1line/replication/17", "V1L-REPL-9")
def test_acks_all_does_not_wait_for_a_follower_that_left_the_isr(target: CaseContext) -> None:
    """With one follower silent past the lag timeout, PRODUCE acks=all is answered OK once the
    others report it.

    V1L-REPL-9: "PRODUCE `acks=all` succeeds when, before the timeout, enough followers report
    the produced offset for min ISR to hold; its reply's hw is at least the produced offset."
    """
    needs_two_followers(target)
    live = list(followers(target))[:-1]
    dead = followers(target)[-1]
    if 1 + len(live) < min_isr(target):
        raise Unsupported(
            f"the target runs with min ISR {min_isr(target)}: acks=all needs every follower"
        )
    lag = lag_timeout(target)
    with target.connect() as conn, target.connect() as other:

        def attempt(i: int) -> AcksAll:
            topic = target.name(f"deadfollower{i}")
            (before,) = produce_committed(target, conn, topic, "k", ["before"], "V1L-REPL-9")
            deadline = time.monotonic() + lag + MARGIN_S
            while time.monotonic() < deadline:  # the live followers stay in sync, the dead not
                time.sleep(min(lag / 3, max(0.0, deadline - time.monotonic())))
                for replica in live:
                    report(
                        target, conn, topic, before.partition, replica, before.offset, "V1L-REPL-9"
                    )
            return produce_acks_all(
                target, conn, other, topic, "k", "v", "V1L-REPL-9", replicas=live
            )

        got = acks_all_until_judged(target, attempt, conn, "V1L-REPL-9")
        reply = got.reply
        what = (
            f"PRODUCE {got.topic} k:v acks=all, replica {dead} silent for"
            f" {(lag + MARGIN_S) * 1000:.0f} ms (lag timeout {lag * 1000:.0f} ms,"
            f" --replica-lag-timeout-ms), replica(s) {', '.join(map(str, live))} reporting"
            f" offset {got.offset}"
        )
        require(
            reply.ok,
            "V1L-REPL-9",
            f"{what}: answered {reply.shown()}, {got.timing()}, expected OK (min ISR"
            f" {min_isr(target)} holds without replica {dead})",
            reply.at("status", "code"),
        )
        require(
            reply.number("hw") >= reply.number("offset"),
            "V1L-REPL-9",
            f"{what}: answered offset={reply.number('offset')} hw={reply.number('hw')},"
            f" expected hw {reply.number('offset')} or more",
            reply.at("offset", "hw"),
        )
