"""Kafka framing (SPEC.md, area "framing")."""

from __future__ import annotations

import contextlib
import time

from conformance.client import PeerClosed, ReplyTimeout
from conformance.evidence import combined
from conformance.protocols.kafka import codec
from conformance.suite.case import case, require
from conformance.suite.kafka.verify import KafkaClient
from conformance.suite.shown import show_all
from conformance.suite.target import CaseContext

API_VERSIONS_V0 = codec.encode_request(18, 0, {}, correlation_id=42)
"""ApiVersions v0, correlation 42: every broker answers it."""


def _still_serving(target: CaseContext, requirement: str, what: str) -> None:
    with KafkaClient(target) as fresh:
        fresh.call("ApiVersions", 0, {}, requirement, f"ApiVersions on a new connection {what}")


@case("kafka/framing/1", "KAF-FRAME-1")
def test_a_response_is_one_size_prefixed_frame(target: CaseContext) -> None:
    """Every response is an int32 size N followed by exactly N bytes.

    KAF-FRAME-1: "every request and response is one frame: a 4-byte big-endian int32 size N followed
    by N bytes; N does not count the size field."
    """
    with KafkaClient(target) as k:
        k.raw(codec.frame(API_VERSIONS_V0), "ApiVersions v0 #42")
        reply = k.payload("KAF-FRAME-1", "ApiVersions v0")
        answered = k.exchange()
        # the deframer took exactly the size the prefix gave; nothing may follow it
        try:
            extra = k.conn.recv_frame(0.2)
        except (ReplyTimeout, PeerClosed):
            extra = None
        more = k.exchange()
    got = codec.correlation_of(reply)
    require(
        got == 42,
        "KAF-FRAME-1",
        f"the frame read is not the answer: correlation id {got}, expected 42",
        answered.on("header.correlation_id"),
    )
    require(
        extra is None,
        "KAF-FRAME-1",
        f"a frame of {len(extra or b'')} more bytes after the answer, expected nothing",
        more,
    )


@case("kafka/framing/2", "KAF-FRAME-2")
def test_a_request_written_a_byte_at_a_time_is_answered(target: CaseContext) -> None:
    """A request split over many TCP writes is reassembled and answered.

    KAF-FRAME-2: "frames are delimited by their size alone: a request split over many TCP writes is
    reassembled ..."
    """
    with KafkaClient(target) as k:
        for b in codec.frame(API_VERSIONS_V0):
            k.raw(bytes([b]), "one byte")
            time.sleep(0.002)
        reply = k.payload("KAF-FRAME-2", "ApiVersions sent a byte at a time")
        answered = k.exchange()
    got = codec.correlation_of(reply)
    require(
        got == 42,
        "KAF-FRAME-2",
        f"the answer has correlation id {got}, expected 42",
        answered.on("header.correlation_id"),
    )


@case("kafka/framing/3", "KAF-FRAME-2")
def test_pipelined_requests_are_answered_in_order(target: CaseContext) -> None:
    """Several requests in one write are each answered, in the order they were sent.

    KAF-FRAME-2: "... several requests in one write are each answered, in the order they were sent."
    """
    with KafkaClient(target) as k:
        frames = [codec.frame(codec.encode_request(18, 0, {}, correlation_id=c)) for c in (7, 8, 9)]
        k.raw(b"".join(frames), "three ApiVersions v0 in one write (#7, #8, #9)")
        got, seen = [], []
        for i in (1, 2, 3):
            got.append(codec.correlation_of(k.payload("KAF-FRAME-2", f"answer {i}")))
            seen.append(k.exchange().on("header.correlation_id"))
    require(
        got == [7, 8, 9],
        "KAF-FRAME-2",
        f"answers to correlation ids {show_all(got)}, expected 7, 8, 9 in that order",
        combined(e for e, c, want in zip(seen, got, (7, 8, 9), strict=True) if c != want),
    )


def _refused_from_the_prefix(target: CaseContext, prefix: bytes, what: str) -> None:
    with KafkaClient(target) as k:
        k.raw(prefix + b"\x00" * 8, what)
        start = time.monotonic()
        closed = k.expect_close("KAF-FRAME-3", what)
        took = time.monotonic() - start
    require(
        took < target.timeout,
        "KAF-FRAME-3",
        f"{what}: closed only after {took:.1f}s, expected at once (under {target.timeout:g}s)",
        closed,
    )
    _still_serving(target, "KAF-FRAME-3", f"after {what}")


@case("kafka/framing/4", "KAF-FRAME-3")
def test_a_negative_size_is_refused_from_the_prefix(target: CaseContext) -> None:
    """A negative size prefix closes the connection; the broker keeps serving.

    KAF-FRAME-3: "a size prefix that is negative ... is refused from the prefix alone (the
    connection is closed) ... and the broker keeps serving other connections."
    """
    _refused_from_the_prefix(target, b"\xff\xff\xff\xf0", "size -16")


@case("kafka/framing/5", "KAF-FRAME-3")
def test_a_two_gib_size_is_refused_without_waiting_for_it(target: CaseContext) -> None:
    """A size larger than the broker accepts closes the connection without the bytes.

    KAF-FRAME-3: "a size prefix that is ... larger than the broker accepts is refused from the
    prefix alone (the connection is closed) without waiting for or buffering the claimed bytes ..."
    """
    _refused_from_the_prefix(target, b"\x7f\xff\xff\xff", "size 2147483647")


@case("kafka/framing/6", "KAF-FRAME-4")
def test_a_connection_dropped_mid_frame_does_not_affect_others(target: CaseContext) -> None:
    """A connection that ends in the middle of a frame, or sends garbage, leaves the
    broker serving other connections.

    KAF-FRAME-4: "a connection that ends in the middle of a frame, or sends bytes that cannot be
    decoded, does not affect other connections: the broker keeps accepting and answering them."
    """
    with KafkaClient(target) as k:
        k.raw(codec.frame(API_VERSIONS_V0)[:9], "the first 9 bytes of a request, then close")
    with KafkaClient(target) as k:
        k.raw(codec.frame(b"\x13\x37" + b"\xee" * 30), "a frame of garbage")
        with contextlib.suppress(ReplyTimeout, PeerClosed):
            k.conn.recv_frame(0.5)
    _still_serving(target, "KAF-FRAME-4", "after a dropped and a garbage connection")


@case("kafka/framing/7", "KAF-FRAME-5")
def test_a_frame_shorter_than_a_header_is_closed(target: CaseContext) -> None:
    """A frame too short to hold a request header is never answered: the connection closes.

    KAF-FRAME-5: "a frame too short to hold a request header (fewer than 8 bytes) is never answered
    as a request: the broker closes the connection."
    """
    with KafkaClient(target) as k:
        k.raw(codec.frame(b"\x00\x12\x00\x00"), "a 4-byte frame: api key 18, version 0, no more")
        k.expect_close("KAF-FRAME-5", "a 4-byte request")
