"""Shared verifiers and steps of the Cursus cases.

Every case ends in one of the ``expect_*`` verifiers; the steps (``create_topic``,
``produce``, ``consume_from``, ``join``) are built on them.  A verifier returns what
it checked or raises :class:`~conformance.suite.case.Violation` naming the requirement
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
)
from conformance.suite.case import Unsupported, Violation
from conformance.suite.target import CaseContext

# ---------------------------------------------------------------- raw replies


def send(conn: Connection, request: Request | bytes, *, gzip: bool = False) -> None:
    """Send one request (a message, or an already-encoded payload) as one frame."""
    if isinstance(request, bytes):
        payload = request
    else:
        payload = codec.encode_request(request, compression="gzip" if gzip else None)
    conn.send(codec.frame(payload))


def reply_payload(ctx: CaseContext, conn: Connection, requirement: str, what: str) -> bytes:
    """The next frame's payload; silence or a close is a violation of ``requirement``."""
    try:
        return conn.recv_frame()
    except ReplyTimeout:
        ctx.silence(requirement, what)
    except PeerClosed:
        raise Violation(requirement, f"{what}: the target closed the connection instead") from None


def decode(payload: bytes, requirement: str, what: str) -> Reply:
    try:
        return codec.decode_reply(payload)
    except CursusError as exc:
        raise Violation(requirement, f"{what}: the reply does not decode ({exc})") from None


def check_error_prefix(payload: bytes) -> None:
    """CUR-ERR-1: text that reads as an error must start with the exact ``ERROR:``."""
    head = payload[:16].decode("utf-8", "replace")
    if head.lower().startswith("error") and not head.startswith(ERROR_PREFIX):
        raise Violation("CUR-ERR-1", f"error reply begins {head!r}, not with the exact 'ERROR:'")


def request(
    ctx: CaseContext,
    conn: Connection,
    req: Request | bytes,
    requirement: str,
    what: str,
    *,
    gzip: bool = False,
) -> Reply:
    send(conn, req, gzip=gzip)
    payload = reply_payload(ctx, conn, requirement, what)
    check_error_prefix(payload)
    return decode(payload, requirement, what)


# ----------------------------------------------------------------- verifiers


def expect_ok(
    ctx: CaseContext, conn: Connection, req: Request, requirement: str, what: str
) -> Reply:
    """A success reply: anything but ``ERROR:``, a special reply, or an ERROR ack."""
    r = request(ctx, conn, req, requirement, what)
    if isinstance(r, ErrorReply | SpecialReply):
        raise Violation(requirement, f"{what}: answered {r.text!r}")
    if isinstance(r, BatchAck) and r.status != "OK":
        raise Violation(requirement, f"{what}: ack status {r.status} ({r.error})")
    return r


def expect_error(
    ctx: CaseContext,
    conn: Connection,
    req: Request | bytes,
    requirement: str,
    what: str,
    *,
    gzip: bool = False,
) -> Reply:
    """An ``ERROR:`` reply, or an ack with status ERROR for a batch."""
    r = request(ctx, conn, req, requirement, what, gzip=gzip)
    if isinstance(r, ErrorReply) or (isinstance(r, BatchAck) and r.status == "ERROR"):
        return r
    raise Violation(requirement, f"{what}: expected an error, got {_show(r)}")


def expect_rebalance(
    ctx: CaseContext, conn: Connection, req: Request, requirement: str, what: str
) -> SpecialReply:
    """A reply containing REBALANCE_REQUIRED or GEN_MISMATCH."""
    r = request(ctx, conn, req, requirement, what)
    if isinstance(r, SpecialReply) and r.kind in (REBALANCE_REQUIRED, GEN_MISMATCH):
        return r
    raise Violation(
        requirement, f"{what}: expected REBALANCE_REQUIRED or GEN_MISMATCH, got {_show(r)}"
    )


def expect_ack(
    ctx: CaseContext, conn: Connection, batch: Batch | bytes, what: str, *, gzip: bool = False
) -> BatchAck:
    """Exactly one JSON ack (CUR-ACK-1) with every documented field (CUR-ACK-2)."""
    send(conn, batch, gzip=gzip)
    payload = reply_payload(ctx, conn, "CUR-ACK-1", what)
    if not payload.lstrip()[:1] == b"{":
        raise Violation("CUR-ACK-1", f"{what}: the reply is not a JSON object: {payload[:80]!r}")
    try:
        return codec.decode_ack(payload)
    except CursusError as exc:
        raise Violation("CUR-ACK-2", f"{what}: {exc}") from None


def expect_ack_ok(
    ctx: CaseContext, conn: Connection, batch: Batch | bytes, what: str, *, gzip: bool = False
) -> BatchAck:
    ack = expect_ack(ctx, conn, batch, what, gzip=gzip)
    if ack.status != "OK":
        raise Violation("CUR-ACK-3", f"{what}: status {ack.status!r} ({ack.error!r}), expected OK")
    return ack


def expect_close_or_error(ctx: CaseContext, conn: Connection, requirement: str, what: str) -> str:
    """The target closes the connection, or answers an error (and may close after)."""
    try:
        payload = conn.recv_frame()
    except PeerClosed:
        return "closed"
    except ReplyTimeout:
        ctx.silence(requirement, what)
    text = payload[:16].decode("utf-8", "replace").upper()
    if text.startswith("ERROR") or (payload[:1] == b"{" and b'"ERROR"' in payload):
        return "error"
    raise Violation(requirement, f"{what}: expected an error or a close, got {payload[:80]!r}")


# --------------------------------------------------------------------- steps


def create_topic(ctx: CaseContext, conn: Connection, base: str, partitions: int = 1) -> str:
    """CREATE a fresh topic; with several partitions, check the last one exists (CUR-TEXT-3)."""
    topic = ctx.name(base)
    expect_ok(ctx, conn, Command("CREATE", (topic, partitions)), "CUR-TEXT-3", f"CREATE {topic}")
    if partitions > 1:
        r = request(
            ctx,
            conn,
            Command("CONSUME", (topic, partitions - 1, 0)),
            "CUR-TEXT-3",
            f"CONSUME from partition {partitions - 1} of a {partitions}-partition topic",
        )
        if isinstance(r, ErrorReply):
            raise Violation(
                "CUR-TEXT-3",
                f"CREATE {topic} {partitions} made no partition {partitions - 1}: {r.text!r}",
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
) -> BatchAck:
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
) -> tuple[Message, ...]:
    """One CONSUME; the messages must start at ``offset`` and be consecutive (CUR-TEXT-4)."""
    cmd = Command("CONSUME", (topic, partition, offset))
    r = request(ctx, conn, cmd, requirement, f"CONSUME {topic} {partition} {offset}")
    if isinstance(r, ErrorReply):
        raise Violation(requirement, f"CONSUME {topic} {partition} {offset} answered {r.text!r}")
    if not isinstance(r, Batch):
        raise Unsupported(
            f"CONSUME is not answered with a 0xBA7C batch but {_show(r)}", "CUR-CONV-3"
        )
    got = [m.offset for m in r.messages]
    want = list(range(offset, offset + len(got)))
    if got != want:
        raise Violation("CUR-TEXT-4", f"CONSUME from offset {offset} returned offsets {got[:10]}")
    return r.messages


def consume_all(
    ctx: CaseContext,
    conn: Connection,
    topic: str,
    partition: int = 0,
    offset: int = 0,
    limit: int = 10_000,
) -> list[Message]:
    out: list[Message] = []
    while len(out) < limit:
        got = consume_from(ctx, conn, topic, partition, offset + len(out))
        if not got:
            break
        out.extend(got)
    return out


def ok_field(r: Reply, key: str, convention: str, what: str) -> str:
    value = r.get(key) if isinstance(r, OkReply) else None
    if value is None:
        raise Unsupported(f"{what}: no {key}= in the reply {_show(r)}", convention)
    return value


def join(
    ctx: CaseContext, conn: Connection, topic: str, group: str, consumer: str
) -> tuple[str, int]:
    """JOIN_GROUP (CUR-GROUP-1); the member id and generation from the reply (CUR-CONV-4)."""
    what = f"JOIN_GROUP {topic} {group} {consumer}"
    r = expect_ok(ctx, conn, Command("JOIN_GROUP", (topic, group, consumer)), "CUR-GROUP-1", what)
    member = ok_field(r, "member", "CUR-CONV-4", what)
    generation = ok_field(r, "generation", "CUR-CONV-4", what)
    if not generation.isdigit():
        raise Unsupported(f"{what}: generation {generation!r} is not a number", "CUR-CONV-4")
    return member, int(generation)


def sync(
    ctx: CaseContext,
    conn: Connection,
    topic: str,
    group: str,
    member: str,
    generation: int,
    requirement: str = "CUR-GROUP-2",
) -> list[int]:
    """SYNC_GROUP; the assigned partitions (CUR-CONV-5)."""
    what = f"SYNC_GROUP {topic} {group} {member} {generation}"
    r = expect_ok(
        ctx, conn, Command("SYNC_GROUP", (topic, group, member, generation)), requirement, what
    )
    text = ok_field(r, "assignment", "CUR-CONV-5", what)
    try:
        return [int(p) for p in text.split(",") if p]
    except ValueError:
        raise Unsupported(f"{what}: assignment {text!r} is not p,p,...", "CUR-CONV-5") from None


def fetch_offset(ctx: CaseContext, conn: Connection, topic: str, group: str, partition: int) -> int:
    """FETCH_OFFSET (convention CUR-CONV-7): the committed offset, -1 when none."""
    what = f"FETCH_OFFSET {topic} {group} {partition}"
    r = request(ctx, conn, Command("FETCH_OFFSET", (topic, group, partition)), "CUR-CONV-7", what)
    value = ok_field(r, "offset", "CUR-CONV-7", what)
    try:
        return int(value)
    except ValueError:
        raise Unsupported(f"{what}: offset {value!r} is not a number", "CUR-CONV-7") from None


def stale_member(
    ctx: CaseContext, conn: Connection, base: str, partitions: int = 1
) -> tuple[str, str, str, int]:
    """A topic and group where alice joined, then bob: alice's generation is out of date.

    Returns (topic, group, alice's member id, alice's generation)."""
    topic = create_topic(ctx, conn, base, partitions)
    group = ctx.name("g")
    member, generation = join(ctx, conn, topic, group, "alice")
    join(ctx, conn, topic, group, "bob")
    return topic, group, member, generation


def _show(r: Reply) -> str:
    if isinstance(r, Batch):
        return f"a batch of {len(r.messages)} message(s)"
    if isinstance(r, BatchAck):
        return f"a JSON ack with status {r.status}"
    text = getattr(r, "text", None)
    return repr(text) if text is not None else repr(r)
