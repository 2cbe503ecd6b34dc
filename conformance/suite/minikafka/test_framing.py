"""Mini-Kafka framing: lengths that count their own 4 bytes, one reply per request in order,
the reply's type and success bytes, and bytes after a request's last field (SPEC.md, area
"framing").  Frames sent raw are decoded in a comment."""

from __future__ import annotations

import time
from collections.abc import Sequence

from conformance.client import Connection
from conformance.evidence import Evidence
from conformance.protocols.minikafka import codec
from conformance.protocols.minikafka import messages as m
from conformance.suite.case import case, require
from conformance.suite.minikafka.steps import produce_all, read_back
from conformance.suite.minikafka.verify import (
    FLUSH_FRAME,
    Reply,
    answered,
    frame_hex,
    read,
    require_success,
    require_type,
    send,
    send_raw,
)
from conformance.suite.shown import show
from conformance.suite.target import CaseContext


def replies_alone(
    ctx: CaseContext, conn: Connection, requests: Sequence[codec.Request | None], requirement: str
) -> list[Reply]:
    """Each request (None: FLUSH) sent and its reply frame read before the next is sent,
    whatever the frame holds (a silence or a close breaks ``requirement``)."""
    out = []
    for request in requests:
        if request is None:
            send_raw(conn, FLUSH_FRAME, "FLUSH")
        else:
            send(conn, request)
        what = "FLUSH 0000000505" if request is None else codec.describe(request)
        out.append(read(ctx, conn, requirement, what))
    return out


@case("minikafka/framing/1", "MK-FRAME-1")
def test_reply_lengths_count_their_own_4_bytes(target: CaseContext) -> None:
    """The replies to PRODUCE, PRODUCE, CONSUME, PRODUCE and FLUSH each end where their length
    says: the next one frames right after it, and the bytes after the last one frame too.

    MK-FRAME-1: "every reply frame is `[int32 length][payload]` where the length counts its own 4
    bytes, so a reader reads `length - 4` more bytes after it."

    Only the lengths are judged, against the bytes that follow them: what a frame holds is
    its reply type's business (a reply that does not arrive is MK-FRAME-3's).
    """
    with target.connect() as conn:
        topic = target.name("lengths")
        requests: list[codec.Request | None] = [
            codec.Produce(topic, b"a"),
            codec.Produce(topic, b"bb"),
            codec.Consume(topic, 0, 2),
            codec.Produce(topic, b"c"),
            None,
        ]
        # a reply whose length does not count its own 4 bytes leaves them to be read as the
        # next frame's length: the read of the next reply meets bytes that do not frame
        replies = replies_alone(target, conn, requests, "MK-FRAME-3")
        # 00000005 05: one more FLUSH, so the bytes after the last reply are read too
        send_raw(conn, FLUSH_FRAME, "FLUSH")
        read(target, conn, "MK-FRAME-3", f"FLUSH 0000000505 after {len(replies)} replies")


def the_pipeline(topic: str) -> list[codec.Request | None]:
    return [
        codec.Produce(topic, b"first"),
        codec.Produce(topic, b"second"),
        codec.Consume(topic, 0, 2),
        None,
    ]


@case("minikafka/framing/2", "MK-FRAME-2")
def test_a_request_whose_length_counts_itself_is_answered(target: CaseContext) -> None:
    """A PRODUCE framed with a length counting its own 4 bytes is answered, and so is a CONSUME.

    MK-FRAME-2: "the broker reads a request's length field as counting its own 4 bytes: a
    request framed so is answered."

    Answered: a reply frame comes (what it holds is its reply type's business).
    """
    with target.connect() as conn:
        topic = target.name("framed")
        # 00000016 03 000000.. topic 00000004 'data': length = 4 + payload
        send(conn, codec.Produce(topic, b"data"))
        read(target, conn, "MK-FRAME-2", "PRODUCE framed so")
        send(conn, codec.Consume(topic, 0, 1))
        read(target, conn, "MK-FRAME-2", "CONSUME framed so")


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
        read(target, conn, "MK-FRAME-2", "PRODUCE sent one byte a write")


@case("minikafka/framing/4", "MK-FRAME-3")
def test_requests_in_one_write_get_one_reply_each_in_order(target: CaseContext) -> None:
    """PRODUCE, PRODUCE, CONSUME and FLUSH in one write get four replies, in that order: each
    the bytes the same request got sent alone, on a topic of its own.

    MK-FRAME-3: "the broker answers every request with exactly one reply, in the order the
    requests were sent, also when several requests arrive in one write."

    The replies are told apart by comparison with those the same requests got one at a
    time, so this case relies on no rule of what a reply holds.
    """
    with target.connect() as conn:
        alone = replies_alone(target, conn, the_pipeline(target.name("alone")), "MK-FRAME-3")
        requests = the_pipeline(target.name("pipelined"))
        data = b"".join(
            FLUSH_FRAME if r is None else codec.frame(codec.encode_request(r)) for r in requests
        )
        conn.send(data, "PRODUCE, PRODUCE, CONSUME, FLUSH in one write")
        for i, (request, before) in enumerate(zip(requests, alone, strict=True)):
            name = "FLUSH" if request is None else m.NAMES[request.type]
            what = f"reply {i + 1} of {len(requests)} (the {name}'s)"
            reply = read(target, conn, "MK-FRAME-3", what)
            require(
                reply.payload == before.payload,
                "MK-FRAME-3",
                f"{what}: {frame_hex(reply.payload)}, while the same {name} sent alone, on a"
                f" topic of its own, was answered {frame_hex(before.payload)}",
                before.at("type") + reply.at("type"),
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
            require_type(reply, kind, what, success_byte=True)


def trailing_bytes_ignored(ctx: CaseContext, requirement: str) -> None:
    """PRODUCE with 5 zero bytes after its data, CONSUME padded as the real client pads it
    (3N+4 zero bytes for a topic of N bytes) and FLUSH with 3 more bytes are each answered
    as if those bytes were absent (every check of them blames ``requirement``; what a reply
    holds is its type's business, and messages are matched by offset, not order)."""
    with ctx.connect() as conn:
        topic = ctx.name("padded")
        (before,) = produce_all(ctx, conn, topic, [b"before"])
        # 0000.. 03 topic 00000005 'after' 0000000000: five bytes after the data
        send(conn, codec.Produce(topic, b"after"), trailing=bytes(5), summary="PRODUCE + 5 bytes")
        what = "PRODUCE 'after' with 5 bytes after its data"
        put = read(ctx, conn, requirement, what)
        require_success(put, m.PRODUCE_REQUEST, requirement, what)
        assert isinstance(put.reply, codec.ProduceOk)
        padding = bytes(3 * len(topic.encode()) + 4)
        request = codec.Consume(topic, before.offset, 2)
        send(conn, request, trailing=padding, summary="CONSUME, padded")
        what = f"CONSUME offset={before.offset} batch=2 with {len(padding)} zero bytes after it"
        got = read(ctx, conn, requirement, what)
        require_success(got, m.CONSUME_REQUEST, requirement, what)
        assert isinstance(got.reply, codec.ConsumeOk)
        wanted = {before.offset: b"before", put.reply.offset: b"after"}
        for i, item in enumerate(got.reply.messages):
            require(
                wanted.get(item.offset, item.data) == item.data,
                requirement,
                f"{what}: the message at offset {item.offset} holds {show(item.data, 40)},"
                f" expected {show(wanted.get(item.offset, b''))} (the data as sent, without"
                " the bytes after it)",
                got.at(f"messages[{i}].offset", f"messages[{i}].data"),
            )
        stored = read_back(ctx, conn, topic, put.reply.offset, put.reply.offset + 1)
        require(
            stored.data() == [b"after"],
            requirement,
            f"the message at offset {put.reply.offset} holds {show(stored.data()[0], 40)},"
            " expected 'after' (PRODUCE's data without the 5 bytes after it)",
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
