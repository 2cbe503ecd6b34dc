"""PRODUCE acks=all while the suite plays the followers, and when its answer can be judged.

The followers must report a record before its acks=all reply says where it went, so they
report where a record with the same key just went (:func:`produce_acks_all`): right when
records with one key share a partition (V1L-PROD-9, a SHOULD).  An OK reply carries its
own partition, offset and hw; a REPLICATION_TIMEOUT does not, so before a case holds one
against the target, :func:`placed` checks that the record went where the followers
reported it (a record with the same key lands right after it), and the case is
UNSUPPORTED (V1L-PROD-9) when it did not.

A REPLICATION_TIMEOUT is judged only when the followers' reports were all answered well
within the acks=all timeout (:data:`PROMPT_SHARE` of it), or when it came sooner than the
timeout: otherwise the client or the target may have been stalled past the timeout (the
embedded broker's is 400 ms, and CI runs on two loaded cores), and the try is
inconclusive.  :func:`acks_all_until_judged` tries again on a fresh topic, and ends the
case UNSUPPORTED (inconclusive, never FAIL) when every try was.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from conformance.client import Connection
from conformance.protocols.v1line.errors import REPLICATION_TIMEOUT
from conformance.suite.case import Unsupported
from conformance.suite.target import CaseContext
from conformance.suite.v1line.steps import (
    MARGIN_S,
    Produced,
    ack_timeout,
    followers,
    produce,
    wait_read,
)
from conformance.suite.v1line.verify import Reply, call, read, readable, send

PROMPT_SHARE = 0.5
"""A REPLICATION_TIMEOUT is judged when every follower's report was answered within this
share of the acks=all timeout after the PRODUCE was sent."""
TRIES = 3
"""acks=all tries on fresh topics before a case whose every try was slow ends
inconclusive."""


def follow(
    ctx: CaseContext,
    conn: Connection,
    other: Connection,
    topic: str,
    partition: int,
    offset: int,
    requirement: str,
    replicas: Sequence[int] | None = None,
    start: float | None = None,
) -> float | None:
    """Until a reply is readable on ``conn`` (or the acks=all timeout and a margin have
    passed), the followers (``replicas``, default all) report ``offset`` of ``partition``
    on ``other``, round after round.  A report may reach the target before the record it
    names (the two connections race), so a refused one is sent again, not judged.  The
    seconds from ``start`` to the end of the first round every report of which was
    answered OK (None: no round was)."""
    start = time.monotonic() if start is None else start
    deadline = start + ack_timeout(ctx) + MARGIN_S
    reported: float | None = None
    while not readable(conn, 0.0) and time.monotonic() < deadline:
        answered = True
        for replica in followers(ctx) if replicas is None else replicas:
            args = f"{topic} {partition} {replica} {offset}"
            got = call(ctx, other, "REPLICA_FETCH", args, requirement, f"REPLICA_FETCH {args}")
            answered = answered and got.ok
        if reported is None and answered:
            reported = time.monotonic() - start
        readable(conn, 0.02)
    return reported


@dataclass(frozen=True)
class AcksAll:
    """A PRODUCE acks=all sent while the followers reported: the record with the same key
    sent before it (``seed``), its reply, how long that took and how long the followers'
    first reports took (seconds from the PRODUCE; None: none was answered OK)."""

    topic: str
    key: str
    seed: Produced
    reply: Reply
    took: float
    reported: float | None

    @property
    def offset(self) -> int:
        """Where the followers reported the record: right after the seed."""
        return self.seed.offset + 1

    def timed_out(self) -> bool:
        return not self.reply.ok and self.reply.code == REPLICATION_TIMEOUT

    def judged(self, ctx: CaseContext) -> bool:
        """Whether its REPLICATION_TIMEOUT can be held against the target: it came
        sooner than the acks=all timeout, or the followers reported in good time."""
        if self.took < ack_timeout(ctx):
            return True
        return self.reported is not None and self.reported <= ack_timeout(ctx) * PROMPT_SHARE

    def timing(self) -> str:
        """How the try went, for a message."""
        reported = (
            "no round of reports was answered OK"
            if self.reported is None
            else f"every follower's report answered {self.reported * 1000:.0f} ms after it"
        )
        return f"answered after {self.took * 1000:.0f} ms, {reported}"


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
) -> AcksAll:
    """PRODUCE ``key:value`` acks=all while the followers (``replicas``, default all)
    report it on ``other``: a record with the same key first (acks=1) shows where it
    goes; then the followers report the offset after it until the acks=all reply comes."""
    seed = produce(ctx, conn, topic, key, "seed", requirement)
    args = f"{topic} {key}:{value} {acks}"
    start = time.monotonic()
    send(conn, "PRODUCE", args)
    reported = follow(
        ctx, conn, other, topic, seed.partition, seed.offset + 1, requirement, replicas, start
    )
    reply = read(
        ctx,
        conn,
        requirement,
        f"PRODUCE {args}",
        command="PRODUCE",
        timeout=wait_read(ctx, ack_timeout(ctx)),
    )
    return AcksAll(topic, key, seed, reply, time.monotonic() - start, reported)


def placed(ctx: CaseContext, conn: Connection, got: AcksAll, requirement: str) -> Produced:
    """After a REPLICATION_TIMEOUT: the acks=all record went where the followers reported
    it, as a record with the same key sent now lands right after it; UNSUPPORTED
    (V1L-PROD-9) when that does not show."""
    probe = produce(ctx, conn, got.topic, got.key, "probe", requirement)
    if probe.partition != got.seed.partition or probe.offset != got.offset + 1:
        raise Unsupported(
            f"PRODUCE {got.topic} acks=all answered {got.reply.shown()}; the followers reported"
            f" offset {got.offset} of partition {got.seed.partition}, after the record sent"
            f" before it with the same key, but the next record with that key went to"
            f" partition {probe.partition} offset {probe.offset}, not offset {got.offset + 1}"
            " there: the acks=all record may have gone elsewhere (that records with one key"
            " share a partition is V1L-PROD-9, a SHOULD), so its timeout is not judged",
            "V1L-PROD-9",
            got.seed.reply.at("partition", "offset") + probe.reply.at("partition", "offset"),
        )
    return probe


def acks_all_until_judged(
    ctx: CaseContext,
    attempt: Callable[[int], AcksAll],
    conn: Connection,
    requirement: str,
) -> AcksAll:
    """``attempt(i)`` (a fresh topic each time, and its acks=all try) until one can be
    judged: an OK, any answer but REPLICATION_TIMEOUT, or a REPLICATION_TIMEOUT that
    :meth:`AcksAll.judged` and whose record went where the followers reported it
    (:func:`placed`).  UNSUPPORTED (inconclusive) when every one of :data:`TRIES` was
    too slow to judge.  The try judged."""
    slow: list[str] = []
    for i in range(TRIES):
        got = attempt(i)
        if not got.timed_out():
            return got
        if got.judged(ctx):
            placed(ctx, conn, got, requirement)
            return got
        slow.append(got.timing())
    raise Unsupported(
        f"inconclusive: each of {TRIES} acks=all tries was answered REPLICATION_TIMEOUT"
        f" although the followers reported, but too slowly to tell ({'; '.join(slow)};"
        f" acks=all timeout {ack_timeout(ctx) * 1000:.0f} ms): the client or the target was"
        " stalled",
        evidence=got.reply.at("status", "code"),
    )
