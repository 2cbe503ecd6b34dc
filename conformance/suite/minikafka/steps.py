"""Steps the mini-Kafka cases share: produce, consume, read a topic back, flush, and see
that a target goes on serving after bad input.

Every step checks what it relies on and blames the requirement the caller names (or the
one that covers it), so that a target breaking one requirement fails that requirement's
cases and no others.  In particular no step relies on a rule a spec quirk bends unless it
blames that rule: :func:`read_back` advances by the offsets of the messages it got, never
by ``next_offset`` (MK-CONS-5), asks batch sizes no larger than what is left, and takes
fewer messages than asked as they come (MK-CONS-4 is a SHOULD); :func:`flush` blames
MK-FLUSH-1 for a reply other than ``0601``; no step reads a topic nobody produced to
(MK-CONS-6).  What a reply holds is judged by the requirement that defines it
(:mod:`.verify`), whatever requirement the caller names: that one covers a silence, a
close and a refusal.

Targets keep state, so every case works on topics of its own (``ctx.name``).  The real
server serves one connection at a time: a step that needs a new connection is given it
by a case that closed the one before.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

from conformance.client import BadFraming, Connection, PeerClosed, ReplyTimeout
from conformance.evidence import Evidence, Judged
from conformance.protocols.minikafka import codec
from conformance.protocols.minikafka import messages as m
from conformance.suite.case import Unsupported, Violation
from conformance.suite.minikafka.verify import (
    FLUSH_FRAME,
    FLUSH_OK,
    Reply,
    answered,
    expect_success,
    frame_hex,
    read,
    require_framed,
    require_type,
    send_raw,
)
from conformance.suite.shown import show
from conformance.suite.target import CaseContext

GRACE_S = 0.5
"""How long a robustness case listens, on the connection it sent bad input on, for an error
reply or a close before closing it itself (whatever comes there is allowed)."""


# ------------------------------------------------------------------ produce


@dataclass(frozen=True)
class Produced:
    reply: Reply
    offset: int
    data: bytes


def produce(
    ctx: CaseContext,
    conn: Connection,
    topic: str | bytes,
    data: bytes,
    requirement: str = "MK-PROD-1",
) -> Produced:
    """PRODUCE ``data`` to ``topic``, answered with the success path
    ``[0x04][0x01][int64 offset]`` (a reply that does not read so is MK-PROD-1's; a
    silence, a close or a refusal breaks ``requirement``)."""
    request = codec.Produce(topic, data)
    reply = expect_success(ctx, conn, request, requirement)
    assert isinstance(reply.reply, codec.ProduceOk)
    return Produced(reply, reply.reply.offset, data)


def produce_all(
    ctx: CaseContext,
    conn: Connection,
    topic: str,
    values: Sequence[bytes],
    requirement: str = "MK-PROD-1",
) -> list[Produced]:
    """PRODUCE each value to a fresh ``topic``; their offsets must be 0, 1, 2... (MK-PROD-2:
    a case that reads them back by offset relies on it)."""
    out = []
    for i, value in enumerate(values):
        put = produce(ctx, conn, topic, value, requirement)
        if put.offset != i:
            raise Violation(
                "MK-PROD-2",
                f"PRODUCE number {i + 1} to the new topic {show(topic)}: offset {put.offset},"
                f" expected {i}",
                put.reply.at("offset"),
            )
        out.append(put)
    return out


# ------------------------------------------------------------------ consume


def consume(
    ctx: CaseContext,
    conn: Connection,
    topic: str | bytes,
    offset: int,
    batch: int,
    requirement: str = "MK-CONS-1",
    what: str | None = None,
) -> tuple[codec.ConsumeOk, Reply]:
    """CONSUME, answered with the success path, decoded whole (a reply that does not read
    so is MK-CONS-1's; a silence, a close or a refusal breaks ``requirement``)."""
    reply = expect_success(ctx, conn, codec.Consume(topic, offset, batch), requirement, what)
    assert isinstance(reply.reply, codec.ConsumeOk)
    return reply.reply, reply


def offsets_of(got: codec.ConsumeOk) -> str:
    return ", ".join(str(c.offset) for c in got.messages) or "none"


@dataclass(frozen=True)
class Read:
    """A topic read back: each message and the reply it came in."""

    messages: list[tuple[codec.Consumed, Reply, int]]
    """(message, reply, its index in that reply's messages)."""

    def data(self) -> list[bytes]:
        return [c.data for c, _, _ in self.messages]

    def at(self, index: int, *fields: str) -> Evidence:
        """The evidence of message ``index``: its reply, ``fields`` of it judged."""
        _, reply, i = self.messages[index]
        return reply.at(*(f"messages[{i}].{f}" for f in fields))


def read_back(
    ctx: CaseContext,
    conn: Connection,
    topic: str | bytes,
    start: int,
    end: int,
    requirement: str = "MK-CONS-1",
) -> Read:
    """Every message of ``topic`` from ``start`` up to ``end`` (exclusive), read by as many
    CONSUMEs as it takes, each asking for what is left: a round that returns none breaks
    MK-CONS-12 (they were all acknowledged), messages that do not start at the offset
    asked or skip one break MK-CONS-2."""
    out: list[tuple[codec.Consumed, Reply, int]] = []
    at = start
    while at < end:
        got, reply = consume(ctx, conn, topic, at, end - at, requirement)
        what = f"CONSUME {show(topic)} offset={at} batch={end - at}"
        if not got.messages:
            raise Violation(
                "MK-CONS-12",
                f"{what}: no messages, expected the one PRODUCE acknowledged at offset {at}"
                f" (offsets {at}..{end - 1} were all acknowledged)",
                reply.at("messages count", asked=("offset",)),
            )
        for i, item in enumerate(got.messages):
            if item.offset != at:
                raise Violation(
                    "MK-CONS-2",
                    f"{what}: messages at offsets {offsets_of(got)}, expected {at} as message"
                    f" {i + 1} (they start at the offset asked, one after another)",
                    reply.at(f"messages[{i}].offset", asked=("offset",)),
                )
            out.append((item, reply, i))
            at += 1
            if at == end:
                break
    return Read(out)


def require_data(
    read: Read, puts: Sequence[Produced], requirement: str, what: str, first: int = 0
) -> None:
    """Message ``first + i`` of ``read`` holds the data of ``puts[i]``, byte for byte."""
    for i, (put, (item, _, _)) in enumerate(zip(puts, read.messages[first:], strict=False)):
        if item.data != put.data:
            raise Violation(
                requirement,
                f"{what}: the message at offset {item.offset} holds {show(item.data, 40)},"
                f" expected {show(put.data, 40)} (what PRODUCE sent there)",
                put.reply.at("offset") + read.at(first + i, "offset", "data"),
            )


# -------------------------------------------------------------------- flush


def flush(ctx: CaseContext, conn: Connection, requirement: str = "MK-FLUSH-1") -> Reply:
    """FLUSH ``0000000505``, answered ``000000060601`` exactly (MK-FLUSH-1; a silence or a
    close breaks ``requirement``).  A type byte other than 0x06 or a success byte other
    than 1 or 0 is MK-FRAME-4's, bytes after the reply that do not frame MK-FRAME-1's."""
    send_raw(conn, FLUSH_FRAME, "FLUSH")
    what = "FLUSH 0000000505"
    reply = read(ctx, conn, requirement, what)
    if reply.payload != FLUSH_OK:
        require_type(reply, m.FLUSH_REQUEST, what)
        require_framed(reply, what)
        raise Violation(
            "MK-FLUSH-1",
            f"{what}: answered {frame_hex(reply.payload)}, expected 00000006 0601"
            " (type 0x06, success 1)",
            reply.at("type", "success"),
        )
    return reply


# --------------------------------------------------------------- robustness

STOPPED_BY = "minikafka.stopped_by"
"""The run's fact naming the robustness input that stopped the target serving."""


def not_after_a_stop(ctx: CaseContext, requirement: str) -> None:
    """Unsupported ("not checked") once an earlier case found the target stopped serving
    (:data:`STOPPED_BY`): this case's input would meet a target that is gone."""
    stopped_by = ctx.target.facts.get(STOPPED_BY)
    if stopped_by is not None:
        raise Unsupported(
            f"not checked: the target stopped serving after {stopped_by}; run this case "
            "alone against a fresh target to check it",
            requirement,
        )


def serves_new_connections(ctx: CaseContext, requirement: str, what: str, sent: int) -> None:
    """A FLUSH on a new connection must be answered after ``what`` (wire-log entry
    ``sent``); no answer within the deadline means the target stopped serving: a
    violation of ``requirement`` decided on that silence, and the fact :data:`STOPPED_BY`
    recorded for the cases after this one."""
    with ctx.connect() as fresh:
        try:
            answered(ctx, fresh, requirement, f"FLUSH on a new connection after {what}")
        except Violation as exc:
            if exc.evidence.ending != "timeout":
                raise  # a close: the target is there, and the verdict is the plugin's
            ctx.target.facts[STOPPED_BY] = f"{what} ({requirement})"
            frames = (Judged(sent), *exc.evidence.frames)
            raise Violation(
                requirement,
                f"{what}, then a FLUSH on a new connection: no reply within"
                f" {ctx.timeout:g}s; the target stopped serving",
                Evidence(frames),  # decided here, on the silence: no probe (see above)
            ) from None


def goes_on_serving(
    ctx: CaseContext, bad: bytes, requirement: str, what: str, summary: str = ""
) -> None:
    """Send ``bad`` on a connection served a moment before, accept an error reply, a close
    or nothing there (for :data:`GRACE_S`), close it, and require a FLUSH on a new
    connection to be answered within the run's deadline.

    A new connection that gets no answer means the target stopped serving, which is
    this SHOULD's violation (WARN), decided here and not by a probe: a probe would find
    the target gone and make it an ERROR, after waiting twice more.  The case is then
    recorded in the run's facts (:data:`STOPPED_BY`) and the later robustness cases are
    UNSUPPORTED ("not checked"), at once: the real server stops serving after the first
    of these inputs, and it breaks only SHOULDs (SPEC.md), so its run must not fail on
    them.  The robustness cases run last (their file sorts last), so no MUST case meets
    the stopped target; one that did would find it gone and be an ERROR, as it should."""
    not_after_a_stop(ctx, requirement)
    with ctx.connect() as conn:
        answered(ctx, conn, "MK-FRAME-3", f"FLUSH before {what}")
        sent = send_raw(conn, bad, summary or what)
        # an error reply, a close or nothing: all allowed on this connection
        with contextlib.suppress(ReplyTimeout, PeerClosed, BadFraming):
            conn.recv_frame(min(GRACE_S, ctx.timeout))
    serves_new_connections(ctx, requirement, what, sent)
