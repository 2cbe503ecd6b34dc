"""Cursus revision real: STREAM pushes and keepalives (SPEC.md, area "rstreaming")."""

from __future__ import annotations

from conformance.client import Connection
from conformance.protocols.cursus import real_codec
from conformance.protocols.cursus.codec import CursusError
from conformance.protocols.cursus.messages import MAGIC, Message
from conformance.protocols.cursus.real_messages import RealCommand, command
from conformance.suite.case import Violation, case, require
from conformance.suite.cursus.reads import Consumed, Read
from conformance.suite.cursus.real_verify import create_topic, produce
from conformance.suite.cursus.real_verify import send as real_send
from conformance.suite.cursus.verify import reply_payload, shown
from conformance.suite.shown import show_all
from conformance.suite.target import CaseContext

MAGIC_BYTES = MAGIC.to_bytes(2, "big")


def stream(topic: str, group: str, offset: int | None = None) -> RealCommand:
    extra = {} if offset is None else {"offset": offset}
    return command("STREAM", topic=topic, partition=0, group=group, member="m", **extra)


def pushed(
    target: CaseContext, conn: Connection, want: int, what: str, requirement: str
) -> Consumed:
    """Read frames until ``want`` messages came: empty frames are keepalives; a frame that is
    not a batch is a broken keepalive (CUR-RSTREAM-3), a batch that does not decode a broken
    push (CUR-RSTREAM-1); silence is blamed on ``requirement``."""
    out: list[Message] = []
    pages: list[Read[tuple[Message, ...]]] = []
    for _ in range(want + 50):  # bounded: keepalives and small batches
        if len(out) >= want:
            break
        read = reply_payload(target, conn, requirement, what)
        if not read.payload:
            continue
        if read.payload[:2] != MAGIC_BYTES:
            raise Violation(
                "CUR-RSTREAM-3",
                f"{what}: the stream sent {shown(read)}, neither a batch nor an empty keepalive",
                read.at("word0"),
            )
        try:
            b = real_codec.decode_batch(read.payload)
        except CursusError as exc:
            raise Violation(
                "CUR-RSTREAM-1", f"{what}: a push does not decode ({exc})", read.evidence
            ) from None
        pages.append(read.but(b.messages))
        out.extend(b.messages)
    return Consumed(out, tuple(pages))


@case("cursus/rstreaming/1", "CUR-RSTREAM-1")
def test_stream_pushes_stored_messages_from_its_offset(target: CaseContext) -> None:
    """STREAM offset=1 of three stored messages pushes m1, m2 with no reply before them.

    CUR-RSTREAM-1: "`STREAM topic=T partition=P group=G` sends no reply of its own and pushes the
    partition's messages from its start (the group's committed offset, else `offset=`, else 0) as
    frames each holding a batch in the real layout, in offset order with no gaps."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "backlog")
        produce(target, conn, topic, b"m0", b"m1", b"m2")
        with target.connect() as s:
            real_send(s, stream(topic, target.name("g"), 1))
            got = pushed(target, s, 2, "STREAM offset=1 of 3", "CUR-RSTREAM-1")
        pairs = [(m.offset, m.payload) for m in got.messages]
        require(
            pairs == [(1, b"m1"), (2, b"m2")],
            "CUR-RSTREAM-1",
            f"the stream pushed {show_all(pairs)}, expected (1, m1), (2, m2)",
            got.at("offset"),
        )


@case("cursus/rstreaming/2", "CUR-RSTREAM-2")
def test_messages_produced_later_are_pushed(target: CaseContext) -> None:
    """A STREAM of an empty topic pushes what is produced afterwards.

    CUR-RSTREAM-2: "messages produced after a STREAM began are pushed on it without another
    request."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "live")
        with target.connect() as s:
            real_send(s, stream(topic, target.name("g")))
            produce(target, conn, topic, b"late0", b"late1")
            got = pushed(target, s, 2, "STREAM of messages produced after it", "CUR-RSTREAM-2")
        require(
            got.payloads() == [b"late0", b"late1"],
            "CUR-RSTREAM-2",
            f"the stream pushed {show_all(got.payloads())}, expected late0, late1",
            got.at("payload"),
        )


@case("cursus/rstreaming/3", "CUR-RSTREAM-3")
def test_an_idle_stream_sends_empty_keepalives(target: CaseContext) -> None:
    """A STREAM with nothing to push sends an empty frame within the keepalive interval.

    CUR-RSTREAM-3: "while a stream has nothing to push it sends keepalives, each an empty frame (the
    four bytes `00 00 00 00`), at least once per keepalive interval (5 s in the real broker;
    `--keepalive-ms` of `run` and `serve`)."
    """
    interval = int(target.options.get("keepalive_ms") or 5000) / 1000
    with target.connect() as conn:
        topic = create_topic(target, conn, "idle")
        with target.connect() as s:
            real_send(s, stream(topic, target.name("g")))
            what = f"an idle STREAM, watched for {interval:g}s + the deadline"
            read = reply_payload(target, s, "CUR-RSTREAM-3", what, interval + target.timeout)
            require(
                read.payload == b"",
                "CUR-RSTREAM-3",
                f"{what}: the first frame is {shown(read)}, expected an empty keepalive frame",
                read.at("word0"),
            )
