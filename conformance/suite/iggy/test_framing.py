"""Iggy framing: the request and reply frames, their limits and errors (SPEC.md, area
"framing").  Frames here are raw bytes, each decoded in a comment."""

from __future__ import annotations

import struct
import time

from conformance.protocols.iggy import codec
from conformance.protocols.iggy.messages import CODES
from conformance.suite.case import case, require
from conformance.suite.iggy.malformed import refuse_malformed
from conformance.suite.iggy.steps import create_stream, fresh_id, ident
from conformance.suite.iggy.verify import (
    expect_empty,
    expect_ok,
    read,
    require_ok,
    require_status,
    send,
    send_raw,
)
from conformance.suite.target import CaseContext

PING = codec.frame_request(CODES["ping"], b"")  # 04000000 01000000: length 4, code 1
UNKNOWN_STREAM = 4_000_000_000


@case("iggy/framing/1", "IGG-FRAME-1")
def test_a_request_in_little_endian_frames_is_understood(target: CaseContext) -> None:
    """A request of u32 LE length, u32 LE code and payload is read as the command it names.

    IGG-FRAME-1: "a request is a u32 length, a u32 command code and the payload; the length
    counts the code and the payload (4 + payload bytes) but not itself ..."
    """
    with target.connect() as conn:
        name = target.name("frame")
        # 0a000000 ca000000 05 'frame-...': length 4 + payload, code 202 (CREATE_STREAM)
        sid, created = create_stream(target, conn, "frame", requirement="IGG-FRAME-1")
        got = expect_ok(
            target, conn, "get_stream", {"stream": ident(sid)}, "IGG-FRAME-1", "GET_STREAM"
        )
        require(
            got.body is not None and got.body["name"] == created.body["name"],
            "IGG-FRAME-1",
            f"GET_STREAM {sid} after CREATE_STREAM {name}: not the stream created",
            got.at("name", asked=("stream.value",)),
        )


@case("iggy/framing/2", "IGG-FRAME-2")
def test_replies_are_status_length_payload(target: CaseContext) -> None:
    """Every reply is u32 status, u32 length of the payload, then exactly that payload.

    IGG-FRAME-2: "every reply is a u32 status, a u32 length counting only the payload, and the
    payload; status 0 means success."
    """
    with target.connect() as conn:
        expect_empty(target, conn, "ping", {}, "IGG-FRAME-2", "PING")
        # a reply whose length is wrong leaves its payload undecodable or the next reply
        # misaligned: both are IGG-FRAME-2 violations of read()
        create_stream(target, conn, "reply", requirement="IGG-FRAME-2")
        expect_ok(target, conn, "get_streams", {}, "IGG-FRAME-2", "GET_STREAMS")
        expect_empty(target, conn, "ping", {}, "IGG-FRAME-2", "PING after them")


@case("iggy/framing/3", "IGG-FRAME-3")
def test_an_error_reply_has_no_payload(target: CaseContext) -> None:
    """An error reply carries a non-zero status, length 0 and no payload.

    IGG-FRAME-3: "a reply reporting an error has a non-zero status, a length of 0 and no payload
    bytes."
    """
    with target.connect() as conn:
        what = f"DELETE_STREAM {UNKNOWN_STREAM} (no such stream)"
        send(target, conn, "delete_stream", {"stream": ident(UNKNOWN_STREAM)})
        reply = read(target, conn, "delete_stream", "IGG-FRAME-3", what)
        require(
            reply.status != 0,
            "IGG-FRAME-3",
            f"{what}: status 0, expected an error",
            reply.at("status"),
        )
        require(
            not reply.payload,
            "IGG-FRAME-3",
            f"{what}: status {reply.status} with {len(reply.payload)} payload byte(s), expected"
            " length 0",
            reply.at("status", "payload"),
        )
        expect_empty(target, conn, "ping", {}, "IGG-FRAME-3", "PING after the error")


@case("iggy/framing/4", "IGG-FRAME-4")
def test_a_request_sent_one_byte_at_a_time_is_reassembled(target: CaseContext) -> None:
    """A request split over many writes, one byte each, is reassembled and answered.

    IGG-FRAME-4: "the length alone delimits requests: a request split over many TCP writes is
    reassembled ..."
    """
    with target.connect() as conn:
        name = target.name("split")
        payload = codec.encode_request("get_streams", {}, target.target.revision)
        data = codec.frame_request(CODES["get_streams"], payload) + PING
        for i in range(len(data)):
            conn.send(data[i : i + 1])
            time.sleep(0.002)
        reply = read(target, conn, "get_streams", "IGG-FRAME-4", "GET_STREAMS one byte a write")
        require_ok(reply, "IGG-FRAME-4", "GET_STREAMS one byte a write")
        ping = read(target, conn, "ping", "IGG-FRAME-4", "PING one byte a write")
        require_ok(ping, "IGG-FRAME-4", f"PING after GET_STREAMS ({name}), one byte a write")


@case("iggy/framing/5", "IGG-FRAME-4")
def test_pipelined_requests_are_each_answered_in_order(target: CaseContext) -> None:
    """Several requests in one write (PING, CREATE_STREAM, GET_STREAMS) are each answered, in order.

    IGG-FRAME-4: "... several requests in one write are each answered, one reply per request, in
    order."
    """
    rev = target.target.revision
    with target.connect() as conn:
        name = target.name("pipelined")
        body: dict[str, object] = {"name": name}
        if rev != "classic":
            body = {"stream_id": fresh_id(), "name": name}
        create = codec.frame_request(
            CODES["create_stream"], codec.encode_request("create_stream", body, rev)
        )
        streams = codec.frame_request(CODES["get_streams"], b"")
        conn.send(PING + create + streams, summary="PING, CREATE_STREAM, GET_STREAMS in one write")
        ping = read(target, conn, "ping", "IGG-FRAME-4", "reply 1 of 3 (PING)")
        require(
            ping.ok and not ping.payload,
            "IGG-FRAME-4",
            f"reply 1 of 3: {ping.shown()}, expected PING's (status 0, empty)",
            ping.at("status"),
        )
        created = read(target, conn, "create_stream", "IGG-FRAME-4", "reply 2 of 3 (CREATE_STREAM)")
        require_ok(created, "IGG-FRAME-4", "reply 2 of 3 (CREATE_STREAM)")
        require(
            created.body is not None and created.body["name"] == name,
            "IGG-FRAME-4",
            f"reply 2 of 3 is not CREATE_STREAM {name}'s",
            created.at("name"),
        )
        listed = read(target, conn, "get_streams", "IGG-FRAME-4", "reply 3 of 3 (GET_STREAMS)")
        require_ok(listed, "IGG-FRAME-4", "reply 3 of 3 (GET_STREAMS)")
        names = [s["name"] for s in listed.body["streams"]]
        require(
            name in names,
            "IGG-FRAME-4",
            f"reply 3 of 3 (GET_STREAMS) does not list {name}, created by request 2",
            listed.at("streams"),
        )


@case("iggy/framing/6", "IGG-FRAME-5")
def test_a_length_below_4_is_answered_3(target: CaseContext) -> None:
    """A length field of 2 (no room for a code) is answered 3 and the connection keeps serving.

    IGG-FRAME-5: "a request whose length is below 4 (no room for the code) is answered with
    status 3 (InvalidCommand); its 8 header bytes are consumed, no payload is read, and the next
    request is read from the following byte and answered."
    """
    with target.connect() as conn:
        # 02000000 01000000: length 2, then four bytes the server reads as the header's rest
        conn.send(struct.pack("<II", 2, 1), summary="length 2: no room for a code")
        what = "a request of length 2"
        reply = read(target, conn, "ping", "IGG-FRAME-5", what)
        require_status(reply, 3, "IGG-FRAME-5", what)
        conn.send(PING, summary="PING after it")
        after = read(target, conn, "ping", "IGG-FRAME-5", "PING after a length of 2")
        require_ok(after, "IGG-FRAME-5", "PING after a length of 2")


@case("iggy/framing/7", "IGG-FRAME-6")
def test_a_control_request_over_10_mib_is_refused_from_its_header(target: CaseContext) -> None:
    """A GET_STREAMS header announcing 10 MiB + 1 of payload, none sent, is answered 3.

    IGG-FRAME-6: "a request other than SEND_MESSAGES whose length announces a payload of more
    than 10 MiB (10485760 bytes) is answered with status 3 from its header alone, without
    waiting for the payload."
    """
    with target.connect() as conn:
        length = 4 + codec.MAX_CONTROL_PAYLOAD + 1
        # 05 00 a0 00 c9 00 00 00: length 4 + 10 MiB + 1, code 201, then nothing
        conn.send(struct.pack("<II", length, CODES["get_streams"]), summary="10 MiB + 1 announced")
        what = "GET_STREAMS announcing 10 MiB + 1 payload bytes (none sent)"
        reply = read(target, conn, "get_streams", "IGG-FRAME-6", what)
        require_status(reply, 3, "IGG-FRAME-6", what)


@case("iggy/framing/8", "IGG-FRAME-7")
def test_an_unknown_code_is_answered_3_and_the_connection_serves_on(target: CaseContext) -> None:
    """Command code 9999 with four payload bytes is answered 3, and PING is answered after it.

    IGG-FRAME-7: "a request with a command code the revision does not define is answered with
    status 3, its payload is consumed, and the connection keeps serving the next request. In
    doc, every code missing from the seed's table is unknown, LOGIN_USER (38) ..."
    """
    with target.connect() as conn:
        send_raw(conn, 9999, b"\0\0\0\0", "code 9999")  # 08000000 0f270000 00000000
        what = "unknown command code 9999"
        reply = read(target, conn, "ping", "IGG-FRAME-7", what)
        require_status(reply, 3, "IGG-FRAME-7", what)
        conn.send(PING, summary="PING after it")
        after = read(target, conn, "ping", "IGG-FRAME-7", "PING after an unknown code")
        require_ok(after, "IGG-FRAME-7", "PING after an unknown code")
        if target.target.revision == "doc":
            for code, name in ((38, "LOGIN_USER"), (39, "LOGOUT_USER")):
                what = f"{name} ({code}), not in doc's table"
                send_raw(conn, code, b"", what)
                reply = read(target, conn, "ping", "IGG-FRAME-7", what)
                require_status(reply, 3, "IGG-FRAME-7", what)


@case("iggy/framing/9", "IGG-FRAME-8")
def test_undecodable_payloads_are_3_and_invalid_fields_4(target: CaseContext) -> None:
    """Short or non-UTF-8 payloads and unknown consumer or strategy kinds are answered 3, a
    numeric id of length 2 or 3 or an empty name 4.

    IGG-FRAME-8: "for a request other than SEND_MESSAGES, a payload that cannot be decoded (too
    short, an unknown kind or discriminant byte, invalid UTF-8) is answered with status 3, and a
    payload that decodes but has a field failing validation (a numeric Identifier whose length
    is not 4, a name or string Identifier of length 0) is answered with status 4
    (InvalidFormat); either way the connection keeps serving."
    """
    with target.connect() as conn:
        refuse_malformed(target, conn, "IGG-FRAME-8")
        conn.send(PING, summary="PING after them")
        after = read(target, conn, "ping", "IGG-FRAME-8", "PING after malformed payloads")
        require_ok(after, "IGG-FRAME-8", "PING after malformed payloads")
