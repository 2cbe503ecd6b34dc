"""Iggy consumer offsets: STORE, GET and DELETE_CONSUMER_OFFSET (SPEC.md, area
"offsets")."""

from __future__ import annotations

from conformance.client import Connection
from conformance.suite.case import case, require
from conformance.suite.iggy.steps import (
    message,
    offset_body,
    send_messages,
    stream_topic,
    to_partition,
)
from conformance.suite.iggy.verify import expect_empty, expect_found, expect_ok, expect_status
from conformance.suite.target import CaseContext


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
    """GET_CONSUMER_OFFSET of a consumer that stored nothing answers an empty reply.

    IGG-OFF-2: "GET_CONSUMER_OFFSET for a consumer that has no offset stored on that partition
    is answered with status 0 and an empty payload."
    """
    with target.connect() as conn:
        sid, tid = stocked(target, conn, "nostore")
        body = offset_body(target, sid, tid, 0, cid=12)
        expect_empty(
            target,
            conn,
            "get_consumer_offset",
            body,
            "IGG-OFF-2",
            "GET_CONSUMER_OFFSET, none stored",
        )


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
