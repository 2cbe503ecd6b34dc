"""Iggy SEND_MESSAGES refused for its batch before any lookup (SPEC.md, area "send"): the
batch checks, the size limits and a bad Identifier (classic).  These requests are built byte
by byte, since no codec would build them; each says what its bytes are."""

from __future__ import annotations

import struct

from conformance.client import Connection
from conformance.protocols.iggy import codec
from conformance.protocols.iggy.messages import CODES
from conformance.suite.case import case, require
from conformance.suite.iggy.steps import (
    FIRST,
    payloads,
    poll,
    poll_body,
    polled,
    stream_topic,
)
from conformance.suite.iggy.verify import Reply, expect_empty, read, require_status, send_raw
from conformance.suite.shown import show_all
from conformance.suite.target import CaseContext

SEND = CODES["send_messages"]
UNKNOWN = 4_000_000_000
MAX_PAYLOAD = 64_000_000
MAX_USER_HEADERS = 100_000


def numeric(value: int) -> bytes:
    """A numeric Identifier: kind 1, length 4, the u32."""
    return bytes([1, 4]) + struct.pack("<I", value)


def raw_message(payload: bytes, headers: bytes = b"") -> bytes:
    """The 64-byte header (checksum 0, id 0 as u128, offset 0, timestamp 0, origin timestamp
    0, u32 user-headers length, u32 payload length, reserved 0), the payload, the headers."""
    head = struct.pack("<Q16sQQQIIQ", 0, bytes(16), 0, 0, 0, len(headers), len(payload), 0)
    return head + payload + headers


def batch(
    sid: int,
    tid: int,
    messages: list[bytes],
    *,
    index: bytes | None = None,
    after: bytes = b"",
) -> bytes:
    """A SEND_MESSAGES payload to partition 0: u32 metadata length, metadata (stream, topic,
    partitioning kind 2 length 4 partition 0, u32 count), the index table (by default per
    message u32 0, u32 the cumulative end, u64 0), the messages, then ``after``."""
    meta = numeric(sid) + numeric(tid) + bytes([2, 4]) + struct.pack("<I", 0)
    meta += struct.pack("<I", len(messages))
    if index is None:
        index, end = b"", 0
        for m in messages:
            end += len(m)
            index += struct.pack("<IIQ", 0, end, 0)
    return struct.pack("<I", len(meta)) + meta + index + b"".join(messages) + after


def refused(
    ctx: CaseContext, conn: Connection, payload: bytes, status: int, req: str, what: str
) -> Reply:
    send_raw(conn, SEND, payload, f"SEND_MESSAGES: {what}")
    reply = read(ctx, conn, "send_messages", req, f"SEND_MESSAGES with {what}")
    require_status(reply, status, req, f"SEND_MESSAGES with {what}")
    return reply


def nothing_stored(ctx: CaseContext, conn: Connection, sid: int, tid: int, req: str) -> None:
    """Partition 0 holds no message (polled from the first offset)."""
    got = poll(ctx, conn, poll_body(ctx, sid, tid, 0, FIRST, 0, 10))
    require(
        not polled(got),
        req,
        f"after refused sends partition 0 holds {len(polled(got))} message(s)"
        f" ({show_all(payloads(got))}), expected none",
        got.at("messages count"),
    )


@case("iggy/send/9", "IGG-SEND-9")
def test_a_bad_batch_is_refused_before_the_lookups(target: CaseContext) -> None:
    """No message is 4009 (to an unknown stream too); a non-zero index offset 4031, timestamp
    4032; bytes after the last message 4036; nothing is stored, a good batch is.

    IGG-SEND-9: "SEND_MESSAGES checks its batch before it looks the stream and topic up, and
    refuses a bad batch whole, storing nothing: a message count of 0 is answered with status
    4009 (InvalidMessagesCount); an index entry whose u32 offset (its first field) is not 0 with
    4031 (NonZeroOffset), one whose u64 timestamp (its last field) is not 0 with 4032
    (NonZeroTimestamp); messages whose sizes by their headers (64 + payload + user headers) do
    not add up to the bytes after the index table with 4036 (InvalidMessagesSize). ..."
    """
    req = "IGG-SEND-9"
    one = raw_message(b"bad")
    size = len(one)
    with target.connect() as conn:
        sid, tid = stream_topic(target, conn, "badbatch")
        refused(target, conn, batch(sid, tid, []), 4009, req, "no message")
        refused(
            target, conn, batch(UNKNOWN, tid, []), 4009, req, f"no message, to stream {UNKNOWN}"
        )
        offset_1 = struct.pack("<IIQ", 1, size, 0)  # index entry: offset 1, end, timestamp 0
        refused(target, conn, batch(sid, tid, [one], index=offset_1), 4031, req, "index offset 1")
        refused(
            target, conn, batch(UNKNOWN, tid, [one], index=offset_1), 4031, req,
            f"index offset 1, to stream {UNKNOWN}",
        )  # fmt: skip
        stamped = struct.pack("<IIQ", 0, size, 7)  # index entry: offset 0, end, timestamp 7
        refused(target, conn, batch(sid, tid, [one], index=stamped), 4032, req, "index timestamp 7")
        refused(
            target, conn, batch(sid, tid, [one], after=b"xyz"), 4036, req,
            "3 bytes after the last message",
        )  # fmt: skip
        nothing_stored(target, conn, sid, tid, req)
        send_raw(conn, SEND, batch(sid, tid, [raw_message(b"good")]), "SEND_MESSAGES: a good batch")
        good = read(target, conn, "send_messages", "IGG-SEND-1", "SEND_MESSAGES of a good batch")
        require_status(good, 0, "IGG-SEND-1", "SEND_MESSAGES of a good batch after the refusals")
        got = poll(target, conn, poll_body(target, sid, tid, 0, FIRST, 0, 10))
        require(
            payloads(got) == [b"good"],
            req,
            f"partition 0 holds {show_all(payloads(got))} after the refused batches and one"
            " good one, expected 'good' alone",
            got.at("messages count"),
        )


def big_headers() -> bytes:
    """A well-formed user-header block over 100,000 bytes: 400 entries of a 4-byte string
    key (kind 2) and a 250-byte raw value (kind 1), 264 bytes each."""
    out = bytearray()
    for i in range(400):
        out += bytes([2]) + struct.pack("<I", 4) + b"%04d" % i
        out += bytes([1]) + struct.pack("<I", 250) + bytes(250)
    return bytes(out)


@case("iggy/send/10", "IGG-SEND-10")
def test_a_message_over_the_limits_is_refused(target: CaseContext) -> None:
    """A user-header block of 105,600 bytes is answered 4017, a payload of 64,000,001 bytes
    4022; nothing is stored and the connection goes on.

    IGG-SEND-10: "SEND_MESSAGES with a message whose payload is over 64000000 bytes is answered
    with status 4022 (TooBigMessagePayload), and one with a user-header block over 100000 bytes
    with 4017 (TooBigUserHeaders); nothing of the batch is stored and the connection keeps
    serving."
    """
    req = "IGG-SEND-10"
    headers = big_headers()
    with target.connect() as conn:
        sid, tid = stream_topic(target, conn, "limits")
        message = raw_message(b"h", headers)
        refused(
            target, conn, batch(sid, tid, [message]), 4017, req,
            f"a user-header block of {len(headers)} bytes",
        )  # fmt: skip
        # in two writes, all but the last byte then that byte (IGG-FRAME-4): the wire log
        # reads a write that is not a whole frame as raw bytes, and reading 64 MB as a
        # frame would cost seconds
        what = f"a payload of {MAX_PAYLOAD + 1} bytes"
        huge = codec.frame_request(SEND, batch(sid, tid, [raw_message(bytes(MAX_PAYLOAD + 1))]))
        conn.send(huge[:-1], f"SEND_MESSAGES: {what}, all but its last byte")
        conn.send(huge[-1:], f"SEND_MESSAGES: {what}, its last byte")
        reply = read(target, conn, "send_messages", req, f"SEND_MESSAGES with {what}")
        require_status(reply, 4022, req, f"SEND_MESSAGES with {what}")
        expect_empty(target, conn, "ping", {}, req, "PING after the refused sends")
        nothing_stored(target, conn, sid, tid, req)


def metadata_only(stream: bytes, topic: bytes) -> bytes:
    """A SEND_MESSAGES payload of the u32 metadata length and metadata alone: ``stream`` and
    ``topic`` (raw Identifier bytes), balanced partitioning (kind 1, length 0), count 1."""
    meta = stream + topic + bytes([1, 0]) + struct.pack("<I", 1)
    return struct.pack("<I", len(meta)) + meta


@case("iggy/send/11", "IGG-SEND-11")
def test_a_bad_identifier_in_send_messages_is_answered_6(target: CaseContext) -> None:
    """Stream Identifiers of kind 3, of numeric length 2, of string length 0, and a topic
    Identifier cut short are each answered 6; the connection goes on.

    IGG-SEND-11: "a SEND_MESSAGES whose stream or topic Identifier is malformed (a kind other
    than 1 and 2, a length of 0, a numeric Identifier whose length is not 4, a value cut short
    by the metadata length) is answered with status 6 (InvalidIdentifier), not 3 or 4 as in the
    other commands (IGG-FRAME-8, IGG-ID-3). ..."
    """
    req = "IGG-SEND-11"
    with target.connect() as conn:
        sid, tid = stream_topic(target, conn, "badident")
        topic = numeric(tid)
        cut = numeric(sid) + bytes.fromhex("01 04 0000")  # the topic's u32 has 2 of its 4 bytes
        bad = (
            (metadata_only(bytes.fromhex("03 04 00000000"), topic), "stream Identifier kind 3"),
            (metadata_only(bytes.fromhex("01 02 0000"), topic), "numeric stream Identifier, len 2"),
            (metadata_only(bytes.fromhex("02 00"), topic), "string stream Identifier, len 0"),
            (struct.pack("<I", len(cut)) + cut, "metadata ending inside the topic Identifier"),
        )
        for payload, what in bad:
            refused(target, conn, payload, 6, req, what)
        expect_empty(target, conn, "ping", {}, req, "PING after the refused sends")
