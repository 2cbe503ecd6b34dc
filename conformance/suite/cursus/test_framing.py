"""Cursus framing: the length prefix and the 64 MiB limit (SPEC.md, area "framing")."""

from __future__ import annotations

import time

from conformance.client import Connection, PeerClosed, ReplyTimeout
from conformance.protocols.cursus import codec, real_codec
from conformance.protocols.cursus.messages import FRAME_LIMIT, BatchAck, Command
from conformance.suite.case import Violation, case, require
from conformance.suite.cursus import real_verify
from conformance.suite.cursus.verify import (
    batch,
    create_topic,
    decode,
    expect_ack_ok,
    expect_close_or_error,
    expect_ok,
    kind_of_payload,
    messages,
    reply_payload,
    send,
    shown,
)
from conformance.suite.target import CaseContext

LIST = codec.frame(b"LIST")
"""A raw LIST: a command in both revisions (revision real takes a raw known command)."""


def _real(target: CaseContext) -> bool:
    """Whether the target speaks revision real (the shared framing cases speak its layout)."""
    return target.target.revision == "real"


def ctx_topic(batch_payload: bytes) -> str:
    """The topic of a batch payload (both layouts begin magic, u16 topic length, topic)."""
    n = int.from_bytes(batch_payload[2:4], "big")
    return batch_payload[4 : 4 + n].decode()


def _topic_and_batch(target: CaseContext, conn: Connection, base: str, payload: bytes) -> bytes:
    """A fresh topic, made in the target's revision, and a one-message batch for it."""
    if _real(target):
        topic = real_verify.create_topic(target, conn, base)
        return real_codec.encode_batch(real_verify.batch(topic, real_verify.messages(payload)))
    topic = create_topic(target, conn, base)
    return codec.encode_batch(batch(topic, messages(payload)))


@case("cursus/framing/1", "CUR-FRAME-1")
def test_replies_are_length_prefixed_frames(target: CaseContext) -> None:
    """Every message in both directions is [u32 BE length N][N bytes], N excluding the prefix.

    CUR-FRAME-1: "every message in both directions is one frame, a 4-byte unsigned big-endian length
    N followed by N bytes of payload; N does not count the prefix. The broker's replies are framed
    the same way."
    """
    with target.connect() as conn:
        data = _topic_and_batch(target, conn, "framing", b"x")
        topic = ctx_topic(data)
        # 00000004 'LIST', then a batch: each reply must deframe to exactly one payload
        # that decodes whole; a wrong prefix leaves the next reply misaligned.
        for _ in range(2):
            send(conn, b"LIST")
            read = reply_payload(target, conn, "CUR-FRAME-1", "LIST")
            if not _real(target):
                decode(read, "CUR-FRAME-1", "the LIST reply")
            require(
                topic.encode() in read.payload,
                "CUR-FRAME-1",
                f"the LIST reply {shown(read)} is not one whole frame naming {topic}",
                read.at(*kind_of_payload(read.payload)),
            )
            if _real(target):
                ack = real_verify.expect_ack(target, conn, data, "produce")
            else:
                ack = expect_ack_ok(target, conn, data, "produce")
            require(
                isinstance(ack.reply, BatchAck),
                "CUR-FRAME-1",
                f"the ack {shown(ack)} is not one JSON frame",
                ack.evidence,
            )


@case("cursus/framing/2", "CUR-FRAME-2")
def test_a_frame_of_exactly_64_mib_is_accepted(target: CaseContext) -> None:
    """A frame whose length is exactly 64 MiB is accepted and processed like any other.

    CUR-FRAME-2: "a frame whose length N is exactly 64 MiB (67108864) is accepted and its payload
    processed like any other."
    """
    with target.connect() as conn:
        # 04000000 followed by 64 MiB of 'X': an unknown command of the largest legal size.
        try:
            conn.send(codec.frame(b"X" * FRAME_LIMIT), summary="64 MiB unknown command")
        except PeerClosed as exc:
            raise Violation(
                "CUR-FRAME-2",
                "the target closed the connection on a 64 MiB frame, expected it processed",
                exc.evidence,
            ) from None
        except ReplyTimeout as exc:
            raise Violation(
                "CUR-FRAME-2",
                f"the target stopped reading the 64 MiB frame (sending it took over"
                f" {target.timeout:g}s), expected it read and processed",
                exc.evidence,
            ) from None
        what = "a frame of exactly 64 MiB"
        read = reply_payload(target, conn, "CUR-FRAME-2", what, max(target.timeout, 20.0))
        text = read.payload[:200].decode("utf-8", "replace").upper()
        require(
            "TOO_LARGE" not in text and "TOO LARGE" not in text,
            "CUR-FRAME-2",
            f"{what} was refused as too large: {shown(read)}, expected it processed",
            read.at("word0", "word1", asked=("length",)),
        )
        send(conn, Command("LIST"))
        reply_payload(target, conn, "CUR-FRAME-2", "LIST after a 64 MiB frame")


@case("cursus/framing/3", "CUR-FRAME-3")
def test_a_length_of_64_mib_plus_one_is_refused_from_the_prefix(target: CaseContext) -> None:
    """A 64 MiB + 1 length prefix, with no payload after it, is refused from the prefix alone.

    CUR-FRAME-3: "a frame whose length N exceeds 64 MiB is refused from its prefix alone: the broker
    answers with an error or closes the connection without waiting for the payload."
    """
    with target.connect() as conn:
        conn.send((FRAME_LIMIT + 1).to_bytes(4, "big"), summary="prefix 64 MiB + 1, no payload")
        expect_close_or_error(target, conn, "CUR-FRAME-3", "a 64 MiB + 1 length prefix")


@case("cursus/framing/4", "CUR-FRAME-3")
def test_the_largest_u32_length_is_refused(target: CaseContext) -> None:
    """A 2^32-1 length prefix (the largest u32), then four bytes, is refused from the prefix alone.

    CUR-FRAME-3: "a frame whose length N exceeds 64 MiB is refused from its prefix alone: the broker
    answers with an error or closes the connection without waiting for the payload."
    """
    with target.connect() as conn:
        conn.send(b"\xff\xff\xff\xff" + b"LIST", summary="prefix 2^32-1")
        expect_close_or_error(target, conn, "CUR-FRAME-3", "a 2^32-1 length prefix")


@case("cursus/framing/5", "CUR-FRAME-4")
def test_a_frame_sent_one_byte_at_a_time_is_reassembled(target: CaseContext) -> None:
    """The length prefix alone delimits frames: a frame split over many writes is reassembled.

    CUR-FRAME-4: "the length prefix alone delimits frames: a frame split over many TCP writes is
    reassembled ..."
    """
    with target.connect() as conn:
        for i in range(len(LIST)):
            conn.send(LIST[i : i + 1])
            time.sleep(0.002)
        reply_payload(target, conn, "CUR-FRAME-4", "LIST sent one byte per write")


@case("cursus/framing/6", "CUR-FRAME-4")
def test_pipelined_frames_are_each_answered_in_order(target: CaseContext) -> None:
    """Several frames in one write are each answered, in order.

    CUR-FRAME-4: "... several frames in one write are each answered, in order."
    """
    with target.connect() as conn:
        topic = target.name("pipelined")
        if _real(target):
            create = codec.frame(real_codec.envelope(f"CREATE topic={topic} partitions=1"))
        else:
            create = codec.frame(codec.encode_command(Command("CREATE", (topic, 1))))
        conn.send(create + LIST + LIST, summary="CREATE, LIST, LIST in one write")
        first = reply_payload(target, conn, "CUR-FRAME-4", "CREATE")
        for n in (2, 3):
            read = reply_payload(target, conn, "CUR-FRAME-4", f"pipelined request {n}")
            require(
                topic.encode() in read.payload,
                "CUR-FRAME-4",
                f"reply {n} of 3 is {shown(read)}, expected a LIST naming {topic}"
                f" (reply 1 was {shown(first)})",
                first.at() + read.at(*kind_of_payload(read.payload)),
            )


@case("cursus/framing/7", "CUR-FRAME-4", "CUR-BATCH-1")
def test_a_batch_split_inside_prefix_and_header_is_reassembled(target: CaseContext) -> None:
    """A frame split over many TCP writes is reassembled.

    CUR-FRAME-4: "the length prefix alone delimits frames: a frame split over many TCP writes is
    reassembled ..."
    """
    with target.connect() as conn:
        data = codec.frame(_topic_and_batch(target, conn, "split", b"split-payload"))
        for part in (data[:2], data[2:7], data[7:20], data[20:]):
            conn.send(part)
            time.sleep(0.01)
        read = reply_payload(target, conn, "CUR-FRAME-4", "a batch split in four writes")
        require(
            read.payload[:1] == b"{",
            "CUR-FRAME-4",
            f"the split batch got {shown(read)}, expected a JSON ack",
            read.at(*kind_of_payload(read.payload)),
        )


@case("cursus/framing/8", "CUR-FRAME-5")
def test_a_half_sent_frame_does_not_stall_other_connections(target: CaseContext) -> None:
    """A connection stopped or ended mid-frame does not affect other connections.

    CUR-FRAME-5: "a connection that ends in the middle of a frame does not affect other connections;
    the broker keeps serving them."
    """
    stalled = target.connect()
    stalled.send(LIST[:6], summary="half a frame, then nothing")
    abandoned = target.connect()
    abandoned.send(b"\x00\x00\x01\x00" + b"C" * 100, summary="part of a 256-byte frame")
    abandoned.close()
    with target.connect() as conn:
        try:
            expect_ok(target, conn, Command("LIST"), "CUR-FRAME-5", "LIST on a third connection")
        finally:
            stalled.close()
