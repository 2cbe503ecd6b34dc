"""Shared verifiers and steps of the Cursus cases of revision ``real`` (SPEC.md CUR-R*).

The same shape as verify.py, over the real layouts (real_codec.py): requests are
:class:`~conformance.protocols.cursus.real_messages.RealCommand` (sent in the envelope, as the
official client sends them) or batches in the real layout; a verifier returns a
:class:`~conformance.suite.cursus.reads.Read` or raises a Violation naming the requirement.
Steps blame the requirement they rely on: ``create_topic`` CUR-RTEXT-4, ``produce``
CUR-RACK-1, ``consume_from`` CUR-RTEXT-5, ``join`` CUR-RGROUP-1; ``request`` checks that an
error reply starts with the exact ``ERROR: `` (CUR-RERR-1).
"""

from __future__ import annotations

from collections.abc import Sequence

from conformance.client import Connection
from conformance.protocols.cursus import codec, real_codec
from conformance.protocols.cursus.codec import CursusError
from conformance.protocols.cursus.messages import (
    Batch,
    BatchAck,
    ErrorReply,
    Message,
    OkReply,
    TextReply,
)
from conformance.protocols.cursus.real_codec import RealReply
from conformance.protocols.cursus.real_messages import Keepalive, RealCommand, command
from conformance.suite.case import Unsupported, Violation
from conformance.suite.cursus.reads import Member, Read
from conformance.suite.cursus.verify import reply_payload, shown
from conformance.suite.shown import show_all
from conformance.suite.target import CaseContext

RealRequest = RealCommand | Batch | bytes


def payload_of(req: RealRequest) -> bytes:
    if isinstance(req, bytes):
        return req
    if isinstance(req, Batch):
        return real_codec.encode_batch(req)
    return real_codec.encode_command(req)


def send(conn: Connection, req: RealRequest) -> int:
    return conn.send(codec.frame(payload_of(req)))


def words(reply: RealReply, payload: bytes) -> dict[str, str]:
    """The annotator's word of each ``key=`` of an OK or ERROR line."""
    if not isinstance(reply, OkReply | ErrorReply):
        return {}
    text = payload.decode("utf-8", "surrogateescape")
    return {
        w.partition("=")[0]: f"word{i}" for i, w in enumerate(real_codec.ok_words(text)) if "=" in w
    }


def decode(read: Read[bytes], requirement: str, what: str) -> Read[RealReply]:
    try:
        r = real_codec.decode_reply(read.payload)
    except CursusError as exc:
        raise Violation(
            requirement, f"{what}: the reply does not decode ({exc})", read.evidence
        ) from None
    return Read(r, read.evidence, read.payload, read.log, words(r, read.payload))


def check_error_prefix(read: Read[bytes]) -> None:
    """CUR-RERR-1: a reply that reads as an error starts with the exact ``ERROR: ``."""
    head = read.payload[:16].decode("utf-8", "replace")
    if head.lower().startswith("error") and not head.startswith("ERROR: "):
        raise Violation(
            "CUR-RERR-1",
            f"the error reply begins {head!r}, expected the exact 'ERROR: '",
            read.at("word0"),
        )


def request(
    ctx: CaseContext, conn: Connection, req: RealRequest, requirement: str, what: str
) -> Read[RealReply]:
    send(conn, req)
    read = reply_payload(ctx, conn, requirement, what)
    check_error_prefix(read)
    return decode(read, requirement, what)


def kind_of(r: RealReply) -> tuple[str, ...]:
    if isinstance(r, BatchAck):
        return ("status",)
    if isinstance(r, Batch):
        return ("magic",)
    if isinstance(r, Keepalive):
        return ()
    return ("word0",)


def expect_ok(
    ctx: CaseContext, conn: Connection, req: RealRequest, requirement: str, what: str
) -> Read[RealReply]:
    """Anything but an ``ERROR:`` line (an OK line, an ack, a batch)."""
    read = request(ctx, conn, req, requirement, what)
    r = read.reply
    if isinstance(r, ErrorReply | TextReply) and not (isinstance(r, TextReply) and r.text == "OK"):
        raise Violation(
            requirement, f"{what}: answered {shown(read)}, expected success", read.at(*kind_of(r))
        )
    return read


def expect_error(
    ctx: CaseContext, conn: Connection, req: RealRequest, requirement: str, what: str
) -> Read[ErrorReply]:
    read = request(ctx, conn, req, requirement, what)
    if isinstance(read.reply, ErrorReply):
        return read.but(read.reply)
    raise Violation(
        requirement,
        f"{what}: answered {shown(read)}, expected an 'ERROR:' reply",
        read.at(*kind_of(read.reply)),
    )


def ok_value(read: Read[RealReply], key: str, requirement: str, what: str) -> str:
    r = read.reply
    value = dict(r.fields).get(key) if isinstance(r, OkReply) else None
    if value is None:
        raise Violation(requirement, f"{what}: the reply {shown(read)} has no {key}=", read.at())
    return value


# --------------------------------------------------------------------- steps


def create_topic(ctx: CaseContext, conn: Connection, base: str, partitions: int = 1) -> str:
    """CREATE a fresh topic (CUR-RTEXT-4: the reply names its partitions)."""
    topic = ctx.name(base)
    cmd = command("CREATE", topic=topic, partitions=partitions)
    read = expect_ok(ctx, conn, cmd, "CUR-RTEXT-4", f"CREATE topic={topic}")
    got = ok_value(read, "partitions", "CUR-RTEXT-4", f"CREATE topic={topic}")
    if got != str(partitions):
        raise Violation(
            "CUR-RTEXT-4",
            f"CREATE topic={topic} partitions={partitions} answered partitions={got}",
            read.at("partitions", asked=("partitions",)),
        )
    return topic


def idempotent_topic(ctx: CaseContext, conn: Connection, base: str, requirement: str) -> str:
    """CREATE a fresh one-partition topic with ``idempotent=true`` (FACTS 4.7)."""
    topic = ctx.name(base)
    cmd = command("CREATE", topic=topic, partitions=1, idempotent="true")
    expect_ok(ctx, conn, cmd, requirement, f"CREATE topic={topic} idempotent=true")
    return topic


def messages(
    *payloads: bytes, producer: str = "p", epoch: int = 7, seq: int = 1
) -> tuple[Message, ...]:
    return tuple(
        Message(seq_num=seq + i, producer_id=producer, key=f"k{i}", epoch=epoch, payload=p)
        for i, p in enumerate(payloads)
    )


def batch(
    topic: str,
    msgs: Sequence[Message],
    *,
    partition: int = 0,
    acks: str = "1",
    idempotent: bool = False,
) -> Batch:
    """A batch whose header sequence range is its first and last message's, as the real
    client writes it."""
    seqs = [m.seq_num for m in msgs] or [0]
    return Batch(topic, str(partition), acks, idempotent, seqs[0], seqs[-1], tuple(msgs))


def expect_ack(ctx: CaseContext, conn: Connection, b: Batch | bytes, what: str) -> Read[BatchAck]:
    """One JSON ack with the six fields (CUR-RACK-1)."""
    send(conn, b)
    read = reply_payload(ctx, conn, "CUR-RACK-1", what)
    if read.payload.lstrip()[:1] != b"{":
        raise Violation(
            "CUR-RACK-1",
            f"{what}: the reply {shown(read)} is not a JSON object, expected a JSON ack",
            read.at("word0"),
        )
    try:
        ack = real_codec.decode_ack(read.payload)
    except CursusError as exc:
        raise Violation("CUR-RACK-1", f"{what}: {exc}", read.at()) from None
    if ack.status != "OK":
        raise Violation(
            "CUR-RACK-1", f"{what}: status {ack.status!r}, expected OK", read.at("status")
        )
    return read.but(ack)


def produce(
    ctx: CaseContext, conn: Connection, topic: str, *payloads: bytes, partition: int = 0
) -> Read[BatchAck]:
    b = batch(topic, messages(*payloads), partition=partition)
    return expect_ack(ctx, conn, b, f"produce {len(payloads)} message(s) to {topic}/{partition}")


def consume(topic: str, partition: int, offset: int, **extra: object) -> RealCommand:
    return command(
        "CONSUME", topic=topic, partition=partition, offset=offset, member="reader", **extra
    )


def consume_from(
    ctx: CaseContext,
    conn: Connection,
    topic: str,
    partition: int,
    offset: int,
    requirement: str = "CUR-RTEXT-5",
    **extra: object,
) -> Read[tuple[Message, ...]]:
    """One CONSUME: a batch in the real layout, from ``offset``, consecutive (CUR-RTEXT-5)."""
    what = f"CONSUME topic={topic} partition={partition} offset={offset}"
    read = request(ctx, conn, consume(topic, partition, offset, **extra), requirement, what)
    r = read.reply
    if not isinstance(r, Batch):
        raise Violation(
            requirement, f"{what}: answered {shown(read)}, expected a batch", read.at(*kind_of(r))
        )
    got = [m.offset for m in r.messages]
    want = list(range(offset, offset + len(got)))
    if got != want:
        raise Violation(
            "CUR-RTEXT-5",
            f"{what}: offsets {show_all(got, most=10)}, expected consecutive offsets from {offset}",
            read.at(*(f"message[{i}].offset" for i in range(len(got))), asked=("offset",)),
        )
    return read.but(r.messages)


def join(ctx: CaseContext, conn: Connection, topic: str, group: str, member: str) -> Read[Member]:
    """JOIN_GROUP (CUR-RGROUP-1): the member id and generation of the reply."""
    return member_of(join_reply(ctx, conn, topic, group, member))


def join_reply(
    ctx: CaseContext, conn: Connection, topic: str, group: str, member: str
) -> Read[RealReply]:
    what = f"JOIN_GROUP topic={topic} group={group} member={member}"
    cmd = command("JOIN_GROUP", topic=topic, group=group, member=member)
    return expect_ok(ctx, conn, cmd, "CUR-RGROUP-1", what)


def member_of(read: Read[RealReply]) -> Read[Member]:
    """The member id and generation of a JOIN_GROUP reply (CUR-RGROUP-1)."""
    what = "JOIN_GROUP"
    ident = ok_value(read, "member", "CUR-RGROUP-1", what)
    generation = ok_value(read, "generation", "CUR-RGROUP-1", what)
    if not generation.isdigit():
        raise Violation(
            "CUR-RGROUP-1", f"{what}: generation {generation!r} is no number", read.at("generation")
        )
    return read.but(Member(ident, int(generation)))


def assigned(read: Read[RealReply], what: str) -> list[int]:
    """The ``assignments=`` of a JOIN_GROUP or SYNC_GROUP reply, read as leniently as the
    official client reads it (commas or spaces); its exact form is CUR-RGROUP-2's."""
    text = ok_value(read, "assignments", "CUR-RGROUP-2", what)
    parts = text.strip("[]").replace(",", " ").split()
    if not all(p.isdigit() for p in parts):
        raise Unsupported(f"{what}: assignments {text!r} are not numbers", None, read.at())
    return [int(p) for p in parts]


def fetch_offset(ctx: CaseContext, conn: Connection, topic: str, group: str, p: int) -> Read[int]:
    what = f"FETCH_OFFSET topic={topic} partition={p} group={group}"
    cmd = command("FETCH_OFFSET", topic=topic, partition=p, group=group)
    read = expect_ok(ctx, conn, cmd, "CUR-RTEXT-11", what)
    value = ok_value(read, "offset", "CUR-RTEXT-11", what)
    if not value.lstrip("-").isdigit():
        raise Violation("CUR-RTEXT-11", f"{what}: offset {value!r} is no number", read.at("offset"))
    return read.but(int(value))
