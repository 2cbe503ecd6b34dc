"""Cursus revision real: conventions of the reference broker (SPEC.md, area "rconventions").

Each case reports UNSUPPORTED, never FAIL, against a target that does otherwise."""

from __future__ import annotations

from conformance.protocols.cursus.messages import ErrorReply, OkReply
from conformance.protocols.cursus.real_messages import command
from conformance.suite.case import case, unsupported
from conformance.suite.cursus.real_verify import (
    batch,
    consume_from,
    create_topic,
    expect_ok,
    join,
    messages,
    produce,
    request,
)
from conformance.suite.cursus.verify import shown
from conformance.suite.target import CaseContext


@case("cursus/rconventions/1", "CUR-RCONV-1")
def test_a_known_command_not_served_gets_not_implemented(target: CaseContext) -> None:
    """PROTOCOL_INFO is served or answered `ERROR: not_implemented`; the connection serves on.

    CUR-RCONV-1: "a known command name the reference broker does not serve in this revision ... is
    answered `ERROR: not_implemented command=<NAME>` and the connection stays open."
    """
    with target.connect() as conn:
        read = request(target, conn, command("PROTOCOL_INFO"), "CUR-RCONV-1", "PROTOCOL_INFO")
        r = read.reply
        if not (
            isinstance(r, OkReply) or (isinstance(r, ErrorReply) and r.code == "not_implemented")
        ):
            unsupported(f"PROTOCOL_INFO answered {shown(read)}", "CUR-RCONV-1", read.at("word0"))
        expect_ok(target, conn, command("LIST"), "CUR-RCONV-1", "LIST after PROTOCOL_INFO")


@case("cursus/rconventions/2", "CUR-RCONV-2")
def test_the_member_id_is_the_name_and_a_suffix(target: CaseContext) -> None:
    """JOIN_GROUP member=alice gives an id beginning `alice-`.

    CUR-RCONV-2: "the member id JOIN_GROUP gives is the asked member name followed by `-` and a
    suffix ..."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "ids")
        got = join(target, conn, topic, target.name("g"), "alice")
        if not got.reply.id.startswith("alice-") or got.reply.id == "alice-":
            unsupported(f"member id {got.reply.id!r}", "CUR-RCONV-2", got.at("member"))


@case("cursus/rconventions/3", "CUR-RCONV-3")
def test_consume_returns_at_most_batch_messages(target: CaseContext) -> None:
    """CONSUME batch=2 of five messages returns two.

    CUR-RCONV-3: "CONSUME and STREAM return at most `batch=N` messages per batch ..."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "paged")
        produce(target, conn, topic, *(b"p%d" % i for i in range(5)))
        page = consume_from(target, conn, topic, 0, 0, batch=2)
        if len(page.reply) != 2:
            unsupported(f"CONSUME batch=2 gave {len(page.reply)}", "CUR-RCONV-3", page.at())


@case("cursus/rconventions/4", "CUR-RCONV-4")
def test_each_consume_starts_at_its_own_offset(target: CaseContext) -> None:
    """Two CONSUMEs of offset 0 on one connection both start at 0.

    CUR-RCONV-4: "each CONSUME starts at its own offset (or the group's commit, CUR-RTEXT-8): the
    reference broker keeps no per-connection cursor ..."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "cursor")
        produce(target, conn, topic, b"c0", b"c1")
        consume_from(target, conn, topic, 0, 0)
        again = request(
            target,
            conn,
            command("CONSUME", topic=topic, partition=0, offset=0, member="reader"),
            "CUR-RTEXT-5",
            "CONSUME again",
        )
        first = getattr(again.reply, "messages", ())
        if not first or first[0].offset != 0:
            unsupported(
                f"a second CONSUME of offset 0 gave {shown(again)}", "CUR-RCONV-4", again.at()
            )


@case("cursus/rconventions/5", "CUR-RCONV-5")
def test_an_idempotent_batch_is_deduplicated_on_any_topic(target: CaseContext) -> None:
    """A batch with the idempotent flag, sent twice to an ordinary topic, is stored once.

    CUR-RCONV-5: "a batch whose header sets the idempotent flag is deduplicated as on a topic
    created with `idempotent=true` ..."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "flag")
        b = batch(topic, messages(b"d0", b"d1", producer="q", epoch=2), idempotent=True)
        for _ in range(2):
            expect_ok(target, conn, b, "CUR-RCONV-5", "an idempotent batch")
        page = consume_from(target, conn, topic, 0, 0)
        if len(page.reply) != 2:
            unsupported(f"{len(page.reply)} message(s) stored", "CUR-RCONV-5", page.at())
