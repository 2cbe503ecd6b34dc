"""V1 line committed offsets: COMMIT by a member, OFFSET by anyone (SPEC.md, area
"offsets")."""

from __future__ import annotations

from conformance.client import Connection
from conformance.protocols.v1line.errors import GENERATION_MISMATCH
from conformance.suite.case import Unsupported, case, require
from conformance.suite.target import CaseContext
from conformance.suite.v1line.steps import Joined, group_topic, join, sync
from conformance.suite.v1line.verify import Reply, expect_error, expect_ok


def commit(
    ctx: CaseContext,
    conn: Connection,
    group: str,
    topic: str,
    member: str,
    generation: int,
    partition: int,
    offset: int,
    requirement: str,
) -> Reply:
    """COMMIT answered committed=true."""
    args = f"{group} {topic} {member} {generation} {partition} {offset}"
    reply = expect_ok(ctx, conn, "COMMIT", args, requirement, f"COMMIT {args}")
    require(
        reply.values["committed"] is True,
        requirement,
        f"COMMIT {args}: answered {reply.shown()}, expected committed=true",
        reply.at("committed"),
    )
    return reply


def stored(
    ctx: CaseContext,
    conn: Connection,
    group: str,
    topic: str,
    partition: int,
    want: int,
    requirement: str,
    why: str,
    before: Reply | None = None,
) -> Reply:
    """OFFSET answers ``want``."""
    args = f"{group} {topic} {partition}"
    got = expect_ok(ctx, conn, "OFFSET", args, requirement, f"OFFSET {args}")
    require(
        got.number("offset") == want,
        requirement,
        f"OFFSET {args}: offset={got.number('offset')}, expected offset={want} ({why})",
        (before.at("offset") if before is not None else got.at()) + got.at("offset"),
    )
    return got


def owner(ctx: CaseContext, conn: Connection, requirement: str) -> tuple[str, str, Joined]:
    """A fresh group whose one member 'c1' owns every partition of a fresh topic (made by a
    PRODUCE)."""
    topic, group = group_topic(ctx, conn), ctx.name("g")
    joined = join(ctx, conn, group, topic, "c1", requirement)
    return topic, group, sync(ctx, conn, group, topic, "c1", joined.generation, requirement)


@case("v1line/offsets/1", "V1L-OFF-1")
def test_a_members_commit_is_what_offset_then_answers(target: CaseContext) -> None:
    """COMMIT by the owner at the current generation answers committed=true; OFFSET answers it.

    V1L-OFF-1: "COMMIT by a member at the current generation for a partition it owns answers
    `committed=true`, and OFFSET for that group, topic and partition then answers `offset=<the
    committed offset>`."
    """
    with target.connect() as conn:
        topic, group, c1 = owner(target, conn, "V1L-OFF-1")
        for partition, offset in ((c1.assigned[0], 5), (c1.assigned[-1], 12)):
            commit(target, conn, group, topic, "c1", c1.generation, partition, offset, "V1L-OFF-1")
            stored(target, conn, group, topic, partition, offset, "V1L-OFF-1", "as committed")


def second_member(
    ctx: CaseContext, conn: Connection, topic: str, group: str, requirement: str
) -> tuple[Joined, Joined]:
    """'c2' joins: each member's SYNC at the new generation (c1's, c2's)."""
    joined = join(ctx, conn, group, topic, "c2", requirement)
    one = sync(ctx, conn, group, topic, "c1", joined.generation, requirement)
    two = sync(ctx, conn, group, topic, "c2", joined.generation, requirement)
    return one, two


@case("v1line/offsets/2", "V1L-OFF-2")
def test_a_commit_at_a_stale_generation_is_refused_and_changes_nothing(
    target: CaseContext,
) -> None:
    """After a rebalance, COMMIT at the old generation is GENERATION_MISMATCH; OFFSET is
    unchanged.

    V1L-OFF-2: "COMMIT at a stale generation is answered GENERATION_MISMATCH and the stored offset
    is unchanged."
    """
    with target.connect() as conn:
        topic, group, c1 = owner(target, conn, "V1L-OFF-2")
        one, _ = second_member(target, conn, topic, group, "V1L-OFF-2")
        partition = (one.assigned or c1.assigned)[0]
        commit(target, conn, group, topic, "c1", one.generation, partition, 3, "V1L-OFF-2")
        args = f"{group} {topic} c1 {c1.generation} {partition} 9"
        expect_error(
            target,
            conn,
            "COMMIT",
            args,
            GENERATION_MISMATCH,
            "V1L-OFF-2",
            f"COMMIT {args} (generation {c1.generation}, now {one.generation})",
        )
        stored(target, conn, group, topic, partition, 3, "V1L-OFF-2", "the refused commit")


@case("v1line/offsets/3", "V1L-OFF-3")
def test_a_commit_for_a_partition_the_member_does_not_own_is_refused(
    target: CaseContext,
) -> None:
    """COMMIT by c1 for a partition c2 owns is GENERATION_MISMATCH; OFFSET is unchanged.

    V1L-OFF-3: "COMMIT for a partition not assigned to that member is answered
    GENERATION_MISMATCH and the stored offset is unchanged."
    """
    with target.connect() as conn:
        topic, group, _ = owner(target, conn, "V1L-OFF-3")
        one, two = second_member(target, conn, topic, group, "V1L-OFF-3")
        if not two.assigned:
            raise Unsupported(
                f"topic {topic} has one partition: with two members there is none c1 does not"
                " own and c2 does",
                evidence=two.reply.at("assigned"),
            )
        theirs = two.assigned[0]
        commit(target, conn, group, topic, "c2", two.generation, theirs, 4, "V1L-OFF-3")
        args = f"{group} {topic} c1 {one.generation} {theirs} 8"
        expect_error(
            target,
            conn,
            "COMMIT",
            args,
            GENERATION_MISMATCH,
            "V1L-OFF-3",
            f"COMMIT {args} (partition {theirs} is c2's)",
        )
        stored(target, conn, group, topic, theirs, 4, "V1L-OFF-3", "the refused commit")


@case("v1line/offsets/4", "V1L-OFF-4")
def test_a_commit_by_a_consumer_not_in_the_group_is_refused(target: CaseContext) -> None:
    """COMMIT by a consumer that never joined is GENERATION_MISMATCH.

    V1L-OFF-4: "COMMIT by a consumer not in the group is answered GENERATION_MISMATCH."
    """
    with target.connect() as conn:
        topic, group, c1 = owner(target, conn, "V1L-OFF-4")
        args = f"{group} {topic} stranger {c1.generation} {c1.assigned[0]} 1"
        expect_error(
            target, conn, "COMMIT", args, GENERATION_MISMATCH, "V1L-OFF-4", f"COMMIT {args}"
        )
        other = target.name("nogroup")
        args = f"{other} {topic} stranger 1 0 1"
        expect_error(
            target,
            conn,
            "COMMIT",
            args,
            GENERATION_MISMATCH,
            "V1L-OFF-4",
            f"COMMIT {args} (a group nobody joined)",
        )


@case("v1line/offsets/5", "V1L-OFF-5")
def test_offset_needs_no_membership(target: CaseContext) -> None:
    """A new connection that never joined reads the group's committed offset.

    V1L-OFF-5: "OFFSET needs no membership: any connection reads a group's committed offset."
    """
    with target.connect() as conn:
        topic, group, c1 = owner(target, conn, "V1L-OFF-5")
        partition = c1.assigned[0]
        done = commit(target, conn, group, topic, "c1", c1.generation, partition, 7, "V1L-OFF-5")
    with target.connect() as outsider:
        stored(target, outsider, group, topic, partition, 7, "V1L-OFF-5", "committed by c1", done)


@case("v1line/offsets/6", "V1L-OFF-6")
def test_the_reference_brokers_offset_conventions(target: CaseContext) -> None:
    """OFFSET with nothing committed answers 0; a lower commit replaces a higher one.

    V1L-OFF-6: "OFFSET where nothing was committed answers `offset=0`; a commit replaces the
    stored value as given, a lower one included."
    """
    with target.connect() as conn:
        topic, group, c1 = owner(target, conn, "V1L-OFF-6")
        partition = c1.assigned[0]
        stored(target, conn, group, topic, partition, 0, "V1L-OFF-6", "nothing committed")
        for offset in (10, 4):
            commit(target, conn, group, topic, "c1", c1.generation, partition, offset, "V1L-OFF-6")
        stored(target, conn, group, topic, partition, 4, "V1L-OFF-6", "the last commit, lower")
