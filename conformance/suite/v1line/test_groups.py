"""V1 line consumer groups: JOIN, SYNC, HEARTBEAT, LEAVE, generations, assignors and
session expiry (SPEC.md, area "groups")."""

from __future__ import annotations

import time

from conformance.client import Connection
from conformance.protocols.v1line.errors import BAD_REQUEST, GENERATION_MISMATCH
from conformance.suite.case import case, require
from conformance.suite.shown import show_all
from conformance.suite.target import CaseContext
from conformance.suite.v1line.steps import (
    MARGIN_S,
    Joined,
    check_cover,
    group_topic,
    join,
    members_shares,
    partitions_of,
    session_timeout,
    sync,
    wire_list,
)
from conformance.suite.v1line.verify import (
    Reply,
    call,
    evidence_of,
    expect_error,
    expect_ok,
    real,
)


@case("v1line/groups/1", "V1L-GRP-1")
def test_join_answers_generation_and_assigned(target: CaseContext) -> None:
    """JOIN of a new group answers a generation and a list of assigned partitions.

    V1L-GRP-1: "`JOIN <group> <topic> <consumer_id>` adds the consumer and answers
    `generation=<n> assigned=[<partition ids>]`."
    """
    with target.connect() as conn:
        topic, group = group_topic(target, conn), target.name("g")
        first = join(target, conn, group, topic, "c1", "V1L-GRP-1")
        require(
            len(first.assigned) > 0,
            "V1L-GRP-1",
            f"JOIN {group} {topic} c1, its only member: assigned={wire_list(first.assigned)},"
            " expected the topic's partitions",
            first.reply.at("assigned"),
        )
        args = f"{group} {topic} c1 {first.generation}"
        expect_ok(target, conn, "HEARTBEAT", args, "V1L-GRP-1", f"HEARTBEAT {args} (the member)")


@case("v1line/groups/2", "V1L-GRP-2")
def test_the_first_join_of_a_new_group_answers_generation_2(target: CaseContext) -> None:
    """The first JOIN of a new group answers generation=2.

    V1L-GRP-2: "the first JOIN of a new group answers generation 2."
    """
    with target.connect() as conn:
        topic, group = group_topic(target, conn), target.name("g")
        first = join(target, conn, group, topic, "c1", "V1L-GRP-2")
        require(
            first.generation == 2,
            "V1L-GRP-2",
            f"the first JOIN of group {group}: generation={first.generation}, expected 2",
            first.reply.at("generation"),
        )


@case("v1line/groups/3", "V1L-GRP-3")
def test_the_first_join_of_a_new_group_answers_generation_1(target: CaseContext) -> None:
    """The first JOIN of a new group answers generation=1.

    V1L-GRP-3: "the first JOIN of a new group answers generation 1."
    """
    with target.connect() as conn:
        topic, group = group_topic(target, conn), target.name("g")
        first = join(target, conn, group, topic, "c1", "V1L-GRP-3")
        require(
            first.generation == 1,
            "V1L-GRP-3",
            f"the first JOIN of group {group}: generation={first.generation}, expected 1",
            first.reply.at("generation"),
        )


@case("v1line/groups/4", "V1L-GRP-4")
def test_a_new_member_raises_the_generation_and_shares_cover_the_topic(
    target: CaseContext,
) -> None:
    """A second and a third member each raise the generation; their SYNC shares are disjoint and
    cover every partition.

    V1L-GRP-4: "a JOIN by a new member raises the generation; after it, SYNC at the new
    generation gives every member its share, and the shares are disjoint and cover every
    partition of the topic."
    """
    with target.connect() as conn:
        topic, group = group_topic(target, conn), target.name("g")
        everything = partitions_of(target, conn, topic, "V1L-GRP-4")
        members = ["m1"]
        last = join(target, conn, group, topic, "m1", "V1L-GRP-4")
        for new in ("m2", "m3"):
            joined = join(target, conn, group, topic, new, "V1L-GRP-4")
            require(
                joined.generation > last.generation,
                "V1L-GRP-4",
                f"JOIN by the new member {new}: generation={joined.generation}, expected above"
                f" {last.generation} (the generation before it)",
                last.reply.at("generation") + joined.reply.at("generation"),
            )
            members.append(new)
            shares = members_shares(
                target, conn, group, topic, members, joined.generation, "V1L-GRP-4"
            )
            check_cover(shares, everything, "V1L-GRP-4", f"SYNC at generation {joined.generation}")
            last = joined


def two_members(
    ctx: CaseContext, conn: Connection, requirement: str, assignor: str | None
) -> tuple[str, str, tuple[int, ...], dict[str, Joined]]:
    """A group of 'cb' then 'ca' (joined out of order) on a fresh topic: the topic, the
    group, every partition, and each member's SYNC at the last generation."""
    topic, group = group_topic(ctx, conn, f"t-{assignor}"), ctx.name(f"g-{assignor}")
    everything = partitions_of(ctx, conn, topic, requirement)
    join(ctx, conn, group, topic, "cb", requirement, assignor)
    joined = join(ctx, conn, group, topic, "ca", requirement, assignor)
    shares = members_shares(ctx, conn, group, topic, ["ca", "cb"], joined.generation, requirement)
    return topic, group, everything, shares


def check_deal(
    shares: dict[str, Joined], want: dict[str, list[int]], requirement: str, rule: str
) -> None:
    for member, share in shares.items():
        require(
            sorted(share.assigned) == want[member],
            requirement,
            f"{rule}: member {member} got assigned={wire_list(share.assigned)}, expected"
            f" {wire_list(want[member])} (members ordered by consumer id: ca, cb)",
            evidence_of(*(s.reply for s in shares.values()), fields=("assigned",)),
        )


@case("v1line/groups/5", "V1L-GRP-5")
def test_round_robin_deals_partition_p_to_member_p_mod_n(target: CaseContext) -> None:
    """With assignor=round_robin, and with no assignor, partition p goes to the (p mod 2)th member
    by consumer id.

    V1L-GRP-5: "with `assignor=round_robin` (and by default), members are ordered by consumer id
    and partition p goes to member p mod n."
    """
    with target.connect() as conn:
        for assignor in ("round_robin", None):
            _, _, everything, shares = two_members(target, conn, "V1L-GRP-5", assignor)
            want = {m: [p for p in everything if p % 2 == i] for i, m in enumerate(("ca", "cb"))}
            rule = f"assignor={assignor}" if assignor else "no assignor (round_robin)"
            check_deal(shares, want, "V1L-GRP-5", rule)


@case("v1line/groups/6", "V1L-GRP-6")
def test_range_deals_contiguous_runs_by_consumer_id(target: CaseContext) -> None:
    """With assignor=range, two members get contiguous runs from partition 0, the first one
    longer when the count is odd.

    V1L-GRP-6: "with `assignor=range`, members are ordered by consumer id and get contiguous runs
    of partitions from 0, each P div n long, the first P mod n members one longer."
    """
    with target.connect() as conn:
        _, _, everything, shares = two_members(target, conn, "V1L-GRP-6", "range")
        count = len(everything)
        first = count // 2 + count % 2
        ordered = sorted(everything)
        want = {"ca": ordered[:first], "cb": ordered[first:]}
        check_deal(shares, want, "V1L-GRP-6", f"assignor=range over {count} partitions")


@case("v1line/groups/7", "V1L-GRP-7")
def test_an_unknown_assignor_is_bad_request(target: CaseContext) -> None:
    """JOIN with assignor=sticky or strategy=range is answered BAD_REQUEST.

    V1L-GRP-7: "an assignor arg other than `assignor=round_robin` or `assignor=range`
    (`assignor=sticky`, `strategy=range`) is answered BAD_REQUEST."
    """
    with target.connect() as conn:
        topic, group = group_topic(target, conn), target.name("g")
        for bad in ("assignor=sticky", "strategy=range", "assignor="):
            args = f"{group} {topic} c1 {bad}"
            expect_error(target, conn, "JOIN", args, BAD_REQUEST, "V1L-GRP-7", f"JOIN {args}")


@case("v1line/groups/8", "V1L-GRP-8")
def test_the_assignor_is_matched_exactly(target: CaseContext) -> None:
    """JOIN with assignor=RANGE or ASSIGNOR=range is answered BAD_REQUEST.

    V1L-GRP-8: "the assignor is matched exactly: `assignor=RANGE` is answered BAD_REQUEST."
    """
    with target.connect() as conn:
        topic, group = group_topic(target, conn), target.name("g")
        for bad in ("assignor=RANGE", "ASSIGNOR=range"):
            args = f"{group} {topic} c1 {bad}"
            expect_error(target, conn, "JOIN", args, BAD_REQUEST, "V1L-GRP-8", f"JOIN {args}")


def member_checks(
    ctx: CaseContext, conn: Connection, command: str, requirement: str
) -> tuple[Joined, Reply]:
    """``command`` (SYNC or HEARTBEAT) by a member at the current generation (answered
    OK), then at the generation before and after it and by a stranger, each answered
    GENERATION_MISMATCH.  The JOIN and the OK reply."""
    topic, group = group_topic(ctx, conn), ctx.name("g")
    joined = join(ctx, conn, group, topic, "c1", requirement)
    gen = joined.generation
    args = f"{group} {topic} c1 {gen}"
    ok = expect_ok(ctx, conn, command, args, requirement, f"{command} {args} (the current one)")
    for bad, why in (
        (f"{group} {topic} c1 {gen - 1}", "an older generation"),
        (f"{group} {topic} c1 {gen + 1}", "a newer generation"),
        (f"{group} {topic} stranger {gen}", "a consumer not in the group"),
    ):
        what = f"{command} {bad} ({why})"
        expect_error(ctx, conn, command, bad, GENERATION_MISMATCH, requirement, what)
    return joined, ok


@case("v1line/groups/9", "V1L-GRP-9")
def test_sync_at_the_current_generation_answers_the_assignment(target: CaseContext) -> None:
    """SYNC by a member at the current generation answers it and its assignment; another
    generation or a stranger gets GENERATION_MISMATCH.

    V1L-GRP-9: "SYNC at the current generation by a member answers `generation=<n>
    assigned=[...]` with its current assignment; at another generation, or by a consumer not in
    the group, GENERATION_MISMATCH."
    """
    with target.connect() as conn:
        joined, ok = member_checks(target, conn, "SYNC", "V1L-GRP-9")
        got = (ok.number("generation"), sorted(ok.ints("assigned")))
        want = (joined.generation, sorted(joined.assigned))
        require(
            got == want,
            "V1L-GRP-9",
            f"SYNC at generation {joined.generation}: generation={got[0]}"
            f" assigned={wire_list(got[1])}, expected generation={want[0]}"
            f" assigned={wire_list(want[1])} (as JOIN answered)",
            joined.reply.at("generation", "assigned") + ok.at("generation", "assigned"),
        )


@case("v1line/groups/10", "V1L-GRP-10")
def test_heartbeat_at_the_current_generation_answers_ok(target: CaseContext) -> None:
    """HEARTBEAT by a member at the current generation answers heartbeat=ok; another generation
    or a stranger gets GENERATION_MISMATCH.

    V1L-GRP-10: "HEARTBEAT at the current generation by a member answers `heartbeat=ok`; at
    another generation, or by a consumer not in the group, GENERATION_MISMATCH."
    """
    with target.connect() as conn:
        member_checks(target, conn, "HEARTBEAT", "V1L-GRP-10")  # the codec reads heartbeat=ok


def current(
    ctx: CaseContext, conn: Connection, group: str, topic: str, member: str, requirement: str
) -> Joined:
    """The group's current generation and ``member``'s share: its JOIN again (a current
    member's JOIN leaves the generation alone, V1L-GRP-14), then SYNC at it."""
    again = join(ctx, conn, group, topic, member, requirement)
    return sync(ctx, conn, group, topic, member, again.generation, requirement)


@case("v1line/groups/11", "V1L-GRP-11")
def test_a_silent_member_is_removed_after_the_session_timeout(target: CaseContext) -> None:
    """A member silent for longer than the session timeout is removed: the generation rises
    and the other member gets every partition.

    V1L-GRP-11: "a member that neither heartbeats nor syncs for longer than the session timeout
    is removed: the generation rises and the remaining members' shares cover its partitions."
    """
    with target.connect() as conn:
        topic, group = group_topic(target, conn), target.name("g")
        everything = partitions_of(target, conn, topic, "V1L-GRP-11")
        join(target, conn, group, topic, "quiet", "V1L-GRP-11")
        joined = join(target, conn, group, topic, "alive", "V1L-GRP-11")
        session = session_timeout(target)
        deadline = time.monotonic() + session + MARGIN_S
        beat = ""
        while time.monotonic() < deadline:
            time.sleep(min(session / 4, max(0.0, deadline - time.monotonic())))
            args = f"{group} {topic} alive {joined.generation}"
            beat_reply = call(target, conn, "HEARTBEAT", args, "V1L-GRP-11", f"HEARTBEAT {args}")
            if not beat_reply.ok:
                beat = beat_reply.code
                break
        now = current(target, conn, group, topic, "alive", "V1L-GRP-11")
        require(
            now.generation > joined.generation,
            "V1L-GRP-11",
            f"member 'quiet' silent for {session + MARGIN_S:.2f} s (session timeout"
            f" {session:.2f} s, --session-timeout-ms): generation={now.generation}, expected above"
            f" {joined.generation}" + (f" (a heartbeat was answered {beat})" if beat else ""),
            joined.reply.at("generation") + now.reply.at("generation"),
        )
        require(
            sorted(now.assigned) == list(everything),
            "V1L-GRP-11",
            f"after 'quiet' expired, the remaining member got assigned={wire_list(now.assigned)},"
            f" expected every partition {wire_list(everything)}",
            now.reply.at("assigned"),
        )


@case("v1line/groups/12", "V1L-GRP-12")
def test_leave_answers_left_and_hands_the_partitions_on(target: CaseContext) -> None:
    """LEAVE at the current generation answers left=true; the generation rises and the other
    member gets every partition.

    V1L-GRP-12: "LEAVE at the current generation answers `left=true`, raises the generation and
    gives the leaver's partitions to the remaining members."
    """
    with target.connect() as conn:
        topic, group = group_topic(target, conn), target.name("g")
        everything = partitions_of(target, conn, topic, "V1L-GRP-12")
        join(target, conn, group, topic, "goer", "V1L-GRP-12")
        joined = join(target, conn, group, topic, "stayer", "V1L-GRP-12")
        args = f"{group} {topic} goer {joined.generation}"
        left = expect_ok(target, conn, "LEAVE", args, "V1L-GRP-12", f"LEAVE {args}")
        require(
            left.values["left"] is True,
            "V1L-GRP-12",
            f"LEAVE {args}: answered {left.shown()}, expected left=true",
            left.at("left"),
        )
        now = current(target, conn, group, topic, "stayer", "V1L-GRP-12")
        require(
            now.generation > joined.generation,
            "V1L-GRP-12",
            f"after LEAVE at generation {joined.generation}: generation={now.generation},"
            f" expected above {joined.generation}",
            joined.reply.at("generation") + now.reply.at("generation"),
        )
        require(
            sorted(now.assigned) == list(everything),
            "V1L-GRP-12",
            f"after 'goer' left, the remaining member got assigned={wire_list(now.assigned)},"
            f" expected every partition {wire_list(everything)}",
            now.reply.at("assigned"),
        )


@case("v1line/groups/13", "V1L-GRP-13")
def test_leave_at_another_generation_or_by_a_stranger_changes_nothing(
    target: CaseContext,
) -> None:
    """LEAVE at an old generation or by a stranger is GENERATION_MISMATCH; the member stays, at
    the same generation.

    V1L-GRP-13: "LEAVE at another generation or by a consumer not in the group is answered
    GENERATION_MISMATCH and changes nothing."
    """
    with target.connect() as conn:
        topic, group = group_topic(target, conn), target.name("g")
        joined = join(target, conn, group, topic, "c1", "V1L-GRP-13")
        gen = joined.generation
        for args, why in (
            (f"{group} {topic} c1 {gen - 1}", "an older generation"),
            (f"{group} {topic} c1 {gen + 1}", "a newer generation"),
            (f"{group} {topic} stranger {gen}", "a consumer not in the group"),
        ):
            expect_error(
                target,
                conn,
                "LEAVE",
                args,
                GENERATION_MISMATCH,
                "V1L-GRP-13",
                f"LEAVE {args} ({why})",
            )
        still = sync(target, conn, group, topic, "c1", gen, "V1L-GRP-13")
        require(
            sorted(still.assigned) == sorted(joined.assigned),
            "V1L-GRP-13",
            f"after the refused LEAVEs, SYNC at generation {gen} answered"
            f" assigned={wire_list(still.assigned)}, expected {wire_list(joined.assigned)}"
            " (unchanged)",
            joined.reply.at("assigned") + still.reply.at("assigned"),
        )


@case("v1line/groups/14", "V1L-GRP-14")
def test_the_reference_brokers_group_conventions(target: CaseContext) -> None:
    """A member's JOIN again keeps the generation; a member with no partition gets assigned=[];
    in real, ASSIGNOR=RANGE is accepted.

    V1L-GRP-14: "a JOIN by a current member returns the current generation unchanged; a member
    with no partitions gets `assigned=[]`; the session timeout defaults to 10 s; `ASSIGNOR=RANGE`
    is accepted in `real`."
    """
    with target.connect() as conn:
        topic, group = group_topic(target, conn), target.name("g")
        everything = partitions_of(target, conn, topic, "V1L-GRP-14")
        first = join(target, conn, group, topic, "c00", "V1L-GRP-14")
        again = join(target, conn, group, topic, "c00", "V1L-GRP-14")
        require(
            again.generation == first.generation,
            "V1L-GRP-14",
            f"JOIN again by the member c00: generation={again.generation}, expected"
            f" {first.generation} (unchanged)",
            first.reply.at("generation") + again.reply.at("generation"),
        )
        names = [f"c{i:02d}" for i in range(len(everything) + 1)]
        last = first
        for name in names[1:]:
            last = join(target, conn, group, topic, name, "V1L-GRP-14")
        shares = members_shares(target, conn, group, topic, names, last.generation, "V1L-GRP-14")
        empty = [m for m, s in shares.items() if not s.assigned]
        require(
            len(empty) == 1,  # the codec reads assigned=() from 'assigned=[]' only
            "V1L-GRP-14",
            f"{len(names)} members over {len(everything)} partitions: members without a"
            f" partition {show_all(empty)}, expected one, answered 'assigned=[]'",
            evidence_of(*(s.reply for s in shares.values()), fields=("assigned",)),
        )
        if real(target):
            other = target.name("g-upper")
            args = f"{other} {topic} c1 ASSIGNOR=RANGE"
            expect_ok(target, conn, "JOIN", args, "V1L-GRP-14", f"JOIN {args}")
