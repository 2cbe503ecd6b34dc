"""Group steps of the Cursus cases: JOIN_GROUP, SYNC_GROUP, FETCH_OFFSET and a stale member.

Each returns a :class:`~conformance.suite.cursus.reads.Read`, the value with the evidence of
the exchange it came in, and blames the requirement it relies on (CUR-GROUP-1, CUR-CONV-4)."""

from __future__ import annotations

from conformance.client import Connection
from conformance.protocols.cursus.messages import (
    Command,
    OkReply,
    Reply,
)
from conformance.suite.case import Unsupported
from conformance.suite.cursus.reads import Member, Read
from conformance.suite.cursus.verify import create_topic, expect_ok, request, shown
from conformance.suite.target import CaseContext


def ok_field(read: Read[Reply], key: str, convention: str, what: str) -> Read[str]:
    """The value of ``key=`` in an ``OK`` reply; a reply without it is UNSUPPORTED."""
    r = read.reply
    value = r.get(key) if isinstance(r, OkReply) else None
    if value is None:
        raise Unsupported(
            f"{what}: the reply {shown(read)} has no {key}=", convention, read.evidence
        )
    return read.but(value)


def join(ctx: CaseContext, conn: Connection, topic: str, group: str, consumer: str) -> Read[Member]:
    """JOIN_GROUP (CUR-GROUP-1); the member id and generation from the reply (CUR-CONV-4)."""
    what = f"JOIN_GROUP {topic} {group} {consumer}"
    read = expect_ok(
        ctx, conn, Command("JOIN_GROUP", (topic, group, consumer)), "CUR-GROUP-1", what
    )
    member = ok_field(read, "member", "CUR-CONV-4", what).reply
    generation = ok_field(read, "generation", "CUR-CONV-4", what).reply
    if not generation.isdigit():
        raise Unsupported(
            f"{what}: generation {generation!r} is not a number",
            "CUR-CONV-4",
            read.at("generation"),
        )
    return read.but(Member(member, int(generation)))


def sync(
    ctx: CaseContext,
    conn: Connection,
    topic: str,
    group: str,
    member: str,
    generation: int,
    requirement: str = "CUR-GROUP-2",
) -> Read[list[int]]:
    """SYNC_GROUP; the assigned partitions (CUR-CONV-5)."""
    what = f"SYNC_GROUP {topic} {group} {member} {generation}"
    read = expect_ok(
        ctx, conn, Command("SYNC_GROUP", (topic, group, member, generation)), requirement, what
    )
    text = ok_field(read, "assignment", "CUR-CONV-5", what).reply
    try:
        return read.but([int(p) for p in text.split(",") if p])
    except ValueError:
        raise Unsupported(
            f"{what}: assignment {text!r} is not p,p,...", "CUR-CONV-5", read.at("assignment")
        ) from None


def fetch_offset(
    ctx: CaseContext, conn: Connection, topic: str, group: str, partition: int
) -> Read[int]:
    """FETCH_OFFSET (convention CUR-CONV-7): the committed offset, -1 when none."""
    what = f"FETCH_OFFSET {topic} {group} {partition}"
    cmd = Command("FETCH_OFFSET", (topic, group, partition))
    read = request(ctx, conn, cmd, "CUR-CONV-7", what)
    value = ok_field(read, "offset", "CUR-CONV-7", what).reply
    try:
        return read.but(int(value))
    except ValueError:
        raise Unsupported(
            f"{what}: offset {value!r} is not a number", "CUR-CONV-7", read.at("offset")
        ) from None


def stale_member(
    ctx: CaseContext, conn: Connection, base: str, partitions: int = 1
) -> tuple[str, str, Member]:
    """A topic and group where alice joined, then bob: alice's generation is out of date.

    Returns (topic, group, alice's member id and generation)."""
    topic = create_topic(ctx, conn, base, partitions)
    group = ctx.name("g")
    alice = join(ctx, conn, topic, group, "alice").reply
    join(ctx, conn, topic, group, "bob")
    return topic, group, alice
