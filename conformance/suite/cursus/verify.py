"""Shared verifiers and steps of the Cursus cases.

Every case ends in one of the ``expect_*`` verifiers; the steps (``create_topic``,
``produce``, ``consume_from``, ``join``) are built on them.  A verifier returns what
it checked as a :class:`~conformance.suite.cursus.reads.Read` (the value and the
evidence of the exchange it came in, so that a later check names the exact frame and
field it judged) or raises :class:`~conformance.suite.case.Violation` naming the requirement
broken, or :class:`~conformance.suite.case.Unsupported` when the target answers a
reference-broker convention (level MAY) its own way.

Steps check what they rely on and blame the requirement that covers it, so that a
target breaking one requirement fails the cases of that requirement and no others:
``create_topic`` checks that the partitions exist (CUR-TEXT-3), ``consume_from`` that
the reply starts at the asked offset (CUR-TEXT-4), ``expect_error`` that the error
prefix is exact (CUR-ERR-1).
"""

from __future__ import annotations

from collections.abc import Sequence

from conformance.client import Connection, PeerClosed, ReplyTimeout
from conformance.evidence import Evidence
from conformance.protocols.cursus import codec
from conformance.protocols.cursus.codec import CursusError
from conformance.protocols.cursus.messages import (
    ERROR_PREFIX,
    GEN_MISMATCH,
    REBALANCE_REQUIRED,
    Batch,
    BatchAck,
    Command,
    ErrorReply,
    Message,
    OkReply,
    Reply,
    Request,
    SpecialReply,
    TopicList,
)
from conformance.suite.case import Unsupported, Violation
from conformance.suite.cursus.reads import Consumed, Read
from conformance.suite.shown import show_all
from conformance.suite.target import CaseContext

# ---------------------------------------------------------------- raw replies


def send(conn: Connection, request: Request | bytes, *, gzip: bool = False) -> int:
    """Send one request (a message, or an already-encoded payload) as one frame; its
    wire-log entry."""
    if isinstance(request, bytes):
        payload = request
    else:
        payload = codec.encode_request(request, compression="gzip" if gzip else None)
    return conn.send(codec.frame(payload))


def reply_payload(
    ctx: CaseContext, conn: Connection, requirement: str, what: str, timeout: float | None = None
) -> Read[bytes]:
    """The next frame's payload and its exchange; silence or a close is a violation of
    ``requirement`` (decided on the request and the event)."""
    try:
        payload = conn.recv_frame(timeout)
    except ReplyTimeout as exc:
        ctx.silence(requirement, what, exc.evidence, exc.waited)
    except PeerClosed as exc:
        raise Violation(
            requirement, f"{what}: the target closed the connection instead", exc.evidence
        ) from None
    return Read(payload, conn.exchange(), payload, conn.log)


def decode(read: Read[bytes], requirement: str, what: str) -> Read[Reply]:
    """The reply read as a client reads it; an ``OK`` reply's keys name their words."""
    try:
        r = codec.decode_reply(read.payload)
    except CursusError as exc:
        raise Violation(
            requirement, f"{what}: the reply does not decode ({exc})", read.evidence
        ) from None
    words = (
        {k: f"word{i + 1}" for i, (k, _) in enumerate(r.fields)} if isinstance(r, OkReply) else {}
    )
    return Read(r, read.evidence, read.payload, read.log, words)


def check_error_prefix(read: Read[bytes]) -> None:
    """CUR-ERR-1: text that reads as an error must start with the exact ``ERROR:``."""
    head = read.payload[:16].decode("utf-8", "replace")
    if head.lower().startswith("error") and not head.startswith(ERROR_PREFIX):
        raise Violation(
            "CUR-ERR-1",
            f"the error reply begins {head!r}, expected the exact 'ERROR:'",
            read.at("word0"),
        )


def request(
    ctx: CaseContext,
    conn: Connection,
    req: Request | bytes,
    requirement: str,
    what: str,
    *,
    gzip: bool = False,
) -> Read[Reply]:
    send(conn, req, gzip=gzip)
    read = reply_payload(ctx, conn, requirement, what)
    check_error_prefix(read)
    return decode(read, requirement, what)


# ----------------------------------------------------------------- verifiers


def expect_ok(
    ctx: CaseContext, conn: Connection, req: Request, requirement: str, what: str
) -> Read[Reply]:
    """A success reply: anything but ``ERROR:``, a special reply, or an ERROR ack."""
    read = request(ctx, conn, req, requirement, what)
    r = read.reply
    if isinstance(r, ErrorReply | SpecialReply):
        raise Violation(
            requirement, f"{what}: answered {shown(read)}, expected success", read.at(*kind_of(r))
        )
    if isinstance(r, BatchAck) and r.status != "OK":
        raise Violation(
            requirement,
            f"{what}: ack status {r.status} (error {r.error!r}), expected OK",
            read.at("status", "error"),
        )
    return read


def expect_error(
    ctx: CaseContext,
    conn: Connection,
    req: Request | bytes,
    requirement: str,
    what: str,
    *,
    gzip: bool = False,
) -> Read[Reply]:
    """An ``ERROR:`` reply, or an ack with status ERROR for a batch."""
    read = request(ctx, conn, req, requirement, what, gzip=gzip)
    r = read.reply
    if isinstance(r, ErrorReply) or (isinstance(r, BatchAck) and r.status == "ERROR"):
        return read
    raise Violation(
        requirement, f"{what}: answered {shown(read)}, expected an error", read.at(*kind_of(r))
    )


def expect_rebalance(
    ctx: CaseContext, conn: Connection, req: Request, requirement: str, what: str
) -> Read[SpecialReply]:
    """A reply containing REBALANCE_REQUIRED or GEN_MISMATCH."""
    read = request(ctx, conn, req, requirement, what)
    r = read.reply
    if isinstance(r, SpecialReply) and r.kind in (REBALANCE_REQUIRED, GEN_MISMATCH):
        return read.but(r)
    raise Violation(
        requirement,
        f"{what}: answered {shown(read)}, expected REBALANCE_REQUIRED or GEN_MISMATCH",
        read.at(*kind_of(r), asked=("generation",)),
    )


ACK_FIELD_NAMES = (
    "status",
    "last_offset",
    "producer_epoch",
    "producer_id",
    "seq_start",
    "seq_end",
    "leader",
    "error",
)
"""The fields of a JSON ack (CUR-ACK-2), as the frame annotator names them."""


def expect_ack(
    ctx: CaseContext, conn: Connection, batch: Batch | bytes, what: str, *, gzip: bool = False
) -> Read[BatchAck]:
    """Exactly one JSON ack (CUR-ACK-1) with every documented field (CUR-ACK-2)."""
    send(conn, batch, gzip=gzip)
    read = reply_payload(ctx, conn, "CUR-ACK-1", what)
    if not read.payload.lstrip()[:1] == b"{":
        raise Violation(
            "CUR-ACK-1",
            f"{what}: the reply {shown(read)} is not a JSON object, expected a JSON ack",
            read.evidence,
        )
    try:
        return read.but(codec.decode_ack(read.payload))
    except CursusError as exc:
        raise Violation(
            "CUR-ACK-2",
            f"{what}: {exc}; expected all eight documented fields, each of its type",
            read.at(*ACK_FIELD_NAMES),
        ) from None


def expect_ack_ok(
    ctx: CaseContext, conn: Connection, batch: Batch | bytes, what: str, *, gzip: bool = False
) -> Read[BatchAck]:
    ack = expect_ack(ctx, conn, batch, what, gzip=gzip)
    if ack.reply.status != "OK":
        raise Violation(
            "CUR-ACK-3",
            f"{what}: status {ack.reply.status!r} (error {ack.reply.error!r}), expected OK",
            ack.at("status", "error"),
        )
    return ack


def expect_close_or_error(ctx: CaseContext, conn: Connection, requirement: str, what: str) -> str:
    """The target closes the connection, or answers an error (and may close after)."""
    try:
        payload = conn.recv_frame()
    except PeerClosed:
        return "closed"
    except ReplyTimeout as exc:
        ctx.silence(requirement, what, exc.evidence, exc.waited)
    read = Read(payload, conn.exchange(), payload, conn.log)
    text = payload[:16].decode("utf-8", "replace").upper()
    if text.startswith("ERROR") or (payload[:1] == b"{" and b'"ERROR"' in payload):
        return "error"
    raise Violation(
        requirement,
        f"{what}: answered {shown(read)}, expected an error or a close",
        read.at(*kind_of_payload(payload)),
    )


# --------------------------------------------------------------------- steps


def create_topic(ctx: CaseContext, conn: Connection, base: str, partitions: int = 1) -> str:
    """CREATE a fresh topic; with several partitions, check the last one exists (CUR-TEXT-3)."""
    topic = ctx.name(base)
    expect_ok(ctx, conn, Command("CREATE", (topic, partitions)), "CUR-TEXT-3", f"CREATE {topic}")
    if partitions > 1:
        last = partitions - 1
        read = request(
            ctx,
            conn,
            Command("CONSUME", (topic, last, 0)),
            "CUR-TEXT-3",
            f"CONSUME from partition {last} of a {partitions}-partition topic",
        )
        if isinstance(read.reply, ErrorReply):
            raise Violation(
                "CUR-TEXT-3",
                f"CREATE {topic} {partitions} made no partition {last}: CONSUME of it answered "
                f"{shown(read)}, expected a batch",
                read.at("word0", "word1", asked=("partition",)),
            )
    return topic


def messages(
    *payloads: bytes, producer: str = "", epoch: int = 0, seq: int = 0
) -> tuple[Message, ...]:
    return tuple(
        Message(seq_num=seq + i, producer_id=producer, key=f"k{i}", epoch=epoch, payload=p)
        for i, p in enumerate(payloads)
    )


def batch(
    topic: str,
    msgs: Sequence[Message],
    *,
    partition: int | str = 0,
    acks: str = "1",
    idempotent: bool = False,
) -> Batch:
    """A batch whose header sequence range matches its messages' seqNums."""
    seqs = [m.seq_num for m in msgs] or [0]
    return Batch(topic, str(partition), acks, idempotent, min(seqs), max(seqs), tuple(msgs))


def produce(
    ctx: CaseContext, conn: Connection, topic: str, *payloads: bytes, partition: int = 0
) -> Read[BatchAck]:
    return expect_ack_ok(
        ctx,
        conn,
        batch(topic, messages(*payloads), partition=partition),
        f"produce {len(payloads)} message(s) to {topic}/{partition}",
    )


def consume_from(
    ctx: CaseContext,
    conn: Connection,
    topic: str,
    partition: int,
    offset: int,
    requirement: str = "CUR-TEXT-4",
) -> Read[tuple[Message, ...]]:
    """One CONSUME; the messages must start at ``offset`` and be consecutive (CUR-TEXT-4)."""
    cmd = Command("CONSUME", (topic, partition, offset))
    what = f"CONSUME {topic} {partition} {offset}"
    read = request(ctx, conn, cmd, requirement, what)
    r = read.reply
    if isinstance(r, ErrorReply):
        raise Violation(
            requirement, f"{what}: answered {shown(read)}, expected a batch", read.at("word0")
        )
    if not isinstance(r, Batch):
        raise Unsupported(
            f"{what}: answered {shown(read)}, not a 0xBA7C batch", "CUR-CONV-3", read.evidence
        )
    got = [m.offset for m in r.messages]
    want = list(range(offset, offset + len(got)))
    if got != want:
        raise Violation(
            "CUR-TEXT-4",
            f"{what}: offsets {show_all(got, most=10)}, expected consecutive offsets from {offset}",
            read.at(*(f"message[{i}].offset" for i in range(len(got))), asked=("offset",)),
        )
    return read.but(r.messages)


def consume_all(
    ctx: CaseContext,
    conn: Connection,
    topic: str,
    partition: int = 0,
    offset: int = 0,
    limit: int = 10_000,
) -> Consumed:
    """CONSUME until an empty batch: every message from ``offset`` on, with every page."""
    out: list[Message] = []
    pages: list[Read[tuple[Message, ...]]] = []
    while len(out) < limit:
        page = consume_from(ctx, conn, topic, partition, offset + len(out))
        pages.append(page)
        if not page.reply:
            break
        out.extend(page.reply)
    return Consumed(out, tuple(pages))


def kind_of(r: Reply) -> tuple[str, ...]:
    """The field that tells what kind of reply ``r`` is (an ack's status, a text reply's
    first word, a special reply's keyword), for a check that judged the reply's kind."""
    if isinstance(r, BatchAck):
        return ("status", "error")
    if isinstance(r, Batch):
        return ("magic",)
    if isinstance(r, TopicList):
        return ("reply",)
    return ("word0",)


def kind_of_payload(payload: bytes) -> tuple[str, ...]:
    """:func:`kind_of` for a payload not decoded (or that does not decode)."""
    if codec.is_batch(payload):
        return ("magic",)
    if payload[:1] == b"{":
        return ("status",)
    return ("word0",) if payload else ()


def shown(read: Read[object], limit: int = 80) -> str:
    """The reply as it is on the wire: a batch by its messages, text quoted as sent."""
    payload = read.payload
    if codec.is_batch(payload):
        try:
            return f"a batch of {len(codec.decode_batch(payload).messages)} message(s)"
        except CursusError:
            return f"a malformed batch ({len(payload)} bytes)"
    if not payload:
        return "an empty frame"
    text = payload[:limit]
    try:
        quoted = repr(text.decode("utf-8"))
    except UnicodeDecodeError:
        quoted = repr(text)
    return quoted + ("..." if len(payload) > limit else "")


def evidence_of(*reads: Read[object] | Consumed, field: str = "") -> Evidence:
    """Several reads a check compared, each with ``field`` judged."""
    out = Evidence()
    for r in reads:
        out = out + (r.at(field) if field else r.at())
    return out
