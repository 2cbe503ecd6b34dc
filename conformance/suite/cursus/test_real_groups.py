"""Cursus revision real: consumer groups with key=value commands (SPEC.md, area "rgroups")."""

from __future__ import annotations

import re

from conformance.client import Connection
from conformance.protocols.cursus.messages import OkReply
from conformance.protocols.cursus.real_messages import RealCommand, command
from conformance.suite.case import case, require
from conformance.suite.cursus.reads import Member
from conformance.suite.cursus.real_verify import (
    assigned,
    create_topic,
    expect_error,
    expect_ok,
    fetch_offset,
    join,
    join_reply,
    member_of,
    ok_value,
)
from conformance.suite.target import CaseContext

ASSIGNMENTS = re.compile(r"\[(\d+( \d+)*)?\]")


def _sync(target: CaseContext, conn: Connection, topic: str, group: str, m: Member) -> list[int]:
    what = f"SYNC_GROUP member={m.id} generation={m.generation}"
    cmd = command("SYNC_GROUP", topic=topic, group=group, member=m.id, generation=m.generation)
    read = expect_ok(target, conn, cmd, "CUR-RGROUP-3", what)
    return assigned(read, what)


def _commit(topic: str, group: str, m: Member, partition: int, offset: int) -> RealCommand:
    return command(
        "COMMIT_OFFSET",
        topic=topic,
        partition=partition,
        group=group,
        offset=offset,
        member=m.id,
        generation=m.generation,
    )


@case("cursus/rgroups/1", "CUR-RGROUP-1")
def test_every_join_starts_a_higher_generation(target: CaseContext) -> None:
    """alice joins, bob joins: bob's generation is higher, and his id heartbeats.

    CUR-RGROUP-1: "`JOIN_GROUP topic=T group=G member=M` on an existing topic answers `OK
    generation=N member=ID assignments=[...]`; every join starts a new, higher generation, and ID is
    the member id the later commands use."
    """
    with target.connect() as conn:
        topic, group = create_topic(target, conn, "gen"), target.name("g")
        alice = join(target, conn, topic, group, "alice")
        bob = join(target, conn, topic, group, "bob")
        require(
            bob.reply.generation > alice.reply.generation,
            "CUR-RGROUP-1",
            f"bob joined at generation {bob.reply.generation}, alice at "
            f"{alice.reply.generation}: expected a higher one",
            alice.at("generation") + bob.at("generation"),
        )
        b = bob.reply
        beat = command("HEARTBEAT", topic=topic, group=group, member=b.id, generation=b.generation)
        expect_ok(target, conn, beat, "CUR-RGROUP-1", f"HEARTBEAT of {b.id}")


@case("cursus/rgroups/2", "CUR-RGROUP-2")
def test_assignments_print_in_brackets_and_cover_the_topic(target: CaseContext) -> None:
    """Two members of a 3-partition topic: `[..]` lists with spaces, together 0, 1, 2 once.

    CUR-RGROUP-2: "JOIN_GROUP and SYNC_GROUP print the member's partitions as numbers separated by
    single spaces inside brackets (`assignments=[0 1 2]`, `assignments=[]` for none), and the
    assignments of the group's members at one generation cover every partition of the topic exactly
    once."
    """
    with target.connect() as conn:
        topic, group = create_topic(target, conn, "cover", 3), target.name("g")
        reads = [join_reply(target, conn, topic, group, name) for name in ("alice", "bob")]
        bob = member_of(reads[1]).reply
        alice = Member(member_of(reads[0]).reply.id, bob.generation)
        parts: list[int] = []
        for m in (alice, bob):
            cmd = command(
                "SYNC_GROUP", topic=topic, group=group, member=m.id, generation=m.generation
            )
            read = expect_ok(target, conn, cmd, "CUR-RGROUP-2", f"SYNC_GROUP {m.id}")
            reads.append(read)
            parts += assigned(read, f"SYNC_GROUP {m.id}")
        for read in reads:
            text = ok_value(read, "assignments", "CUR-RGROUP-2", "assignments")
            require(
                ASSIGNMENTS.fullmatch(text) is not None,
                "CUR-RGROUP-2",
                f"assignments={text}, expected numbers separated by single spaces in brackets",
                read.at("assignments"),
            )
        require(
            sorted(parts) == [0, 1, 2],
            "CUR-RGROUP-2",
            f"the two members hold partitions {sorted(parts)}, expected 0, 1, 2 once each",
            reads[2].at("assignments") + reads[3].at("assignments"),
        )


@case("cursus/rgroups/3", "CUR-RGROUP-3")
def test_sync_and_heartbeat_need_the_current_generation(target: CaseContext) -> None:
    """SYNC_GROUP at an older generation and HEARTBEAT at a newer one get GEN_MISMATCH.

    CUR-RGROUP-3: "SYNC_GROUP and HEARTBEAT at the group's current generation are answered `OK`
    (HEARTBEAT: `OK member=ID generation=N`); at any other generation, older or newer, with `ERROR:
    GEN_MISMATCH current=C requested=R ...`."
    """
    with target.connect() as conn:
        topic, group = create_topic(target, conn, "stale"), target.name("g")
        alice = join(target, conn, topic, group, "alice").reply
        bob = join(target, conn, topic, group, "bob").reply
        old = command(
            "SYNC_GROUP", topic=topic, group=group, member=alice.id, generation=alice.generation
        )
        new = command(
            "HEARTBEAT", topic=topic, group=group, member=bob.id, generation=bob.generation + 1
        )
        for cmd, what in ((old, "SYNC_GROUP at the older generation"), (new, "HEARTBEAT ahead")):
            read = expect_error(target, conn, cmd, "CUR-RGROUP-3", what)
            require(
                "GEN_MISMATCH" in read.reply.text,
                "CUR-RGROUP-3",
                f"{what} was refused {read.payload[:80]!r}, expected GEN_MISMATCH",
                read.at("word1"),
            )
        now = command(
            "HEARTBEAT", topic=topic, group=group, member=bob.id, generation=bob.generation
        )
        beat = expect_ok(target, conn, now, "CUR-RGROUP-3", "HEARTBEAT at the current generation")
        require(
            isinstance(beat.reply, OkReply)
            and ok_value(beat, "generation", "CUR-RGROUP-3", "HEARTBEAT") == str(bob.generation),
            "CUR-RGROUP-3",
            f"HEARTBEAT answered {beat.payload[:80]!r}, expected generation={bob.generation}",
            beat.at("generation"),
        )
        _sync(target, conn, topic, group, Member(alice.id, bob.generation))


@case("cursus/rgroups/4", "CUR-RGROUP-4")
def test_leave_removes_the_member(target: CaseContext) -> None:
    """bob leaves: OK left=true; his heartbeat is refused; alice's generation is out of date.

    CUR-RGROUP-4: "`LEAVE_GROUP topic=T group=G member=ID generation=N` answers `OK group=G
    member=ID left=true` and removes the member: its next HEARTBEAT is refused (`member_not_found`),
    and the group moves to a new generation."
    """
    with target.connect() as conn:
        topic, group = create_topic(target, conn, "leave"), target.name("g")
        alice = join(target, conn, topic, group, "alice").reply
        bob = join(target, conn, topic, group, "bob").reply
        leave = command(
            "LEAVE_GROUP", topic=topic, group=group, member=bob.id, generation=bob.generation
        )
        read = expect_ok(target, conn, leave, "CUR-RGROUP-4", f"LEAVE_GROUP {bob.id}")
        require(
            ok_value(read, "left", "CUR-RGROUP-4", "LEAVE_GROUP") == "true",
            "CUR-RGROUP-4",
            f"LEAVE_GROUP answered {read.payload[:80]!r}, expected left=true",
            read.at("left"),
        )
        gone = command(
            "HEARTBEAT", topic=topic, group=group, member=bob.id, generation=bob.generation
        )
        refused = expect_error(
            target, conn, gone, "CUR-RGROUP-4", "HEARTBEAT of a member that left"
        )
        require(
            "member_not_found" in refused.reply.text,
            "CUR-RGROUP-4",
            f"the HEARTBEAT of a member that left was refused {refused.payload[:80]!r}, expected "
            "member_not_found",
            refused.at("word1"),
        )
        stale = command(
            "HEARTBEAT", topic=topic, group=group, member=alice.id, generation=bob.generation
        )
        expect_error(
            target, conn, stale, "CUR-RGROUP-4", "HEARTBEAT at the generation before the leave"
        )


@case("cursus/rgroups/5", "CUR-RGROUP-5")
def test_a_commit_of_the_owner_is_fetched_back(target: CaseContext) -> None:
    """The owner commits offset 3; FETCH_OFFSET answers 3.

    CUR-RGROUP-5: "`COMMIT_OFFSET topic=T partition=P group=G offset=O member=ID generation=N` from
    the member owning P at the current generation answers `OK`, and FETCH_OFFSET then answers
    `offset=O`."
    """
    with target.connect() as conn:
        topic, group = create_topic(target, conn, "commit"), target.name("g")
        alice = join(target, conn, topic, group, "alice").reply
        expect_ok(target, conn, _commit(topic, group, alice, 0, 3), "CUR-RGROUP-5", "COMMIT_OFFSET")
        got = fetch_offset(target, conn, topic, group, 0)
        require(
            got.reply == 3,
            "CUR-RGROUP-5",
            f"FETCH_OFFSET after a commit of 3 answered offset={got.reply}",
            got.at("offset"),
        )


@case("cursus/rgroups/6", "CUR-RGROUP-6")
def test_commits_of_other_partitions_and_lower_offsets_are_refused(target: CaseContext) -> None:
    """A commit of a partition not owned gets NOT_OWNER; 5 then 3 gets offset_regression.

    CUR-RGROUP-6: "COMMIT_OFFSET of a partition the member is not assigned is refused with `ERROR:
    NOT_OWNER ...`, and one lower than the offset already committed with `ERROR: offset_regression
    ...`; the committed offset does not change."
    """
    with target.connect() as conn:
        topic, group = create_topic(target, conn, "owner", 2), target.name("g")
        join(target, conn, topic, group, "alice")
        bob = join(target, conn, topic, group, "bob").reply
        mine = _sync(target, conn, topic, group, bob)
        other = 1 - mine[0] if len(mine) == 1 else 2
        for cmd, code, what in (
            (_commit(topic, group, bob, other, 1), "NOT_OWNER", f"a commit of partition {other}"),
        ):
            read = expect_error(target, conn, cmd, "CUR-RGROUP-6", what)
            require(
                code in read.reply.text, "CUR-RGROUP-6", f"{what}: {read.reply.text}", read.at()
            )
        p = mine[0] if mine else 0
        expect_ok(target, conn, _commit(topic, group, bob, p, 5), "CUR-RGROUP-6", "a commit of 5")
        read = expect_error(target, conn, _commit(topic, group, bob, p, 3), "CUR-RGROUP-6", "3")
        require(
            "offset_regression" in read.reply.text,
            "CUR-RGROUP-6",
            f"a commit of 3 after 5 was refused {read.payload[:80]!r}, expected offset_regression",
            read.at("word1"),
        )
        got = fetch_offset(target, conn, topic, group, p)
        require(got.reply == 5, "CUR-RGROUP-6", f"offset={got.reply}, expected 5", got.at("offset"))


@case("cursus/rgroups/7", "CUR-RGROUP-7")
def test_batch_commit_commits_every_entry_or_none(target: CaseContext) -> None:
    """BATCH_COMMIT P0:4,P1:6 answers batched=2; an entry without P commits nothing.

    CUR-RGROUP-7: "`BATCH_COMMIT topic=T group=G member=ID generation=N P0:o0,P1:o1` commits every
    entry and answers `OK batched=2`; an entry without the `P` prefix, not `P<p>:<o>`, or naming a
    partition twice is refused with an `ERROR:` reply and nothing of the batch is committed."
    """
    with target.connect() as conn:
        topic, group = create_topic(target, conn, "bulk", 2), target.name("g")
        m = join(target, conn, topic, group, "alice").reply
        head = dict(topic=topic, group=group, member=m.id, generation=m.generation)
        read = expect_ok(
            target,
            conn,
            command("BATCH_COMMIT", "P0:4,P1:6", **head),
            "CUR-RGROUP-7",
            "BATCH_COMMIT",
        )
        require(
            ok_value(read, "batched", "CUR-RGROUP-7", "BATCH_COMMIT") == "2",
            "CUR-RGROUP-7",
            f"BATCH_COMMIT of two entries answered {read.payload[:80]!r}, expected batched=2",
            read.at("batched"),
        )
        bad = command("BATCH_COMMIT", "P0:9,1:9", **head)
        expect_error(target, conn, bad, "CUR-RGROUP-7", "BATCH_COMMIT with an entry without P")
        for p, want in ((0, 4), (1, 6)):
            got = fetch_offset(target, conn, topic, group, p)
            require(
                got.reply == want,
                "CUR-RGROUP-7",
                f"partition {p}: offset={got.reply}, expected {want}",
                got.at("offset"),
            )


@case("cursus/rgroups/8", "CUR-RGROUP-8")
def test_unknown_groups_and_members_are_named(target: CaseContext) -> None:
    """SYNC_GROUP of an unknown group: group_not_found; HEARTBEAT of a ghost: member_not_found.

    CUR-RGROUP-8: "a SYNC_GROUP, HEARTBEAT or COMMIT_OFFSET naming a group that does not exist is
    refused with `ERROR: group_not_found ...`, one naming a member the group does not have with
    `ERROR: member_not_found ...`, ..."
    """
    with target.connect() as conn:
        topic, group = create_topic(target, conn, "ghost"), target.name("g")
        m = join(target, conn, topic, group, "alice").reply
        for cmd, code in (
            (
                command(
                    "SYNC_GROUP",
                    topic=topic,
                    group=target.name("none"),
                    member=m.id,
                    generation=m.generation,
                ),
                "group_not_found",
            ),
            (
                command(
                    "HEARTBEAT", topic=topic, group=group, member="ghost-1", generation=m.generation
                ),
                "member_not_found",
            ),
        ):
            read = expect_error(target, conn, cmd, "CUR-RGROUP-8", cmd.name)
            require(
                code in read.reply.text,
                "CUR-RGROUP-8",
                f"{cmd.name} was refused {read.payload[:80]!r}, expected {code}",
                read.at("word1"),
            )


@case("cursus/rgroups/9", "CUR-RGROUP-9")
def test_a_join_with_its_generation_resumes_the_member(target: CaseContext) -> None:
    """alice joins again naming her id and generation: resumed, same generation; a stale one
    is refused.

    CUR-RGROUP-9: "`JOIN_GROUP topic=T group=G member=ID generation=N` of a member the group has,
    at the group's current generation, resumes it: `OK generation=N member=ID assignments=[...]
    resumed=true`, with the same member id and no new generation; at another generation it is
    refused with `ERROR: GEN_MISMATCH ...`."
    """
    with target.connect() as conn:
        topic, group = create_topic(target, conn, "resume"), target.name("g")
        m = join(target, conn, topic, group, "alice").reply
        again = command(
            "JOIN_GROUP", topic=topic, group=group, member=m.id, generation=m.generation
        )
        read = expect_ok(target, conn, again, "CUR-RGROUP-9", f"JOIN_GROUP {m.id} resuming")
        got = (
            ok_value(read, "member", "CUR-RGROUP-9", "JOIN_GROUP"),
            ok_value(read, "generation", "CUR-RGROUP-9", "JOIN_GROUP"),
            ok_value(read, "resumed", "CUR-RGROUP-9", "JOIN_GROUP"),
        )
        require(
            got == (m.id, str(m.generation), "true"),
            "CUR-RGROUP-9",
            f"the resuming join answered member={got[0]} generation={got[1]} resumed={got[2]}, "
            f"expected member={m.id} generation={m.generation} resumed=true",
            read.at("member", "generation", "resumed"),
        )
        stale = command(
            "JOIN_GROUP", topic=topic, group=group, member=m.id, generation=m.generation + 5
        )
        refused = expect_error(
            target, conn, stale, "CUR-RGROUP-9", "JOIN_GROUP at another generation"
        )
        require(
            "GEN_MISMATCH" in refused.reply.text,
            "CUR-RGROUP-9",
            f"a join resuming at another generation was refused {refused.payload[:80]!r}, "
            "expected GEN_MISMATCH",
            refused.at("word1"),
        )
