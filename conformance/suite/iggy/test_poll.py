"""Iggy POLL_MESSAGES: the reply and each polling strategy (SPEC.md, area "poll")."""

from __future__ import annotations

import time

from conformance.client import Connection
from conformance.suite.case import case, require
from conformance.suite.iggy.steps import (
    FIRST,
    LAST,
    NEXT,
    OFFSET,
    TIMESTAMP,
    message,
    msg_fields,
    offset_body,
    offsets,
    payloads,
    poll,
    poll_body,
    polled,
    send_messages,
    stream_topic,
    to_partition,
)
from conformance.suite.iggy.verify import both, classic, expect_empty, expect_found, expect_ok
from conformance.suite.shown import show_all
from conformance.suite.target import CaseContext

FIVE = [b"m0", b"m1", b"m2", b"m3", b"m4"]


def five(ctx: CaseContext, conn: Connection, base: str, partitions: int = 1) -> tuple[int, int]:
    """A fresh topic whose partition 0 holds FIVE."""
    sid, tid = stream_topic(ctx, conn, base, partitions)
    send_messages(ctx, conn, sid, tid, to_partition(0), [message(ctx, p) for p in FIVE])
    return sid, tid


@case("iggy/poll/1", "IGG-POLL-1")
def test_a_poll_reply_is_partition_offset_count_messages(target: CaseContext) -> None:
    """A poll of partition 1 answers partition_id 1, current_offset, a count and that many messages.

    IGG-POLL-1: "POLL_MESSAGES (100) is answered with a u32 partition id, a u64 current offset,
    a u32 message count, then that many messages ..."
    """
    with target.connect() as conn:
        sid, tid = stream_topic(target, conn, "pollreply", 2)
        send_messages(
            target, conn, sid, tid, to_partition(1), [message(target, b"x"), message(target, b"y")]
        )
        got = poll(target, conn, poll_body(target, sid, tid, 1, OFFSET, 0, 10))
        require(
            got.body["partition_id"] == 1 and payloads(got) == [b"x", b"y"],
            "IGG-POLL-1",
            f"a poll of partition 1 answered partition_id {got.body['partition_id']} with"
            f" {len(polled(got))} message(s), expected 1 with 2",
            got.at("partition_id", "messages count", asked=("partition_id",)),
        )


@case("iggy/poll/2", "IGG-POLL-2")
def test_strategy_offset_returns_from_that_offset(target: CaseContext) -> None:
    """Strategy offset 2 with count 2 returns offsets 2 and 3.

    IGG-POLL-2: "strategy offset (kind 1, value = offset) returns the messages from that offset
    on, in offset order, without gaps, at most count of them; an offset past the partition's
    last returns none."
    """
    with target.connect() as conn:
        sid, tid = five(target, conn, "byoffset")
        got = poll(target, conn, poll_body(target, sid, tid, 0, OFFSET, 2, 2))
        require(
            offsets(got) == [2, 3] and payloads(got) == FIVE[2:4],
            "IGG-POLL-2",
            f"offset 2 count 2 returned offsets {show_all(offsets(got))}, expected 2, 3",
            got.at(*msg_fields(got, "offset"), asked=("strategy.value", "count")),
        )
        past = poll(target, conn, poll_body(target, sid, tid, 0, OFFSET, 9, 10))
        require(
            not polled(past),
            "IGG-POLL-2",
            f"offset 9 of 0..4 returned {len(polled(past))} message(s), expected none",
            past.at("messages count", asked=("strategy.value",)),
        )


@case("iggy/poll/3", "IGG-POLL-3")
def test_strategy_timestamp_returns_messages_from_that_time(target: CaseContext) -> None:
    """Strategy timestamp, at the second message's timestamp, returns the second and third messages.

    IGG-POLL-3: "strategy timestamp (kind 2, value in microseconds) returns, in offset order and
    at most count, the messages whose server timestamp is at or after the value."
    """
    with target.connect() as conn:
        sid, tid = stream_topic(target, conn, "bytime")
        for p in (b"t0", b"t1", b"t2"):
            send_messages(target, conn, sid, tid, to_partition(0), [message(target, p)])
            time.sleep(0.01)
        everything = poll(target, conn, poll_body(target, sid, tid, 0, FIRST, 0, 10))
        stamps = [int(m["timestamp"]) for m in polled(everything)]
        got = poll(target, conn, poll_body(target, sid, tid, 0, TIMESTAMP, stamps[1], 10))
        want = [p for p, t in zip([b"t0", b"t1", b"t2"], stamps, strict=True) if t >= stamps[1]]
        require(
            payloads(got) == want,
            "IGG-POLL-3",
            f"timestamp {stamps[1]} returned {len(polled(got))} message(s), expected {len(want)}"
            " (those stamped at or after it)",
            everything.at(*msg_fields(everything, "timestamp"))
            + got.at(*msg_fields(got, "timestamp"), asked=("strategy.value",)),
        )


@case("iggy/poll/4", "IGG-POLL-4")
def test_strategy_first_returns_from_the_first_offset(target: CaseContext) -> None:
    """Strategy first with count 3 returns offsets 0, 1 and 2.

    IGG-POLL-4: "strategy first (kind 3) returns the messages from the partition's first offset
    on, at most count."
    """
    with target.connect() as conn:
        sid, tid = five(target, conn, "first")
        got = poll(target, conn, poll_body(target, sid, tid, 0, FIRST, 0, 3))
        require(
            offsets(got) == [0, 1, 2],
            "IGG-POLL-4",
            f"first count 3 returned offsets {show_all(offsets(got))}, expected 0, 1, 2",
            got.at(*msg_fields(got, "offset"), asked=("strategy.kind",)),
        )


@case("iggy/poll/5", "IGG-POLL-5")
def test_strategy_last_returns_the_last_count_messages(target: CaseContext) -> None:
    """Strategy last with count 2 returns offsets 3 and 4 of five.

    IGG-POLL-5: "strategy last (kind 4) returns the partition's last count messages (all of them
    when it holds fewer), in offset order."
    """
    with target.connect() as conn:
        sid, tid = five(target, conn, "last")
        got = poll(target, conn, poll_body(target, sid, tid, 0, LAST, 0, 2))
        require(
            offsets(got) == [3, 4],
            "IGG-POLL-5",
            f"last count 2 returned offsets {show_all(offsets(got))}, expected 3, 4",
            got.at(*msg_fields(got, "offset"), asked=("strategy.kind", "count")),
        )
        more = poll(target, conn, poll_body(target, sid, tid, 0, LAST, 0, 9))
        require(
            offsets(more) == [0, 1, 2, 3, 4],
            "IGG-POLL-5",
            f"last count 9 of five returned offsets {show_all(offsets(more))}, expected 0..4",
            more.at(*msg_fields(more, "offset"), asked=("count",)),
        )


@case("iggy/poll/6", "IGG-POLL-6")
def test_strategy_next_continues_after_the_stored_offset(target: CaseContext) -> None:
    """Strategy next starts at 0 with no stored offset, and after offset 2 once 2 is stored.

    IGG-POLL-6: "strategy next (kind 5) returns the messages right after the consumer's stored
    offset (stored + 1 on), or from the partition's first offset when the consumer has none
    stored."
    """
    with target.connect() as conn:
        sid, tid = five(target, conn, "next")
        fresh = poll(target, conn, poll_body(target, sid, tid, 0, NEXT, 0, 2, cid=1))
        require(
            offsets(fresh) == [0, 1],
            "IGG-POLL-6",
            f"next with no stored offset returned offsets {show_all(offsets(fresh))},"
            " expected 0, 1",
            fresh.at(*msg_fields(fresh, "offset")),
        )
        store = {**offset_body(target, sid, tid, 0, cid=2), "offset": 2}
        expect_ok(
            target, conn, "store_consumer_offset", store, "IGG-OFF-1", "STORE_CONSUMER_OFFSET 2"
        )
        got = poll(target, conn, poll_body(target, sid, tid, 0, NEXT, 0, 2, cid=2))
        require(
            offsets(got) == [3, 4],
            "IGG-POLL-6",
            f"next after stored offset 2 returned offsets {show_all(offsets(got))}, expected 3, 4",
            got.at(*msg_fields(got, "offset"), asked=("strategy.kind",)),
        )


@case("iggy/poll/7", "IGG-POLL-7")
def test_auto_commit_stores_the_last_offset_returned(target: CaseContext) -> None:
    """A poll of offsets 0..2 with auto_commit leaves the consumer's stored offset at 2.

    IGG-POLL-7: "a poll with auto_commit set that returns messages stores, for that consumer and
    partition, the offset of the last message returned."
    """
    with target.connect() as conn:
        sid, tid = five(target, conn, "autocommit")
        got = poll(
            target, conn, poll_body(target, sid, tid, 0, OFFSET, 0, 3, auto_commit=True, cid=3)
        )
        stored = expect_found(
            target, conn, "get_consumer_offset", offset_body(target, sid, tid, 0, cid=3),
            "IGG-POLL-7",
            "GET_CONSUMER_OFFSET after an auto-commit poll",
        )  # fmt: skip
        last = offsets(got)[-1] if polled(got) else None
        require(
            stored.body["stored_offset"] == last == 2,
            "IGG-POLL-7",
            f"after a poll returning up to offset {last} with auto_commit, the stored offset is"
            f" {stored.body['stored_offset']}, expected 2",
            got.at(*msg_fields(got, "offset"), asked=("auto_commit",)) + stored.at("stored_offset"),
        )


@case("iggy/poll/8", "IGG-POLL-8")
def test_current_offset_is_the_partitions_last_offset(target: CaseContext) -> None:
    """A poll of one message from five answers current_offset 4.

    IGG-POLL-8: "the current offset in a poll reply is the offset of the partition's last stored
    message (0 when it holds none), whatever the strategy returned."
    """
    with target.connect() as conn:
        sid, tid = five(target, conn, "current", 2)
        got = poll(target, conn, poll_body(target, sid, tid, 0, OFFSET, 0, 1))
        require(
            got.body["current_offset"] == 4,
            "IGG-POLL-8",
            f"current_offset {got.body['current_offset']} after five messages, expected 4",
            got.at("current_offset"),
        )
        empty = poll(target, conn, poll_body(target, sid, tid, 1, OFFSET, 0, 1))
        require(
            empty.body["current_offset"] == 0,
            "IGG-POLL-8",
            f"current_offset {empty.body['current_offset']} of an empty partition, expected 0",
            empty.at("current_offset"),
        )


@case("iggy/poll/9", "IGG-POLL-9")
def test_a_polled_message_carries_what_was_sent(target: CaseContext) -> None:
    """A polled message has the payload, id, offset (and classic: origin timestamp, headers) sent.

    IGG-POLL-9: "a polled message carries the payload and id as stored (IGG-SEND-5), its offset,
    a non-zero server timestamp in microseconds, and in classic the origin timestamp and
    user-header bytes as sent."
    """
    headers = bytes([2, 1, 0, 0, 0]) + b"k" + bytes([2, 2, 0, 0, 0]) + b"vv"
    origin = 1_700_000_000_000_000
    with target.connect() as conn:
        sid, tid = stream_topic(target, conn, "carries")
        msg = message(target, b"carried", mid=4242, headers=headers, origin=origin)
        send_messages(target, conn, sid, tid, to_partition(0), [msg])
        got = poll(target, conn, poll_body(target, sid, tid, 0, FIRST, 0, 1))
        require(
            len(polled(got)) == 1,
            "IGG-POLL-9",
            f"a poll of a one-message partition returned {len(polled(got))} message(s)",
            got.at("messages count"),
        )
        m = polled(got)[0]
        checks = [
            ("payload", m["payload"] == b"carried", "payload"),
            ("id", m["id"] == 4242, "id 4242"),
            ("offset", m["offset"] == 0, "offset 0"),
            ("timestamp", int(m["timestamp"]) > 0, "a server timestamp"),
        ]
        if classic(target):
            checks += [
                ("origin_timestamp", m["origin_timestamp"] == origin, f"origin_timestamp {origin}"),
                ("headers", m["headers"] == headers, "the user headers sent"),
            ]
        for name, ok, want in checks:
            require(
                ok,
                "IGG-POLL-9",
                f"the polled message's {name} is not as sent, expected {want}",
                got.at(f"messages[0].{name}"),
            )
        _ = both


@case("iggy/poll/10", "IGG-POLL-10")
def test_count_zero_answers_the_current_offset_and_no_message(target: CaseContext) -> None:
    """A poll of count 0 (first, then next with auto_commit) of a partition of five answers
    that partition, current offset 4 and no message, and stores no offset.

    IGG-POLL-10: "POLL_MESSAGES with count 0 is answered with status 0, the partition polled,
    that partition's current offset (IGG-POLL-8) and no message, whatever the strategy; with
    auto_commit set it stores nothing."
    """
    req = "IGG-POLL-10"
    with target.connect() as conn:
        sid, tid = stream_topic(target, conn, "countzero", 2)
        send_messages(target, conn, sid, tid, to_partition(1), [message(target, p) for p in FIVE])
        for strategy in (FIRST, NEXT):
            body = poll_body(target, sid, tid, 1, strategy, 0, 0, auto_commit=True, cid=41)
            got = poll(target, conn, body, req)
            have = (got.body["partition_id"], got.body["current_offset"], len(polled(got)))
            require(
                have == (1, 4, 0),
                req,
                f"a poll of count 0 of partition 1 (offsets 0..4) answered partition {have[0]},"
                f" current offset {have[1]} and {have[2]} message(s), expected 1, 4 and none",
                got.at("partition_id", "current_offset", "messages count", asked=("count",)),
            )
        expect_empty(
            target, conn, "get_consumer_offset", offset_body(target, sid, tid, 1, cid=41), req,
            "GET_CONSUMER_OFFSET after polls of count 0 with auto_commit",
        )  # fmt: skip
