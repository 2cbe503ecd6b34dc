"""V1 line replication: partition roles, NOT_LEADER and REPLICA_FETCH, with the suite playing
the followers (SPEC.md, area "replication"; the ISR and the hw are test_isr.py's, acks=all
test_acks_all.py's)."""

from __future__ import annotations

from conformance.client import Connection
from conformance.protocols.v1line.errors import BAD_REQUEST, NOT_LEADER
from conformance.suite.case import Unsupported, case, require
from conformance.suite.target import CaseContext
from conformance.suite.v1line.steps import (
    PLACEMENT_TRIES,
    Produced,
    consume,
    nothing_appended,
    produce,
    produce_committed,
    produce_to,
    replication_factor,
    report,
    set_role,
)
from conformance.suite.v1line.verify import (
    Reply,
    evidence_of,
    expect_error,
    read,
    real,
    send,
)


@case("v1line/replication/1", "V1L-REPL-1")
def test_set_partition_role_answers_topic_partition_role_hw(target: CaseContext) -> None:
    """SET_PARTITION_ROLE follower, then leader, each answered with topic, partition, role, hw.

    V1L-REPL-1: "`SET_PARTITION_ROLE <topic> <partition> leader|follower` sets the partition's
    local role and answers `topic=<name> partition=<n> role=<role> hw=<n>`."
    """
    with target.connect() as conn:
        topic = target.name("role")
        (put,) = produce_committed(target, conn, topic, "k", ["v"], "V1L-REPL-1")
        for role in ("follower", "leader"):
            got = set_role(target, conn, topic, put.partition, role, "V1L-REPL-1")
            want = {"topic": topic, "partition": put.partition, "role": role}
            for key, value in want.items():
                require(
                    got.values[key] == value,
                    "V1L-REPL-1",
                    f"SET_PARTITION_ROLE {topic} {put.partition} {role}: {key}={got.values[key]},"
                    f" expected {key}={value}",
                    got.at(key),
                )


@case("v1line/replication/2", "V1L-REPL-2")
def test_a_role_other_than_leader_or_follower_is_bad_request(target: CaseContext) -> None:
    """Roles 'observer' and 'lead', and an empty role, are answered BAD_REQUEST.

    V1L-REPL-2: "a role other than leader or follower (`observer`, empty) is answered
    BAD_REQUEST."
    """
    with target.connect() as conn:
        topic = target.name("badrole")
        produce(target, conn, topic, "k", "v", "V1L-REPL-2")
        for args in (f"{topic} 0 observer", f"{topic} 0 lead", f"{topic} 0 "):
            expect_error(
                target,
                conn,
                "SET_PARTITION_ROLE",
                args,
                BAD_REQUEST,
                "V1L-REPL-2",
                f"SET_PARTITION_ROLE {args}",
            )


@case("v1line/replication/3", "V1L-REPL-3")
def test_the_role_is_matched_exactly(target: CaseContext) -> None:
    """Roles 'LEADER' and 'Follower' are answered BAD_REQUEST.

    V1L-REPL-3: "the role is matched exactly: `LEADER` and `Follower` are answered BAD_REQUEST."
    """
    with target.connect() as conn:
        topic = target.name("caserole")
        produce(target, conn, topic, "k", "v", "V1L-REPL-3")
        for role in ("LEADER", "Follower"):
            args = f"{topic} 0 {role}"
            expect_error(
                target,
                conn,
                "SET_PARTITION_ROLE",
                args,
                BAD_REQUEST,
                "V1L-REPL-3",
                f"SET_PARTITION_ROLE {args}",
            )


def produce_to_follower(
    ctx: CaseContext,
    conn: Connection,
    topic: str,
    first: Produced,
    followed: list[int],
    requirement: str,
) -> Reply:
    """PRODUCE with ``first``'s key while ``first``'s partition is a follower; when the
    record lands on another partition, that one is made follower too and it is sent again
    (placement is not this case's business).  ``followed`` gets every partition made
    follower, for the case to make leader again.  The PRODUCE reply."""
    followed.append(first.partition)
    set_role(ctx, conn, topic, first.partition, "follower", requirement)
    replies = []
    for _ in range(PLACEMENT_TRIES):
        args = f"{topic} k:refused"
        reply = expect_or_any(ctx, conn, args, requirement)
        if not reply.ok or reply.number("partition") in followed:
            return reply
        replies.append(reply)
        followed.append(reply.number("partition"))
        set_role(ctx, conn, topic, reply.number("partition"), "follower", requirement)
    raise Unsupported(
        f"PRODUCE {topic} k:... kept landing on new partitions",
        "V1L-PROD-9",
        evidence_of(*replies, fields=("partition",)),
    )


REAL_ROLE_TRIES = 2
"""``real``: the newest real broker sets every partition its controller metadata names it
leader of back to leader once a second (FACTS.md, SET_PARTITION_ROLE), and its
SET_PARTITION_ROLE names it leader even for a follower: a PRODUCE sent a round trip after
the role was set can meet that tick.  A PRODUCE accepted there is tried once more, on a
new topic; accepted twice, it is a FAIL."""


def expect_or_any(ctx: CaseContext, conn: Connection, args: str, requirement: str) -> Reply:
    send(conn, "PRODUCE", args)
    return read(ctx, conn, requirement, f"PRODUCE {args}", command="PRODUCE")


@case("v1line/replication/4", "V1L-REPL-4")
def test_produce_to_a_follower_partition_is_not_leader_and_appends_nothing(
    target: CaseContext,
) -> None:
    """PRODUCE to a partition in follower role is answered NOT_LEADER; nothing is appended.

    V1L-REPL-4: "PRODUCE to a partition in follower role is answered NOT_LEADER and appends
    nothing (a later CONSUME and hw show no new record)."
    """
    with target.connect() as conn:
        for attempt in range(REAL_ROLE_TRIES if real(target) else 1):
            topic = target.name(f"notleader{attempt}")
            (first,) = produce_committed(target, conn, topic, "k", ["kept"], "V1L-REPL-4")
            followed: list[int] = []
            reply = produce_to_follower(target, conn, topic, first, followed, "V1L-REPL-4")
            if not reply.ok:
                break
        require(
            not reply.ok and reply.code == NOT_LEADER,
            "V1L-REPL-4",
            f"PRODUCE {topic} k:refused to follower partition {first.partition}: answered"
            f" {reply.shown()}, expected ERR NOT_LEADER",
            reply.at("status", "code"),
        )
        for partition in reversed(followed[1:]):  # every partition made follower: leader again
            set_role(target, conn, topic, partition, "leader", "V1L-REPL-4")
        role = set_role(target, conn, topic, first.partition, "leader", "V1L-REPL-4")
        require(
            role.number("hw") <= first.offset,
            "V1L-REPL-4",
            f"after the refused PRODUCE, SET_PARTITION_ROLE answered hw={role.number('hw')},"
            f" expected at most {first.offset} (no new record)",
            role.at("hw"),
        )
        got = consume(target, conn, topic, first.partition, first.offset, "V1L-REPL-4")
        new = [o for o, _ in got.messages() if o > first.offset]
        require(
            not new and got.number("hw") <= first.offset,
            "V1L-REPL-4",
            f"after the refused PRODUCE, CONSUME {topic} {first.partition} {first.offset}:"
            f" answered {got.shown()}, expected no record past offset {first.offset} and hw at"
            f" most {first.offset}",
            got.at("messages", "hw"),
        )
        nothing_appended(target, conn, topic, "k", first, "V1L-REPL-4", "the refused PRODUCE")


@case("v1line/replication/5", "V1L-REPL-5")
def test_a_partition_set_back_to_leader_accepts_produce(target: CaseContext) -> None:
    """A partition set to follower and back to leader takes PRODUCE again.

    V1L-REPL-5: "a partition set back to leader accepts PRODUCE again."
    """
    with target.connect() as conn:
        topic = target.name("backtoleader")
        first = produce(target, conn, topic, "k", "one", "V1L-REPL-5")
        set_role(target, conn, topic, first.partition, "follower", "V1L-REPL-5")
        set_role(target, conn, topic, first.partition, "leader", "V1L-REPL-5")
        # OK, on that partition (records with another place are sent again: placement is
        # not this case's business)
        produce_to(target, conn, topic, first.partition, "k", "two", "V1L-REPL-5")


@case("v1line/replication/6", "V1L-REPL-6")
def test_replica_fetch_answers_the_followers_progress(target: CaseContext) -> None:
    """REPLICA_FETCH by follower 1 answers replica=1 with acked_offset, hw, isr and
    under_replicated.

    V1L-REPL-6: "`REPLICA_FETCH <topic> <partition> <replica_id> <offset>` records the
    follower's progress and answers `replica=<id> acked_offset=<n> hw=<n> isr=[...]
    under_replicated=<true|false>`."
    """
    with target.connect() as conn:
        topic = target.name("fetch")
        put = produce(target, conn, topic, "k", "v", "V1L-REPL-6")
        got = report(target, conn, topic, put.partition, 1, put.offset, "V1L-REPL-6")
        require(
            got.number("replica") == 1,
            "V1L-REPL-6",
            f"REPLICA_FETCH by replica 1: replica={got.number('replica')}, expected replica=1",
            got.at("replica", asked=("replica_id",)),
        )


@case("v1line/replication/7", "V1L-REPL-7")
def test_a_replica_id_outside_the_followers_is_bad_request(target: CaseContext) -> None:
    """REPLICA_FETCH by replica 0, -1 or the replication factor is answered BAD_REQUEST.

    V1L-REPL-7: "a replica id outside 1..replication_factor-1 (0, negative, replication_factor)
    is answered BAD_REQUEST."
    """
    with target.connect() as conn:
        topic = target.name("replicaid")
        put = produce(target, conn, topic, "k", "v", "V1L-REPL-7")
        for rid in (0, -1, replication_factor(target), replication_factor(target) + 5):
            args = f"{topic} {put.partition} {rid} {put.offset}"
            expect_error(
                target,
                conn,
                "REPLICA_FETCH",
                args,
                BAD_REQUEST,
                "V1L-REPL-7",
                f"REPLICA_FETCH {args} (replication factor {replication_factor(target)})",
            )
