"""Steps the V1 line cases share: produce, play the followers, consume, join a group.

The suite plays the followers itself: ``REPLICA_FETCH <topic> <partition> <id> <offset>``
for each follower id 1..replication_factor-1 (the run's ``--replication-factor``), so
acks=all, the high watermark and the ISR are all checked against one target.  A MUST
case never relies on where PRODUCE places a record (FNV-1a of the key is a MAY rule):
it reads the partition from the PRODUCE reply.  Where a case needs a record in a given
partition it sends records with one key until one lands there (:func:`produce_to`,
:func:`two_in_one_partition`): records with one key share a partition (V1L-PROD-9, a
SHOULD), so one try is enough for most brokers, and a broker that places them otherwise
gets more tries, then UNSUPPORTED (V1L-PROD-9), never a FAIL.  acks=all, where the
followers must report a record before its reply tells where it went, is :mod:`.acks`'s.

Every step checks what it relies on and blames the requirement the caller names (or the
one that covers it), so that a target breaking one requirement fails that requirement's
cases and no others.
"""

from __future__ import annotations

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


def needs_two_followers(ctx: CaseContext) -> None:
    if replication_factor(ctx) < 3:
        raise Unsupported(
            f"the target runs with replication factor {replication_factor(ctx)}: this case"
            " watches one follower's ISR membership through another's reports"
        )


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


PLACEMENT_TRIES = 12
"""Records with one key sent to reach a partition, at most (a broker that deals them round
robin reaches every partition of a topic of up to 12 within them)."""


def produce_to(
    ctx: CaseContext,
    conn: Connection,
    topic: str,
    partition: int,
    key: str,
    value: str,
    requirement: str = "V1L-PROD-1",
) -> Produced:
    """PRODUCE ``key:value`` until a record lands on ``partition`` (the first does when
    records with one key share a partition); UNSUPPORTED (V1L-PROD-9) when none does."""
    puts = []
    for _ in range(PLACEMENT_TRIES):
        put = produce(ctx, conn, topic, key, value, requirement)
        if put.partition == partition:
            return put
        puts.append(put)
    raise Unsupported(
        f"{len(puts)} records with the key {key!r} went to partitions"
        f" {', '.join(sorted({str(p.partition) for p in puts}))}, none to {partition}; this"
        " case needs a record there",
        "V1L-PROD-9",
        evidence_of(*(p.reply for p in puts), fields=("partition",)),
    )


def two_in_one_partition(
    ctx: CaseContext, conn: Connection, topic: str, key: str, requirement: str = "V1L-PROD-1"
) -> tuple[Produced, Produced]:
    """Records with ``key`` until two land on one partition (the first two do when records
    with one key share a partition): those two, the earlier first.  UNSUPPORTED
    (V1L-PROD-9) when no two do."""
    seen: dict[int, Produced] = {}
    puts = []
    for i in range(PLACEMENT_TRIES):
        put = produce(ctx, conn, topic, key, f"v{i}", requirement)
        if put.partition in seen:
            return seen[put.partition], put
        seen[put.partition] = put
        puts.append(put)
    raise Unsupported(
        f"{len(puts)} records with the key {key!r} went to {len(seen)} partitions, no two to"
        " one; this case needs two records in one partition",
        "V1L-PROD-9",
        evidence_of(*(p.reply for p in puts), fields=("partition",)),
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


def set_role(
    ctx: CaseContext, conn: Connection, topic: str, partition: int, role: str, requirement: str
) -> Reply:
    args = f"{topic} {partition} {role}"
    what = f"SET_PARTITION_ROLE {args}"
    return expect_ok(ctx, conn, "SET_PARTITION_ROLE", args, requirement, what)


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


def group_topic(ctx: CaseContext, conn: Connection, name: str = "t") -> str:
    """A fresh topic for a group case, made by one PRODUCE (V1L-PROD-1: "creating the topic
    on first use").  The document does not say that JOIN creates a topic, so no case JOINs
    a topic nobody produced to."""
    topic = ctx.name(name)
    produce(ctx, conn, topic, "k", "v", "V1L-PROD-1")
    return topic


def partitions_of(
    ctx: CaseContext, conn: Connection, topic: str, requirement: str
) -> tuple[int, ...]:
    """Every partition of ``topic``, which a PRODUCE has made: what a lone member of a
    fresh group is assigned (V1L-GRP-4: the shares cover every partition)."""
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
