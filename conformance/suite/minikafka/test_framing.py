"""Mini-Kafka framing: lengths that count their own 4 bytes, one reply per request in order,
the reply's type and success bytes, and bytes after a request's last field (SPEC.md, area
"framing").  Frames sent raw are decoded in a comment."""

from __future__ import annotations

import time

from conformance.client import Connection
from conformance.evidence import Evidence
from conformance.protocols.minikafka import codec
from conformance.protocols.minikafka import messages as m
from conformance.suite.case import Violation, case, require
from conformance.suite.minikafka.steps import produce_all, read_back
from conformance.suite.minikafka.verify import (
    FLUSH_FRAME,
    Reply,
    answered,
    call,
    frame_hex,
    read,
    require_reply_to,
    require_success,
    send,
    send_raw,
)
from conformance.suite.shown import show
from conformance.suite.target import CaseContext


def read_whole(ctx: CaseContext, conn: Connection, request: codec.Request, what: str) -> Reply:
    """The reply to ``request``, which must read whole as its type's reply: a length that did
    not count its own 4 bytes leaves the payload 4 bytes short (or the next frame astray)."""
    send(conn, request)
    reply = read(ctx, conn, "MK-FRAME-1", what)
    if reply.reply is None:
        raise Violation(
            "MK-FRAME-1",
            f"{what}: the reply frame {frame_hex(reply.payload)} (length {len(reply.payload) + 4},"
            f" so {len(reply.payload)} payload bytes) does not read whole ({reply.problem});"
            " its length must count its own 4 bytes",
            reply.at("type", "success"),
        )
    return reply


@case("minikafka/framing/1", "MK-FRAME-1")
def test_reply_lengths_count_their_own_4_bytes(target: CaseContext) -> None:
    """PRODUCE, CONSUME and PRODUCE replies each read whole when their length counts itself.

    MK-FRAME-1: "every reply frame is `[int32 length][payload]` where the length counts its own 4
    bytes, so a reader reads `length - 4` more bytes after it."
    """
    with target.connect() as conn:
        topic = target.name("lengths")
        for value in (b"a", b"bb"):
            read_whole(target, conn, codec.Produce(topic, value), f"PRODUCE {value!r}")
        read_whole(target, conn, codec.Consume(topic, 0, 2), "CONSUME offset=0 batch=2")
        # the third reply reads whole only if the ones before it ended where they said
        last = read_whole(target, conn, codec.Produce(topic, b"c"), "PRODUCE 'c' after them")
        require(
            isinstance(last.reply, codec.ProduceOk) and last.reply.offset == 2,
            "MK-FRAME-1",
            f"the third PRODUCE was answered {last.shown()}, expected offset 2: the replies"
            " before it did not end where their lengths said",
            last.at("offset"),
        )


@case("minikafka/framing/2", "MK-FRAME-2")
def test_a_request_whose_length_counts_itself_is_answered(target: CaseContext) -> None:
    """A PRODUCE framed with a length counting its own 4 bytes is answered, and so is a CONSUME.

    MK-FRAME-2: "the broker reads a request's length field as counting its own 4 bytes: a
    request framed so is answered."
    """
    with target.connect() as conn:
        topic = target.name("framed")
        # 00000016 03 000000.. topic 00000004 'data': length = 4 + payload
        put = call(target, conn, codec.Produce(topic, b"data"), "MK-FRAME-2")
        require_reply_to(put, m.PRODUCE_REQUEST, "MK-FRAME-2", "PRODUCE framed so")
        got = call(target, conn, codec.Consume(topic, 0, 1), "MK-FRAME-2")
        require_reply_to(got, m.CONSUME_REQUEST, "MK-FRAME-2", "CONSUME framed so")


@case("minikafka/framing/3", "MK-FRAME-2")
def test_a_request_sent_one_byte_at_a_time_is_answered(target: CaseContext) -> None:
    """A PRODUCE sent one byte a write is read by its length and answered.

    MK-FRAME-2: "the broker reads a request's length field as counting its own 4 bytes ..."
    """
    with target.connect() as conn:
        topic = target.name("split")
        data = codec.frame(codec.encode_request(codec.Produce(topic, b"split")))
        for i in range(len(data)):
            conn.send(data[i : i + 1], "one byte")
            time.sleep(0.002)
        reply = read(target, conn, "MK-FRAME-2", "PRODUCE sent one byte a write")
        require_reply_to(reply, m.PRODUCE_REQUEST, "MK-FRAME-2", "PRODUCE sent one byte a write")


@case("minikafka/framing/4", "MK-FRAME-3")
def test_requests_in_one_write_get_one_reply_each_in_order(target: CaseContext) -> None:
    """PRODUCE, PRODUCE, CONSUME and FLUSH in one write get four replies, in that order.

    MK-FRAME-3: "the broker answers every request with exactly one reply, in the order the
    requests were sent, also when several requests arrive in one write."
    """
    with target.connect() as conn:
        topic = target.name("pipelined")
        requests: list[codec.Request] = [
            codec.Produce(topic, b"first"),
            codec.Produce(topic, b"second"),
            codec.Consume(topic, 0, 2),
        ]
        data = b"".join(codec.frame(codec.encode_request(r)) for r in requests) + FLUSH_FRAME
        conn.send(data, "PRODUCE, PRODUCE, CONSUME, FLUSH in one write")
        wanted = [r.type for r in requests] + [m.FLUSH_REQUEST]
        replies = []
        for i, kind in enumerate(wanted):
            what = f"reply {i + 1} of 4 ({m.NAMES[kind]}'s)"
            reply = read(target, conn, "MK-FRAME-3", what)
            require(
                reply.type == m.REPLY_TYPE[kind],
                "MK-FRAME-3",
                f"{what}: type 0x{reply.type or 0:02x} ({reply.shown()}), expected"
                f" 0x{m.REPLY_TYPE[kind]:02x}",
                reply.at("type"),
            )
            replies.append(reply)
        for i, reply in enumerate(replies[:2]):
            require(
                isinstance(reply.reply, codec.ProduceOk) and reply.reply.offset == i,
                "MK-FRAME-3",
                f"reply {i + 1} of 4 is {reply.shown()}, expected offset {i} (PRODUCE number"
                f" {i + 1} of the new topic)",
                reply.at("offset"),
            )


@case("minikafka/framing/5", "MK-FRAME-4")
def test_every_reply_opens_with_its_type_and_a_success_byte(target: CaseContext) -> None:
    """The replies to PRODUCE, CONSUME and FLUSH open with 0x04, 0x02 and 0x06, then 1 or 0.

    MK-FRAME-4: "a reply's first payload byte is its type: 0x02 for CONSUME, 0x04 for PRODUCE,
    0x06 for FLUSH; its second byte is the success byte, 1 or 0."
    """
    with target.connect() as conn:
        topic = target.name("types")
        sent: list[tuple[str, codec.Request | None]] = [
            ("PRODUCE", codec.Produce(topic, b"x")),
            ("CONSUME offset=0 batch=1", codec.Consume(topic, 0, 1)),
            ("FLUSH 0000000505", None),
        ]
        for what, request in sent:
            if request is None:
                send_raw(conn, FLUSH_FRAME, "FLUSH")
                kind = m.FLUSH_REQUEST
            else:
                send(conn, request)
                kind = request.type
            reply = read(target, conn, "MK-FRAME-4", what)
            want = m.REPLY_TYPE[kind]
            require(
                reply.type == want,
                "MK-FRAME-4",
                f"{what}: answered {frame_hex(reply.payload)}, first payload byte"
                f" 0x{reply.type or 0:02x}, expected 0x{want:02x}",
                reply.at("type"),
            )
            require(
                reply.success in (0, 1),
                "MK-FRAME-4",
                f"{what}: answered {frame_hex(reply.payload)}, "
                + (
                    f"success byte 0x{reply.success:02x}"
                    if reply.success is not None
                    else "with no success byte after the type"
                )
                + ", expected a success byte 1 or 0",
                reply.at("type", "success"),
            )


def trailing_bytes_ignored(ctx: CaseContext, requirement: str) -> None:
    """PRODUCE with 5 zero bytes after its data, CONSUME padded as the real client pads it
    (3N+4 zero bytes for a topic of N bytes) and FLUSH with 3 more bytes are each answered
    as if those bytes were absent (every check of them blames ``requirement``)."""
    with ctx.connect() as conn:
        topic = ctx.name("padded")
        produce_all(ctx, conn, topic, [b"before"])
        # 0000.. 03 topic 00000005 'after' 0000000000: five bytes after the data
        send(conn, codec.Produce(topic, b"after"), trailing=bytes(5), summary="PRODUCE + 5 bytes")
        put = read(ctx, conn, requirement, "PRODUCE 'after' with 5 bytes after its data")
        require_success(put, m.PRODUCE_REQUEST, requirement, "PRODUCE with 5 trailing bytes")
        require(
            isinstance(put.reply, codec.ProduceOk) and put.reply.offset == 1,
            requirement,
            f"PRODUCE 'after' with 5 trailing bytes: answered {put.shown()}, expected offset 1"
            " (the second PRODUCE of the topic)",
            put.at("offset"),
        )
        padding = bytes(3 * len(topic.encode()) + 4)
        send(conn, codec.Consume(topic, 0, 2), trailing=padding, summary="CONSUME, padded")
        what = f"CONSUME offset=0 batch=2 with {len(padding)} zero bytes after it"
        got = read(ctx, conn, requirement, what)
        require_success(got, m.CONSUME_REQUEST, requirement, what)
        assert isinstance(got.reply, codec.ConsumeOk)
        datas = [c.data for c in got.reply.messages[:2]]
        require(
            datas[:1] == [b"before"] and datas[1:] in ([], [b"after"]),
            requirement,
            f"{what}: messages {', '.join(show(d) for d in datas) or 'none'}, expected 'before',"
            " 'after' (the data as sent, without the bytes after it)",
            got.at("messages[0].data", "messages[1].data"),
        )
        stored = read_back(ctx, conn, topic, 1, 2)
        require(
            stored.data() == [b"after"],
            requirement,
            f"the message at offset 1 holds {show(stored.data()[0], 40)}, expected 'after'"
            " (PRODUCE's data without the 5 bytes after it)",
            put.at("offset") + stored.at(0, "data"),
        )
        # 00000008 05 000000: FLUSH and three bytes more
        send_raw(conn, bytes.fromhex("0000000805000000"), "FLUSH + 3 bytes")
        padded = read(ctx, conn, requirement, "FLUSH with 3 bytes after its type")
        plain = answered(ctx, conn, requirement, "FLUSH 0000000505 after it")
        require(
            padded.payload == plain.payload,
            requirement,
            f"FLUSH with 3 bytes after its type: answered {frame_hex(padded.payload)}, while"
            f" FLUSH alone is answered {frame_hex(plain.payload)}",
            evidence_pair(padded, plain),
        )


def evidence_pair(first: Reply, second: Reply) -> Evidence:
    return first.at("type", "success") + second.at("type", "success")


@case("minikafka/framing/6", "MK-FRAME-5")
def test_bytes_after_the_last_field_are_ignored(target: CaseContext) -> None:
    """A PRODUCE, a padded CONSUME and a FLUSH with bytes after their last field are answered
    as without them.

    MK-FRAME-5: "bytes after a request's last field, inside its frame, are ignored: the request
    is answered as if they were absent."
    """
    trailing_bytes_ignored(target, "MK-FRAME-5")


@case("minikafka/framing/7", "MK-FRAME-6")
def test_bytes_after_the_last_field_are_ignored_in_doc(target: CaseContext) -> None:
    """In doc, a target that reads requests with bytes after their last field as without them
    follows the reference broker's convention.

    MK-FRAME-6: "bytes after a request's last field are ignored (the document does not say; the
    reference broker accepts them, as the real one must for its own client)."
    """
    trailing_bytes_ignored(target, "MK-FRAME-6")
