"""Mini-Kafka CONSUME: its reply, which messages a batch holds, next offset, empty reads and
reads a revision refuses or answers empty (SPEC.md, area "consume").

Every case reads topics it produced to itself, but MK-CONS-6's, MK-CONS-8's and
MK-CONS-9's reads of a topic nobody produced to (a refusal there blames MK-CONS-6)."""

from __future__ import annotations

from conformance.client import Connection
from conformance.protocols.minikafka import codec
from conformance.protocols.minikafka import messages as m
from conformance.suite.case import Violation, case, require
from conformance.suite.minikafka.steps import (
    consume,
    offsets_of,
    produce,
    produce_all,
    read_back,
    require_data,
)
from conformance.suite.minikafka.verify import Reply, call, require_failure
from conformance.suite.shown import show
from conformance.suite.target import CaseContext

FIVE = [f"m{i}".encode() for i in range(5)]


def some(
    ctx: CaseContext, conn: Connection, topic: str, offset: int, batch: int, requirement: str
) -> tuple[codec.ConsumeOk, Reply]:
    """CONSUME of messages that were acknowledged: at least one comes (MK-CONS-12)."""
    got, reply = consume(ctx, conn, topic, offset, batch, requirement)
    if not got.messages:
        raise Violation(
            "MK-CONS-12",
            f"CONSUME {show(topic)} offset={offset} batch={batch}: no messages, expected the one"
            f" PRODUCE acknowledged at offset {offset}",
            reply.at("messages count", asked=("offset", "batch_size")),
        )
    return got, reply


def empty(
    ctx: CaseContext,
    conn: Connection,
    topic: str,
    offset: int,
    batch: int,
    requirement: str,
    why: str,
) -> tuple[codec.ConsumeOk, Reply]:
    """CONSUME answered with a success reply holding no messages (``requirement`` says so)."""
    what = f"CONSUME {show(topic)} offset={offset} batch={batch} ({why})"
    got, reply = consume(ctx, conn, topic, offset, batch, requirement, what)
    require(
        not got.messages,
        requirement,
        f"{what}: messages at offsets {offsets_of(got)}, expected none",
        reply.at("messages count", asked=("offset", "batch_size")),
    )
    return got, reply


@case("minikafka/consume/1", "MK-CONS-1")
def test_consume_is_answered_with_next_offset_count_and_messages(target: CaseContext) -> None:
    """CONSUME of 'hi' and '' is answered 0x02, 0x01, next offset, count and each message's
    length, offset and data, filling the frame.

    MK-CONS-1: "a CONSUME `[0x01][int32 topic length][topic][int64 offset][int32 batch size]` is
    answered `[0x02][0x01][int64 next offset][int32 count]` then `count` messages, each `[int32
    data length][int64 offset][data]`, filling the frame exactly."
    """
    with target.connect() as conn:
        topic = target.name("layout")
        produce_all(target, conn, topic, [b"hi", b""])
        # 0000.. 01 0000000f 'layout-..' 0000000000000000 00000002
        some(target, conn, topic, 0, 2, "MK-CONS-1")  # decoded whole, or MK-CONS-1 fails


@case("minikafka/consume/2", "MK-CONS-2")
def test_messages_start_at_the_offset_asked_in_order(target: CaseContext) -> None:
    """CONSUME from offset 2 of five messages returns offsets 2, 3, 4 with their data.

    MK-CONS-2: "the messages returned start at the requested offset and follow in offset order
    with consecutive offsets, each holding the data produced at that offset."
    """
    with target.connect() as conn:
        topic = target.name("order")
        puts = produce_all(target, conn, topic, FIVE)
        got, reply = some(target, conn, topic, 2, 3, "MK-CONS-1")
        for i, item in enumerate(got.messages[:3]):
            require(
                item.offset == 2 + i,
                "MK-CONS-2",
                f"CONSUME {show(topic)} offset=2 batch=3: messages at offsets {offsets_of(got)},"
                f" expected 2, 3, 4 (from the offset asked, one after another)",
                reply.at(f"messages[{i}].offset", asked=("offset",)),
            )
            require(
                item.data == puts[2 + i].data,
                "MK-CONS-2",
                f"CONSUME {show(topic)} offset=2 batch=3: the message at offset {item.offset} holds"
                f" {show(item.data)}, expected {show(puts[2 + i].data)} (produced there)",
                puts[2 + i].reply.at("offset") + reply.at(f"messages[{i}].data"),
            )


@case("minikafka/consume/3", "MK-CONS-3")
def test_a_batch_holds_at_most_batch_size_messages(target: CaseContext) -> None:
    """Of five messages, batch sizes 2, 1 and 4 return at most 2, 1 and 4.

    MK-CONS-3: "a CONSUME returns at most batch size messages."
    """
    with target.connect() as conn:
        topic = target.name("atmost")
        produce_all(target, conn, topic, FIVE)
        for offset, batch in ((0, 2), (3, 1), (0, 4)):
            got, reply = consume(target, conn, topic, offset, batch)
            require(
                len(got.messages) <= batch,
                "MK-CONS-3",
                f"CONSUME {show(topic)} offset={offset} batch={batch}: {len(got.messages)} messages"
                f" (offsets {offsets_of(got)}), expected at most {batch}",
                reply.at("messages count", asked=("batch_size",)),
            )


@case("minikafka/consume/4", "MK-CONS-4")
def test_a_batch_holds_every_message_available_up_to_its_size(target: CaseContext) -> None:
    """Of five messages, batch 5 from 0 returns 5, batch 10 from 2 returns 3, batch 2 from 1 two.

    MK-CONS-4: "a CONSUME returns every message available from its offset up to its batch size
    (a batch of N when N or more are there)."
    """
    with target.connect() as conn:
        topic = target.name("every")
        produce_all(target, conn, topic, FIVE)
        for offset, batch in ((0, 5), (2, 10), (1, 2)):
            want = min(batch, len(FIVE) - offset)
            got, reply = consume(target, conn, topic, offset, batch)
            require(
                len(got.messages) >= want,  # more than the batch is MK-CONS-3's business
                "MK-CONS-4",
                f"CONSUME {show(topic)} offset={offset} batch={batch}: {len(got.messages)} messages"
                f" (offsets {offsets_of(got)}), expected {want} ({len(FIVE) - offset} are"
                f" there from offset {offset})",
                reply.at("messages count", asked=("offset", "batch_size")),
            )


@case("minikafka/consume/5", "MK-CONS-5")
def test_next_offset_is_the_last_offset_returned_plus_1(target: CaseContext) -> None:
    """Whatever a batch returns, its next offset is its last message's offset plus 1.

    MK-CONS-5: "when a CONSUME returns messages, its next offset is the offset of the last one
    plus 1."
    """
    with target.connect() as conn:
        topic = target.name("next")
        produce_all(target, conn, topic, FIVE[:3])
        for offset, batch in ((0, 3), (1, 1), (2, 5)):
            got, reply = some(target, conn, topic, offset, batch, "MK-CONS-1")
            # the last in offset order: the order they come in is MK-CONS-2's business
            index, last = max(enumerate(c.offset for c in got.messages), key=lambda p: p[1])
            where = "its last message" if index == len(got.messages) - 1 else "its highest message"
            require(
                got.next_offset == last + 1,
                "MK-CONS-5",
                f"CONSUME {show(topic)} offset={offset} batch={batch}: next_offset"
                f" {got.next_offset}, expected {last + 1} ({where} is at offset {last})",
                reply.at("next_offset", f"messages[{index}].offset"),
            )


@case("minikafka/consume/6", "MK-CONS-6")
def test_consume_of_an_unknown_topic_is_an_empty_success(target: CaseContext) -> None:
    """CONSUME of a topic never produced to is an empty success, twice, and PRODUCE then gets
    the offset of a new topic's first PRODUCE.

    MK-CONS-6: "a CONSUME of a topic never produced to is answered with a success reply holding
    no messages, and does not create the topic."

    That the topic was not created shows only as far as the wire shows it: no message appears
    in it, and its first PRODUCE gets the offset a new topic's first PRODUCE gets.
    """
    with target.connect() as conn:
        # where a new topic's offsets start is MK-PROD-2's business: judged against this one
        control = target.name("new")
        first = produce(target, conn, control, b"first")
        topic = target.name("unknown")
        for offset in (0, 5):
            empty(target, conn, topic, offset, 10, "MK-CONS-6", "a topic never produced to")
        put = produce(target, conn, topic, b"first")
        if put.offset == first.offset:
            return
        other = target.name("other")
        again = produce(target, conn, other, b"first")
        starts = f"the first PRODUCEs to the new topics {show(control)} and {show(other)}"
        require(
            again.offset == first.offset,
            "MK-PROD-2",
            f"{starts} got offsets {first.offset} and {again.offset}, expected 0 each",
            first.reply.at("offset") + again.reply.at("offset"),
        )
        raise Violation(
            "MK-CONS-6",
            f"the first PRODUCE to {show(topic)}, which two CONSUMEs found empty, got offset"
            f" {put.offset}, while {starts} got {first.offset} each",
            first.reply.at("offset") + put.reply.at("offset") + again.reply.at("offset"),
        )


@case("minikafka/consume/7", "MK-CONS-7")
def test_consume_at_or_past_the_end_is_an_empty_success(target: CaseContext) -> None:
    """Of two messages, CONSUME at offset 2 and at offset 1000 is an empty success.

    MK-CONS-7: "a CONSUME at or past the end of a topic's log is answered with a success reply
    holding no messages."
    """
    with target.connect() as conn:
        topic = target.name("end")
        produce_all(target, conn, topic, FIVE[:2])
        empty(target, conn, topic, 2, 5, "MK-CONS-7", "at the end of the log")
        empty(target, conn, topic, 1000, 5, "MK-CONS-7", "past the end of the log")


def empty_reads(ctx: CaseContext, conn: Connection) -> list[tuple[str, int, int, str, str]]:
    """Empty reads every revision answers with an empty success: (topic, offset, batch, the
    requirement that says so, why), on a topic of two messages and on one nobody made."""
    topic = ctx.name("empty")
    produce_all(ctx, conn, topic, FIVE[:2])
    return [
        (topic, 2, 5, "MK-CONS-7", "at the end of the log"),
        (topic, 1000, 5, "MK-CONS-7", "past the end of the log"),
        (ctx.name("nobody"), 7, 5, "MK-CONS-6", "a topic never produced to"),
    ]


@case("minikafka/consume/8", "MK-CONS-8")
def test_an_empty_read_answers_next_offset_1(target: CaseContext) -> None:
    """Empty reads at the end, past it, of an unknown topic, at offset -1 and with batch 0 answer
    next offset 1.

    MK-CONS-8: "a CONSUME that returns no messages answers next offset 1."
    """
    with target.connect() as conn:
        reads = empty_reads(target, conn)
        topic = reads[0][0]
        reads += [
            (topic, -1, 5, "MK-CONS-10", "a negative offset"),
            (topic, 0, 0, "MK-CONS-10", "batch size 0"),
        ]
        for name, offset, batch, requirement, why in reads:
            got, reply = empty(target, conn, name, offset, batch, requirement, why)
            require(
                got.next_offset == 1,
                "MK-CONS-8",
                f"CONSUME {show(name)} offset={offset} batch={batch} ({why}, no messages):"
                f" next_offset {got.next_offset}, expected 1",
                reply.at("next_offset", asked=("offset",)),
            )


@case("minikafka/consume/9", "MK-CONS-9")
def test_an_empty_read_answers_the_offset_asked(target: CaseContext) -> None:
    """In doc, empty reads at the end, past it and of an unknown topic answer the offset asked
    as next offset, as the reference broker does.

    MK-CONS-9: "a CONSUME that returns no messages answers the requested offset as its next
    offset, where the next read should begin."
    """
    with target.connect() as conn:
        for name, offset, batch, requirement, why in empty_reads(target, conn):
            got, reply = empty(target, conn, name, offset, batch, requirement, why)
            require(
                got.next_offset == offset,
                "MK-CONS-9",
                f"CONSUME {show(name)} offset={offset} batch={batch} ({why}, no messages):"
                f" next_offset {got.next_offset}, where the reference broker answers {offset}"
                " (the offset asked)",
                reply.at("next_offset", asked=("offset",)),
            )


OUT_OF_RANGE = ((-1, 5, "a negative offset"), (0, 0, "batch size 0"), (0, -1, "batch size -1"))


@case("minikafka/consume/10", "MK-CONS-10")
def test_a_negative_offset_or_batch_below_1_is_an_empty_success(target: CaseContext) -> None:
    """In real, CONSUME at offset -1, or with batch size 0 or -1, is an empty success.

    MK-CONS-10: "a CONSUME with a negative offset or a batch size of 0 or less is answered with a
    success reply holding no messages."
    """
    with target.connect() as conn:
        topic = target.name("range")
        produce_all(target, conn, topic, FIVE[:2])
        for offset, batch, why in OUT_OF_RANGE:
            empty(target, conn, topic, offset, batch, "MK-CONS-10", why)


@case("minikafka/consume/11", "MK-CONS-11")
def test_a_negative_offset_or_batch_below_1_is_refused(target: CaseContext) -> None:
    """In doc, CONSUME at offset -1, or with batch size 0 or -1, is refused with the error path.

    MK-CONS-11: "a CONSUME with a negative offset or a batch size of 0 or less is refused with
    the error path of its reply."
    """
    topic = target.name("refused")
    with target.connect() as conn:
        produce_all(target, conn, topic, FIVE[:2])
    for offset, batch, why in OUT_OF_RANGE:
        # each on a connection of its own: serving on after an error reply is MK-ERR-2's
        with target.connect() as conn:
            request = codec.Consume(topic, offset, batch)
            what = f"CONSUME {show(topic)} offset={offset} batch={batch} ({why})"
            reply = call(target, conn, request, "MK-CONS-11", what)
            require_failure(reply, m.CONSUME_REQUEST, "MK-CONS-11", what)


@case("minikafka/consume/12", "MK-CONS-12")
def test_a_message_is_readable_once_produce_is_answered(target: CaseContext) -> None:
    """A message is read back at once after its PRODUCE, with no FLUSH, also on a new connection.

    MK-CONS-12: "a message is readable by CONSUME as soon as its PRODUCE has been answered, with
    no FLUSH in between."
    """
    topic = target.name("visible")
    with target.connect() as conn:
        put = produce(target, conn, topic, b"now")
        got = read_back(target, conn, topic, put.offset, put.offset + 1)
        require_data(got, [put], "MK-CONS-12", f"CONSUME {show(topic)} right after PRODUCE")
    with target.connect() as fresh:  # the first is closed: one connection at a time
        got = read_back(target, fresh, topic, put.offset, put.offset + 1)
        require_data(got, [put], "MK-CONS-12", f"CONSUME {show(topic)} on a new connection")
