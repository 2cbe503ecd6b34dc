"""Cursus STREAM push (SPEC.md, area "streaming")."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from conformance.client import Connection, ReplyTimeout
from conformance.protocols.cursus import codec
from conformance.protocols.cursus.codec import CursusError
from conformance.protocols.cursus.messages import Command, Message
from conformance.suite.case import Violation, case, require
from conformance.suite.cursus.reads import Consumed, Read
from conformance.suite.cursus.verify import (
    create_topic,
    kind_of_payload,
    produce,
    reply_payload,
    send,
    shown,
)
from conformance.suite.shown import joined, show_all, show_fields
from conformance.suite.target import CaseContext

QUIET_S = 0.5
"""How long a stream that must push nothing yet is watched."""


def pushed(
    target: CaseContext,
    conn: Connection,
    want: int,
    what: str,
    requirement: str = "CUR-STREAM-2",
) -> Consumed:
    """Read pushes until ``want`` messages arrived; each push must be a batch (CUR-STREAM-3).
    Silence is blamed on ``requirement``."""
    out: list[Message] = []
    pages: list[Read[tuple[Message, ...]]] = []
    for _ in range(want + 50):  # bounded: keepalives and small batches
        if len(out) >= want:
            break
        read = reply_payload(target, conn, requirement, what)
        if not read.payload:
            continue  # keepalive
        if not codec.is_batch(read.payload):
            raise Violation(
                "CUR-STREAM-3",
                f"{what}: a push is {shown(read)}, expected a 0xBA7C batch",
                read.at(*kind_of_payload(read.payload)),
            )
        try:
            b = codec.decode_batch(read.payload)
        except CursusError as exc:
            raise Violation(
                "CUR-STREAM-3",
                f"{what}: a pushed batch does not decode ({exc}), expected the batch layout",
                read.evidence,
            ) from None
        pages.append(read.but(b.messages))
        out.extend(b.messages)
    return Consumed(out, tuple(pages))


@case("cursus/streaming/1", "CUR-STREAM-1", "CUR-STREAM-3")
def test_stream_pushes_stored_messages_from_the_offset(target: CaseContext) -> None:
    """STREAM pushes the messages already stored from that offset on, starting at it.

    CUR-STREAM-1: "`STREAM <topic> <partition> <offset>` pushes the messages already stored from
    that offset on, starting at that offset, without a further request."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "backlog")
        produce(target, conn, topic, b"m0", b"m1", b"m2")
        with target.connect() as stream:
            send(stream, Command("STREAM", (topic, 0, 1)))
            got = pushed(target, stream, 2, "STREAM from offset 1 of 3")
        require(
            [(m.offset, m.payload) for m in got.messages[:2]] == [(1, b"m1"), (2, b"m2")],
            "CUR-STREAM-1",
            f"pushed {_pushed(got.messages)}; expected offset 1 payload 'm1'; offset 2 payload"
            " 'm2' first",
            got.at("offset") + got.at("payload"),
        )


@case("cursus/streaming/2", "CUR-STREAM-2", "CUR-STREAM-3")
def test_stream_pushes_new_messages_in_order(target: CaseContext) -> None:
    """Messages produced after the stream opened are pushed in order, no gaps, no repeats.

    CUR-STREAM-2: "messages produced to the partition after the stream opened are pushed on the open
    stream, in offset order, with no gaps and no repeats."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "live")
        with target.connect() as stream:
            send(stream, Command("STREAM", (topic, 0, 0)))
            for i in range(3):
                produce(target, conn, topic, f"live{2 * i}".encode(), f"live{2 * i + 1}".encode())
            got = pushed(target, stream, 6, "STREAM while 3 batches are produced")
        require(
            [m.offset for m in got.messages] == list(range(6)),
            "CUR-STREAM-2",
            f"pushed offsets {show_all(m.offset for m in got.messages)}, expected 0, 1, 2, 3, 4, 5",
            got.at("offset"),
        )
        want = [f"live{i}".encode() for i in range(6)]
        require(
            got.payloads() == want,
            "CUR-STREAM-2",
            f"pushed payloads {show_all(got.payloads())}, expected {show_all(want)}",
            got.at("payload"),
        )


@case("cursus/streaming/3", "CUR-STREAM-2")
def test_a_stream_keeps_pushing_after_a_quiet_spell(target: CaseContext) -> None:
    """A persistent stream: after one push, later messages keep arriving.

    CUR-STREAM-2: "messages produced to the partition after the stream opened are pushed on the open
    stream ..."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "persist")
        with target.connect() as stream:
            send(stream, Command("STREAM", (topic, 0, 0)))
            produce(target, conn, topic, b"first")
            first = pushed(target, stream, 1, "the first push")
            produce(target, conn, topic, b"second")
            second = pushed(target, stream, 1, "the second push")
        got = first.payloads() + second.payloads()
        require(
            got == [b"first", b"second"],
            "CUR-STREAM-2",
            f"pushed payloads {show_all(got)}, expected 'first', 'second'",
            first.at("payload") + second.at("payload"),
        )


def quiet(target: CaseContext, conn: Connection, requirement: str, what: str) -> None:
    """Nothing but keepalives arrives within a short wait: no error, no messages."""
    while True:
        try:
            payload = conn.recv_frame(timeout=min(QUIET_S, target.timeout))
        except ReplyTimeout:
            return
        if payload:
            raise Violation(
                requirement,
                f"{what}: got {codec.describe('recv', payload)}, expected nothing yet",
                Read(payload, conn.exchange(), payload, conn.log).at(*kind_of_payload(payload)),
            )


@case("cursus/streaming/4", "CUR-CONV-10")
def test_stream_past_the_end_waits_for_that_offset(target: CaseContext) -> None:
    """STREAM past the end waits: nothing is pushed until that offset exists (convention).

    The stream opens without an error, and the pushes then start exactly at that offset.

    CUR-CONV-10: "STREAM on an offset past the end of the partition opens the stream without an
    error: nothing is pushed until messages reach that offset, and the pushes then start exactly at
    it."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "pastend")
        with target.connect() as stream:
            send(stream, Command("STREAM", (topic, 0, 3)))
            quiet(target, stream, "CUR-CONV-10", "STREAM at offset 3 of an empty partition")
            produce(target, conn, topic, b"m0", b"m1")
            quiet(target, stream, "CUR-CONV-10", "STREAM at offset 3 after offsets 0-1 exist")
            produce(target, conn, topic, b"m2", b"m3", b"m4")
            got = pushed(target, stream, 2, "STREAM at offset 3 once 0-4 exist", "CUR-CONV-10")
        require(
            [(m.offset, m.payload) for m in got.messages[:2]] == [(3, b"m3"), (4, b"m4")],
            "CUR-CONV-10",
            f"pushed {_pushed(got.messages)}; expected offset 3 payload 'm3'; offset 4 payload"
            " 'm4' first",
            got.at("offset") + got.at("payload"),
        )


def _pushed(msgs: Iterable[Any]) -> str:
    """Pushed messages by offset and payload: ``offset 1 payload 'm1'; ...``."""
    return joined(
        (show_fields(offset=m.offset, payload=m.payload) for m in msgs),
        sep="; ",
        empty="no message",
    )
