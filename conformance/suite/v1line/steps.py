"""Steps the V1 line cases share: produce, play the followers, consume, join a group.

The suite plays the followers itself: ``REPLICA_FETCH <topic> <partition> <id> <offset>``
for each follower id 1..replication_factor-1 (the run's ``--replication-factor``), so
acks=all, the high watermark and the ISR are all checked against one target.  A MUST
case never relies on where PRODUCE places a record (FNV-1a of the key is a MAY rule):
it reads the partition from the PRODUCE reply.  Where a case needs two records in one
partition it sends them with one key (records with one key share a partition, V1L-PROD-9,
a SHOULD) and checks the second reply's partition before it relies on it.

Every step checks what it relies on and blames the requirement the caller names (or the
one that covers it), so that a target breaking one requirement fails that requirement's
cases and no others.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from conformance.client import Connection
from conformance.protocols.v1line.replication import (
    DEFAULT_ACK_TIMEOUT_MS,
    DEFAULT_LAG_TIMEOUT_MS,
    DEFAULT_MIN_ISR,
    DEFAULT_REPLICATION_FACTOR,
)
from conformance.suite.case import Unsupported, Violation
from conformance.suite.shown import show_all
from conformance.suite.target import CaseContext
from conformance.suite.v1line.verify import (
    Reply,
    evidence_of,
    expect_ok,
    read,
    readable,
    send,
    setting,
)

MARGIN_S = 0.15
"""Waited beyond a timeout the target is configured with, before a case looks again."""
DEFAULT_SESSION_TIMEOUT_MS = 10_000


def replication_factor(ctx: CaseContext) -> int:
    return setting(ctx, "replication_factor", DEFAULT_REPLICATION_FACTOR)


def min_isr(ctx: CaseContext) -> int:
    """min ISR as the target uses it (clamped to 1..replication factor)."""
    return max(1, min(setting(ctx, "min_isr", DEFAULT_MIN_ISR), replication_factor(ctx)))


def ack_timeout(ctx: CaseContext) -> float:
    """The acks=all timeout, in seconds."""
    return setting(ctx, "ack_timeout_ms", DEFAULT_ACK_TIMEOUT_MS) / 1000.0


def lag_timeout(ctx: CaseContext) -> float:
    """The replica lag timeout, in seconds."""
    return setting(ctx, "replica_lag_timeout_ms", DEFAULT_LAG_TIMEOUT_MS) / 1000.0


def session_timeout(ctx: CaseContext) -> float:
    """The group session timeout, in seconds."""
    return setting(ctx, "session_timeout_ms", DEFAULT_SESSION_TIMEOUT_MS) / 1000.0


def followers(ctx: CaseContext) -> range:
    return range(1, replication_factor(ctx))


def wait_read(ctx: CaseContext, configured: float) -> float:
    """A read deadline for a reply that may wait ``configured`` seconds first."""
    return max(ctx.timeout, configured + 1.0)


# ------------------------------------------------------------------ produce


@dataclass(frozen=True)
class Produced:
    reply: Reply
    partition: int
    offset: int
    hw: int


def produced(reply: Reply) -> Produced:
    return Produced(reply, reply.number("partition"), reply.number("offset"), reply.number("hw"))


def produce(
    ctx: CaseContext,
    conn: Connection,
    topic: str,
    key: str,
    value: str,
    requirement: str = "V1L-PROD-1",
    acks: str | None = None,
) -> Produced:
    """PRODUCE ``key:value`` (with ``acks=<acks>`` when given), answered OK."""
    args = f"{topic} {key}:{value}" + (f" acks={acks}" if acks is not None else "")
    reply = expect_ok(ctx, conn, "PRODUCE", args, requirement, f"PRODUCE {args}")
    return produced(reply)


def same_partition(first: Produced, then: Produced, what: str) -> None:
    """``then`` went to ``first``'s partition, or the case cannot go on (V1L-PROD-9)."""
    if then.partition != first.partition:
        raise Unsupported(
            f"{what}: two records with one key went to partitions {first.partition} and"
            f" {then.partition}; this case steers records by key",
            "V1L-PROD-9",
            evidence_of(first.reply, then.reply, fields=("partition",)),
        )


def nothing_appended(
    ctx: CaseContext,
    conn: Connection,
    topic: str,
    key: str,
    before: Produced,
    requirement: str,
    what: str,
) -> None:
    """Nothing was appended to ``before``'s partition since ``before``: the next record
    with the same key gets the offset right after it (checked only when it lands there)."""
    after = produce(ctx, conn, topic, key, "after", requirement)
    if after.partition != before.partition:
        return
    if after.offset != before.offset + 1:
        raise Violation(
            requirement,
            f"after {what}, the next PRODUCE got offset {after.offset} in partition"
            f" {after.partition}, expected {before.offset + 1} (right after offset"
            f" {before.offset}): something was appended in between",
            before.reply.at("offset") + after.reply.at("offset"),
        )


# ----------------------------------------------------------------- followers


def report(
    ctx: CaseContext,
    conn: Connection,
    topic: str,
    partition: int,
    replica: int,
    offset: int,
    requirement: str = "V1L-REPL-6",
) -> Reply:
    """REPLICA_FETCH: follower ``replica`` reports ``offset``, answered OK."""
    args = f"{topic} {partition} {replica} {offset}"
    return expect_ok(ctx, conn, "REPLICA_FETCH", args, requirement, f"REPLICA_FETCH {args}")


def replicate(
    ctx: CaseContext,
    conn: Connection,
    topic: str,
    partition: int,
    offset: int,
    requirement: str,
) -> None:
    """Every follower reports ``offset``: all are in sync, so hw reaches ``offset`` (with
    replication factor 1 there is no follower and the leader's offset is the hw)."""
    last: Reply | None = None
    for replica in followers(ctx):
        last = report(ctx, conn, topic, partition, replica, offset, requirement)
    if last is not None and last.number("hw") < offset:
        raise Violation(
            requirement,
            f"every follower reported offset {offset} of partition {partition}, yet"
            f" REPLICA_FETCH answered hw {last.number('hw')}, expected {offset}",
            last.at("hw", "isr", asked=("offset",)),
        )


def produce_committed(
    ctx: CaseContext,
    conn: Connection,
    topic: str,
    key: str,
    values: list[str],
    requirement: str,
) -> list[Produced]:
    """PRODUCE each value with ``key``, then every follower reports each partition's last
    offset, so that every record is committed."""
    out = [produce(ctx, conn, topic, key, v, requirement) for v in values]
    last: dict[int, int] = {}
    for p in out:
        last[p.partition] = max(last.get(p.partition, -1), p.offset)
    for partition, offset in sorted(last.items()):
        replicate(ctx, conn, topic, partition, offset, requirement)
    return out


def produce_acks_all(
    ctx: CaseContext,
    conn: Connection,
    other: Connection,
    topic: str,
    key: str,
    value: str,
    requirement: str,
    acks: str = "acks=all",
    replicas: Sequence[int] | None = None,
) -> tuple[Produced, Reply, float]:
    """PRODUCE ``key:value`` acks=all while the followers (``replicas``, default all)
    report it on ``other``: a record with the same key first (acks=1) shows where it goes;
    then the followers report the offset after it until the acks=all reply comes.  The
    seed record, the reply and how long it took (seconds)."""
    seed = produce(ctx, conn, topic, key, "seed", requirement)
    args = f"{topic} {key}:{value} {acks}"
    start = time.monotonic()
    send(conn, "PRODUCE", args)
    deadline = start + ack_timeout(ctx) + MARGIN_S
    while not readable(conn, 0.0) and time.monotonic() < deadline:
        for replica in followers(ctx) if replicas is None else replicas:
            report(ctx, other, topic, seed.partition, replica, seed.offset + 1, requirement)
        readable(conn, 0.02)
    reply = read(
        ctx,
        conn,
        requirement,
        f"PRODUCE {args}",
        command="PRODUCE",
        timeout=wait_read(ctx, ack_timeout(ctx)),
    )
    return seed, reply, time.monotonic() - start


# ------------------------------------------------------------------ consume


def consume(
    ctx: CaseContext,
    conn: Connection,
    topic: str,
    partition: int,
    offset: int,
    requirement: str = "V1L-CONS-1",
) -> Reply:
    args = f"{topic} {partition} {offset}"
    return expect_ok(ctx, conn, "CONSUME", args, requirement, f"CONSUME {args}")


# ------------------------------------------------------------------- groups


@dataclass(frozen=True)
class Joined:
    reply: Reply
    generation: int
    assigned: tuple[int, ...]


def assignment(reply: Reply) -> Joined:
    return Joined(reply, reply.number("generation"), reply.ints("assigned"))


def join(
    ctx: CaseContext,
    conn: Connection,
    group: str,
    topic: str,
    consumer: str,
    requirement: str = "V1L-GRP-1",
    assignor: str | None = None,
) -> Joined:
    args = f"{group} {topic} {consumer}" + (f" assignor={assignor}" if assignor else "")
    return assignment(expect_ok(ctx, conn, "JOIN", args, requirement, f"JOIN {args}"))


def sync(
    ctx: CaseContext,
    conn: Connection,
    group: str,
    topic: str,
    consumer: str,
    generation: int,
    requirement: str = "V1L-GRP-9",
) -> Joined:
    args = f"{group} {topic} {consumer} {generation}"
    return assignment(expect_ok(ctx, conn, "SYNC", args, requirement, f"SYNC {args}"))


def partitions_of(
    ctx: CaseContext, conn: Connection, topic: str, requirement: str
) -> tuple[int, ...]:
    """Every partition of ``topic``: what a lone member of a fresh group is assigned
    (V1L-GRP-4: the shares cover every partition)."""
    group = f"count-{topic}"
    alone = join(ctx, conn, group, topic, "solo", requirement)
    got = sync(ctx, conn, group, topic, "solo", alone.generation, requirement)
    if not got.assigned:
        raise Violation(
            requirement,
            f"the only member of group {group} got assigned=[] at generation"
            f" {got.generation}, expected every partition of {topic}",
            got.reply.at("assigned"),
        )
    return tuple(sorted(got.assigned))


def members_shares(
    ctx: CaseContext,
    conn: Connection,
    group: str,
    topic: str,
    members: list[str],
    generation: int,
    requirement: str,
) -> dict[str, Joined]:
    """Each member's SYNC at ``generation``."""
    return {m: sync(ctx, conn, group, topic, m, generation, requirement) for m in members}


def wire_list(items: Sequence[int]) -> str:
    """A list of ids as the wire writes it: ``[0 2]``, ``[]``."""
    return "[" + " ".join(map(str, items)) + "]"


def check_cover(
    shares: dict[str, Joined], partitions: tuple[int, ...], requirement: str, what: str
) -> None:
    """The shares are disjoint and cover ``partitions`` exactly."""
    dealt = [p for j in shares.values() for p in j.assigned]
    evidence = evidence_of(*(j.reply for j in shares.values()), fields=("assigned",))
    listing = ", ".join(f"{m} assigned={wire_list(j.assigned)}" for m, j in shares.items())
    if sorted(dealt) != sorted(partitions):
        raise Violation(
            requirement,
            f"{what}: the members got {listing}, expected partitions"
            f" {show_all(partitions)} each dealt exactly once",
            evidence,
        )
