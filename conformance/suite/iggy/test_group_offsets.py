"""Iggy consumer groups, what a member reads and the group's offsets: a partition named that
is not the member's, next and auto-commit through the group, and a deleted group's offsets
(SPEC.md, area "groups")."""

from __future__ import annotations

from typing import Any

from conformance.client import Connection
from conformance.suite.case import case, require, unsupported
from conformance.suite.iggy.steps import (
    CONSUMER,
    GROUP,
    NEXT,
    OFFSET,
    create_group,
    get_group,
    group_body,
    ident,
    join,
    message,
    msg_fields,
    offset_body,
    offsets,
    partitions_held,
    poll,
    poll_body,
    polled,
    send_messages,
    stream_topic,
    to_partition,
)
from conformance.suite.iggy.verify import (
    classic,
    expect_empty,
    expect_found,
    expect_ok,
)
from conformance.suite.shown import show_all
from conformance.suite.target import CaseContext


def stocked(
    ctx: CaseContext, conn: Connection, base: str, partitions: int, count: int
) -> tuple[int, int]:
    """A fresh topic with ``count`` messages in each of its partitions."""
    sid, tid = stream_topic(ctx, conn, base, partitions)
    for pid in range(partitions):
        msgs = [message(ctx, f"p{pid}-{i}".encode()) for i in range(count)]
        send_messages(ctx, conn, sid, tid, to_partition(pid), msgs)
    return sid, tid


@case("iggy/groups/11", "IGG-GROUP-11")
def test_a_member_naming_a_partition_not_its_own_reads_nothing(target: CaseContext) -> None:
    """Of two members of a 2-partition group, one polling the other's partition by number
    gets partition 0, current offset 0 and no message.

    IGG-GROUP-11: "a member polling as the group with the partition flag 1 and a partition
    that is not in its list is answered with status 0 and the empty poll reply: partition 0,
    current offset 0, no message; nothing is committed."
    """
    req = "IGG-GROUP-11"
    with target.connect() as one, target.connect() as two:
        sid, tid = stocked(target, one, "notmine", 2, 3)
        gid, _ = create_group(target, one, sid, tid, "notmine")
        join(target, one, sid, tid, gid, req)
        join(target, two, sid, tid, gid, req)
        listed = get_group(target, one, sid, tid, gid, req)
        require(  # each member's partition is then not the other's
            partitions_held(listed) == [0, 1],
            "IGG-GROUP-4",
            f"two members of a 2-partition group hold {show_all(partitions_held(listed))}"
            " between them, expected 0, 1 once each",
            listed.at("members"),
        )
        own = poll(
            target, one, poll_body(target, sid, tid, None, OFFSET, 0, 10, cid=gid, kind=GROUP), req
        )
        require(
            bool(polled(own)),
            "IGG-GROUP-8",
            "a member of two on a topic of 2 partitions, 3 messages each, polled nothing"
            " without naming a partition, expected its partition's messages",
            own.at("partition_id", "messages count"),
        )
        other = 1 - int(own.body["partition_id"])
        body = poll_body(
            target, sid, tid, other, OFFSET, 0, 10, auto_commit=True, cid=gid, kind=GROUP
        )
        got = poll(target, one, body, req)
        have = (got.body["partition_id"], got.body["current_offset"], len(polled(got)))
        require(
            have == (0, 0, 0),
            req,
            f"a member holding partition {1 - other} polled partition {other} by number and got"
            f" partition {have[0]}, current offset {have[1]} and {have[2]} message(s), expected"
            " the empty reply: 0, 0 and none",
            got.at("partition_id", "current_offset", "messages count", asked=("partition_id",)),
        )
        stored = offset_body(target, sid, tid, other, cid=gid, kind=GROUP)
        expect_empty(
            target, two, "get_consumer_offset", stored, req,
            f"GET_CONSUMER_OFFSET of the group on partition {other} after that poll",
        )  # fmt: skip


@case("iggy/groups/12", "IGG-GROUP-12")
def test_next_and_auto_commit_through_a_group_use_the_groups_offset(target: CaseContext) -> None:
    """A member's next polls of 2 with auto_commit read offsets 0, 1 then 2, 3; the group's
    stored offset reads 1 in between; a consumer with the group's id starts at 0.

    IGG-GROUP-12: "polling as a group (Consumer kind 2), strategy next starts right after the
    group's stored offset for that partition and auto_commit stores the group's offset: one
    offset per group and partition, shared by the members, the one GET_CONSUMER_OFFSET with
    the group consumer answers, and apart from the offset of a consumer (kind 1) with the same
    id."
    """
    req = "IGG-GROUP-12"
    with target.connect() as conn:
        sid, tid = stocked(target, conn, "groupnext", 1, 4)
        gid, _ = create_group(target, conn, sid, tid, "groupnext")
        join(target, conn, sid, tid, gid, req)
        body = poll_body(target, sid, tid, None, NEXT, 0, 2, auto_commit=True, cid=gid, kind=GROUP)
        first = poll(target, conn, body, req)
        read_offsets(first, [0, 1], req, "the group's first next poll of 2")
        stored = expect_found(
            target, conn, "get_consumer_offset", offset_body(target, sid, tid, 0, gid, GROUP),
            req, "GET_CONSUMER_OFFSET of the group after an auto-commit poll",
        )  # fmt: skip
        require(
            stored.body["stored_offset"] == 1,
            req,
            f"after the group's poll of offsets 0, 1 with auto_commit the group's stored offset"
            f" is {stored.body['stored_offset']}, expected 1",
            stored.at("stored_offset"),
        )
        second = poll(target, conn, body, req)
        require(  # starting at the stored offset, not after it, is IGG-POLL-6's rule broken
            offsets(second)[:1] != [1],
            "IGG-POLL-6",
            f"the group's next poll after its stored offset 1 returned offsets"
            f" {show_all(offsets(second))}, expected 2, 3 (from the stored offset + 1)",
            second.at(*msg_fields(second, "offset"), asked=("strategy.kind",)),
        )
        read_offsets(second, [2, 3], req, "the group's second next poll of 2")
        alone = poll_body(target, sid, tid, 0, NEXT, 0, 2, cid=gid, kind=CONSUMER)
        plain = poll(target, conn, alone, req)
        read_offsets(plain, [0, 1], req, f"a next poll of consumer {gid} (kind 1)")


def read_offsets(got: Any, want: list[int], req: str, what: str) -> None:
    require(
        offsets(got) == want,
        req,
        f"{what} returned offsets {show_all(offsets(got))}, expected {show_all(want)}",
        got.at(*msg_fields(got, "offset"), asked=("strategy.kind",)),
    )


def create_again(ctx: CaseContext, conn: Connection, sid: int, tid: int, gid: int) -> int:
    """A group made after group ``gid`` was deleted (doc: with id ``gid``); its id."""
    if classic(ctx):
        body: dict[str, Any] = {"stream": ident(sid), "topic": ident(tid), "name": ctx.name("g")}
    else:
        body = {"stream": ident(sid), "topic": ident(tid), "consumer_group_id": gid}
    what = f"CREATE_CONSUMER_GROUP after deleting group {gid}"
    reply = expect_ok(ctx, conn, "create_consumer_group", body, "IGG-GROUP-1", what)
    return int(reply.body["id"]) if reply.body is not None else gid


@case("iggy/groups/13", "IGG-GROUP-13")
def test_a_deleted_groups_offsets_go_with_it(target: CaseContext) -> None:
    """A group stores offset 1, is deleted and made again with its id: GET_CONSUMER_OFFSET
    answers empty and its next poll starts at offset 0.

    IGG-GROUP-13: "DELETE_CONSUMER_GROUP removes the group's stored offsets: a group created
    afterwards with the same id (the freed id, IGG-ID-2) has none, so GET_CONSUMER_OFFSET with
    it answers empty and its strategy next starts at the partition's first offset."
    """
    req = "IGG-GROUP-13"
    with target.connect() as conn:
        sid, tid = stocked(target, conn, "groupgone", 1, 3)
        gid, _ = create_group(target, conn, sid, tid, "groupgone")
        join(target, conn, sid, tid, gid, req)
        offset = offset_body(target, sid, tid, 0, gid, GROUP)
        expect_empty(
            target, conn, "store_consumer_offset", {**offset, "offset": 1}, "IGG-OFF-1",
            f"STORE_CONSUMER_OFFSET 1 of group {gid}",
        )  # fmt: skip
        expect_found(
            target, conn, "get_consumer_offset", offset, "IGG-OFF-1",
            f"GET_CONSUMER_OFFSET of group {gid} after storing 1",
        )  # fmt: skip
        expect_empty(
            target, conn, "delete_consumer_group", group_body(target, sid, tid, gid),
            "IGG-GROUP-6", f"DELETE_CONSUMER_GROUP {gid}",
        )  # fmt: skip
        again = create_again(target, conn, sid, tid, gid)
        if again != gid:
            unsupported(
                f"the group made after deleting group {gid} got id {again}: no group with the"
                " deleted one's id to look at",
                req,
            )
        expect_empty(
            target, conn, "get_consumer_offset", offset, req,
            f"GET_CONSUMER_OFFSET of group {gid}, deleted with offset 1 stored and made again",
        )  # fmt: skip
        join(target, conn, sid, tid, gid, req)
        body = poll_body(target, sid, tid, None, NEXT, 0, 10, cid=gid, kind=GROUP)
        got = poll(target, conn, body, req)
        read_offsets(got, [0, 1, 2], req, f"the next poll of group {gid} made again")
