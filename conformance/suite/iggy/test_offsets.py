"""Iggy consumer offsets: STORE, GET and DELETE_CONSUMER_OFFSET (SPEC.md, area
"offsets")."""

from __future__ import annotations

from conformance.client import Connection
from conformance.suite.case import case, require
from conformance.suite.iggy.steps import (
    GROUP,
    create_group,
    get_group,
    join,
    members,
    message,
    offset_body,
    send_messages,
    stream_topic,
    to_partition,
)
from conformance.suite.iggy.verify import (
    both,
    call,
    classic,
    expect_empty,
    expect_found,
    expect_ok,
    expect_status,
    require_status,
)
from conformance.suite.target import CaseContext

UNKNOWN = 4_000_000_000


def stocked(ctx: CaseContext, conn: Connection, base: str, count: int = 5) -> tuple[int, int]:
    sid, tid = stream_topic(ctx, conn, base)
    msgs = [message(ctx, f"o{i}".encode()) for i in range(count)]
    send_messages(ctx, conn, sid, tid, to_partition(0), msgs)
    return sid, tid


@case("iggy/offsets/1", "IGG-OFF-1")
def test_a_stored_offset_is_answered_with_the_current_offset(target: CaseContext) -> None:
    """STORE_CONSUMER_OFFSET 2, then GET_CONSUMER_OFFSET answers partition 0, current 4, stored 2.

    IGG-OFF-1: "STORE_CONSUMER_OFFSET (121; Consumer, stream, topic, partition, u64 offset) is
    answered with status 0 and an empty payload; GET_CONSUMER_OFFSET (120) for the same consumer
    and partition is then answered with the u32 partition id, the partition's current offset
    (u64) and the stored offset (u64)."
    """
    with target.connect() as conn:
        sid, tid = stocked(target, conn, "store")
        body = offset_body(target, sid, tid, 0, cid=11)
        expect_empty(
            target, conn, "store_consumer_offset", {**body, "offset": 2}, "IGG-OFF-1", "STORE 2"
        )
        got = expect_found(
            target, conn, "get_consumer_offset", body, "IGG-OFF-1", "GET_CONSUMER_OFFSET"
        )
        have = (got.body["partition_id"], got.body["current_offset"], got.body["stored_offset"])
        require(
            have == (0, 4, 2),
            "IGG-OFF-1",
            f"GET_CONSUMER_OFFSET answered partition {have[0]}, current {have[1]},"
            f" stored {have[2]},"
            " expected 0, 4, 2",
            got.at("partition_id", "current_offset", "stored_offset"),
        )


@case("iggy/offsets/2", "IGG-OFF-2")
def test_no_stored_offset_is_an_empty_reply(target: CaseContext) -> None:
    """GET_CONSUMER_OFFSET answers empty where nothing is stored, and for an unknown stream,
    topic or partition.

    IGG-OFF-2: "GET_CONSUMER_OFFSET is answered with status 0 and an empty payload when the
    consumer has no offset stored on that partition, and also when the lookup fails: a stream or
    topic that does not exist, a partition the topic does not have. A group consumer needs no
    membership to read its group's offset"
    """
    with target.connect() as conn:
        sid, tid = stocked(target, conn, "nostore")
        gets = [
            (offset_body(target, sid, tid, 0, cid=12), "none stored"),
            (offset_body(target, UNKNOWN, tid, 0, cid=12), f"stream {UNKNOWN} (no such stream)"),
            (offset_body(target, sid, UNKNOWN, 0, cid=12), f"topic {UNKNOWN} (no such topic)"),
            (offset_body(target, sid, tid, 7, cid=12), "partition 7 of a 1-partition topic"),
        ]
        if classic(target):
            gid, _ = create_group(target, conn, sid, tid, "nostore", "IGG-OFF-2")
            group = offset_body(target, sid, tid, None, cid=gid, kind=GROUP)
            gets.append((group, f"group {gid} from a connection not in it, none stored"))
        for body, what in gets:
            expect_empty(
                target, conn, "get_consumer_offset", body, "IGG-OFF-2",
                f"GET_CONSUMER_OFFSET, {what}",
            )  # fmt: skip


@case("iggy/offsets/3", "IGG-OFF-3")
def test_an_offset_past_the_current_one_is_answered_4100(target: CaseContext) -> None:
    """STORE_CONSUMER_OFFSET 9 on a partition whose current offset is 4 is answered 4100.

    IGG-OFF-3: "STORE_CONSUMER_OFFSET with an offset greater than the partition's current
    offset, or with any offset on a partition that has never held a message, is answered with
    status 4100 (InvalidOffset) and stores nothing."
    """
    with target.connect() as conn:
        sid, tid = stocked(target, conn, "pastend")
        body = {**offset_body(target, sid, tid, 0, cid=13), "offset": 9}
        expect_status(
            target, conn, "store_consumer_offset", body, 4100, "IGG-OFF-3", "STORE 9 of 0..4"
        )


@case("iggy/offsets/4", "IGG-OFF-4")
def test_offsets_are_kept_per_consumer(target: CaseContext) -> None:
    """Consumers 21 and 22 store offsets 1 and 3 and each reads back its own.

    IGG-OFF-4: "stored offsets are kept per consumer: an offset stored for one consumer id is
    not seen by GET_CONSUMER_OFFSET or strategy next of another consumer id on the same
    partition."
    """
    with target.connect() as conn:
        sid, tid = stocked(target, conn, "perconsumer")
        for cid, offset in ((21, 1), (22, 3)):
            body = {**offset_body(target, sid, tid, 0, cid=cid), "offset": offset}
            expect_ok(
                target, conn, "store_consumer_offset", body, "IGG-OFF-1", f"STORE {offset} as {cid}"
            )
        for cid, offset in ((21, 1), (22, 3)):
            got = expect_found(
                target, conn, "get_consumer_offset", offset_body(target, sid, tid, 0, cid=cid),
                "IGG-OFF-4", f"GET_CONSUMER_OFFSET of consumer {cid}",
            )  # fmt: skip
            require(
                got.body["stored_offset"] == offset,
                "IGG-OFF-4",
                f"consumer {cid} reads stored offset {got.body['stored_offset']},"
                f" expected {offset}",
                got.at("stored_offset", asked=("consumer.value",)),
            )
        expect_empty(
            target, conn, "get_consumer_offset", offset_body(target, sid, tid, 0, cid=23),
            "IGG-OFF-4",
            "GET_CONSUMER_OFFSET of consumer 23, which stored nothing",
        )  # fmt: skip


@case("iggy/offsets/5", "IGG-OFF-5")
def test_delete_consumer_offset_removes_it(target: CaseContext) -> None:
    """DELETE_CONSUMER_OFFSET after a store leaves GET_CONSUMER_OFFSET answering empty.

    IGG-OFF-5: "DELETE_CONSUMER_OFFSET (122; same payload as GET_CONSUMER_OFFSET) removes the
    stored offset and is answered with status 0 and an empty payload; GET_CONSUMER_OFFSET then
    answers empty. Deleting where nothing is stored is answered with status 3021
    (ConsumerOffsetNotFound)."
    """
    with target.connect() as conn:
        sid, tid = stocked(target, conn, "delstore")
        body = offset_body(target, sid, tid, 0, cid=14)
        expect_ok(
            target, conn, "store_consumer_offset", {**body, "offset": 1}, "IGG-OFF-1", "STORE 1"
        )
        expect_empty(
            target, conn, "delete_consumer_offset", body, "IGG-OFF-5", "DELETE_CONSUMER_OFFSET"
        )
        expect_empty(target, conn, "get_consumer_offset", body, "IGG-OFF-5", "GET after the delete")
        what = "DELETE_CONSUMER_OFFSET where nothing is stored"
        expect_status(target, conn, "delete_consumer_offset", body, 3021, "IGG-OFF-5", what)


@case("iggy/offsets/6", "IGG-OFF-6")
def test_a_group_offset_needs_a_member_that_holds_the_partition(target: CaseContext) -> None:
    """STORE and DELETE_CONSUMER_OFFSET as a group from a non-member are answered 5006; a member
    storing on each of 2 partitions gets 0 on its own and 3022 on the other's.

    IGG-OFF-6: "STORE_CONSUMER_OFFSET or DELETE_CONSUMER_OFFSET with a group consumer (kind 2)
    from a connection that is not a member of the group is answered with status 5006
    (ConsumerGroupMemberNotFound), and from a member naming a partition not in its list with
    3022 (NotResolvedConsumer)"
    """
    with target.connect() as one, target.connect() as two, target.connect() as outsider:
        sid, tid = stream_topic(target, one, "groupstore", 2)
        for pid in range(2):
            send_messages(target, one, sid, tid, to_partition(pid), [message(target, b"g")])
        gid, _ = create_group(target, one, sid, tid, "groupstore", "IGG-OFF-6")
        body = offset_body(target, sid, tid, 0, cid=gid, kind=GROUP)
        for name, extra in (
            ("store_consumer_offset", {"offset": 0}),
            ("delete_consumer_offset", {}),
        ):
            expect_status(
                target, outsider, name, {**body, **extra}, 5006, "IGG-OFF-6",
                f"{name.upper()} as group {gid} from a connection not in it",
            )  # fmt: skip
        join(target, one, sid, tid, gid, "IGG-GROUP-4")
        join(target, two, sid, tid, gid, "IGG-GROUP-4")
        got = get_group(target, one, sid, tid, gid, "IGG-GROUP-4")
        lists = [parts for _, parts in members(got)]
        require(
            sorted(lists) == [[0], [1]],
            "IGG-GROUP-4",
            f"two members of a 2-partition group hold {lists}, expected one partition each",
            got.at("members"),
        )
        statuses = []
        for pid in range(2):
            body = {**offset_body(target, sid, tid, pid, cid=gid, kind=GROUP), "offset": 0}
            what = f"STORE_CONSUMER_OFFSET as group {gid} partition {pid} from a member"
            stored = call(target, one, "store_consumer_offset", body, "IGG-OFF-6", what)
            require_status(stored, (0, 3022), "IGG-OFF-6", what)
            statuses.append(stored)
        require(
            sorted(r.status for r in statuses) == [0, 3022],
            "IGG-OFF-6",
            f"a member holding one of 2 partitions stored on partitions 0 and 1 with statuses"
            f" {statuses[0].status}, {statuses[1].status}, expected 0 on its own and 3022 on the"
            " other",
            both(*statuses),
        )


@case("iggy/offsets/7", "IGG-OFF-3")
def test_an_offset_on_a_partition_never_written_is_answered_4100(target: CaseContext) -> None:
    """STORE_CONSUMER_OFFSET 0 on partition 0, empty while partition 1 holds a message, is
    answered 4100 and stores nothing.

    IGG-OFF-3: "STORE_CONSUMER_OFFSET with an offset greater than the partition's current
    offset, or with any offset on a partition that has never held a message, is answered with
    status 4100 (InvalidOffset) and stores nothing."
    """
    with target.connect() as conn:
        sid, tid = stream_topic(target, conn, "neverwritten", 2)
        send_messages(target, conn, sid, tid, to_partition(1), [message(target, b"one")])
        body = offset_body(target, sid, tid, 0, cid=14)
        expect_status(
            target, conn, "store_consumer_offset", {**body, "offset": 0}, 4100, "IGG-OFF-3",
            "STORE 0 on partition 0, never written",
        )  # fmt: skip
        expect_empty(
            target, conn, "get_consumer_offset", body, "IGG-OFF-3",
            "GET_CONSUMER_OFFSET of partition 0 after the refused store",
        )  # fmt: skip
