"""Mini-Kafka PRODUCE: its reply, offsets per topic from 0, topics created by it, and data
stored byte for byte (SPEC.md, area "produce")."""

from __future__ import annotations

from conformance.protocols.minikafka import codec
from conformance.protocols.minikafka import messages as m
from conformance.suite.case import case, require
from conformance.suite.minikafka.steps import produce, produce_all, read_back, require_data
from conformance.suite.minikafka.verify import call, frame_hex, require_success
from conformance.suite.shown import show
from conformance.suite.target import CaseContext


@case("minikafka/produce/1", "MK-PROD-1")
def test_produce_is_answered_with_type_success_and_offset(target: CaseContext) -> None:
    """PRODUCE is answered 0x04, 0x01 and an int64 offset: 10 payload bytes.

    MK-PROD-1: "a PRODUCE `[0x03][int32 topic length][topic UTF-8][int32 data length][data]` is
    answered `[0x04][0x01][int64 offset]`, a payload of exactly 10 bytes."
    """
    with target.connect() as conn:
        topic = target.name("reply")
        for value in (b"one", b"two"):
            # 0000.. 03 0000000f 'reply-..' 00000003 'one'
            reply = call(target, conn, codec.Produce(topic, value), "MK-PROD-1")
            what = f"PRODUCE {value.decode()!r}"
            require_success(reply, m.PRODUCE_REQUEST, "MK-PROD-1", what)
            require(
                len(reply.payload) == 10,
                "MK-PROD-1",
                f"{what}: answered {frame_hex(reply.payload)}, {len(reply.payload)} payload"
                " bytes, expected 10 ([0x04][0x01][int64 offset])",
                reply.at("type", "success", "offset"),
            )


@case("minikafka/produce/2", "MK-PROD-2")
def test_offsets_of_a_new_topic_are_0_1_2(target: CaseContext) -> None:
    """Three PRODUCEs to a new topic get offsets 0, 1 and 2.

    MK-PROD-2: "the offsets of a topic start at 0 and each PRODUCE to it gets the next one: the
    first PRODUCE to a new topic gets 0, the next 1, and so on."
    """
    with target.connect() as conn:
        topic = target.name("offsets")
        for i in range(3):
            put = produce(target, conn, topic, f"v{i}".encode())
            require(
                put.offset == i,
                "MK-PROD-2",
                f"PRODUCE number {i + 1} to the new topic {show(topic)}: offset {put.offset},"
                f" expected {i}",
                put.reply.at("offset"),
            )


@case("minikafka/produce/3", "MK-PROD-3")
def test_offsets_are_counted_per_topic(target: CaseContext) -> None:
    """PRODUCE to a, a, b, a: b starts where a started, and a goes on as if b were not there
    (offsets 0, 1, 0, 2 from 0).

    MK-PROD-3: "offsets are per topic: a PRODUCE to one topic does not move the offsets of
    another."
    """
    with target.connect() as conn:
        a, b = target.name("a"), target.name("b")
        a0, a1, b0, a2 = (produce(target, conn, topic, b"x") for topic in (a, a, b, a))
        order = f"PRODUCE to {a}, {a}, {b}, {a} in that order"
        # judged against the topics' own offsets: where they start is MK-PROD-2's business
        require(
            b0.offset == a0.offset,
            "MK-PROD-3",
            f"PRODUCE to the new topic {show(b)}: offset {b0.offset}, while the first PRODUCE"
            f" to the new topic {show(a)} got {a0.offset} ({order})",
            a0.reply.at("offset") + b0.reply.at("offset"),
        )
        require(
            a2.offset - a1.offset == a1.offset - a0.offset,
            "MK-PROD-3",
            f"the third PRODUCE to {show(a)}: offset {a2.offset}, expected"
            f" {2 * a1.offset - a0.offset} (its first two got {a0.offset} and {a1.offset}; a"
            f" PRODUCE to {show(b)} came between) ({order})",
            a0.reply.at("offset") + a1.reply.at("offset") + a2.reply.at("offset"),
        )


@case("minikafka/produce/4", "MK-PROD-4")
def test_produce_to_a_new_topic_creates_it(target: CaseContext) -> None:
    """PRODUCE to a topic never seen succeeds, and CONSUME reads the message back from it.

    MK-PROD-4: "a PRODUCE to a topic never seen before creates it and succeeds."
    """
    with target.connect() as conn:
        topic = target.name("created")
        put = produce(target, conn, topic, b"first", "MK-PROD-4")
        got = read_back(target, conn, topic, put.offset, put.offset + 1)
        require_data(got, [put], "MK-PROD-4", f"CONSUME of the topic {show(topic)} PRODUCE created")


DATA = (
    b"\x00\x00\x00\x00",
    b"\xff\xfe\x80 not UTF-8",
    b"",
    b"plain text",
    bytes(range(256)) * 300,
)


@case("minikafka/produce/5", "MK-PROD-5")
def test_data_comes_back_byte_for_byte(target: CaseContext) -> None:
    """Zero bytes, bytes that are not UTF-8, empty data and 76800 bytes are read back as sent.

    MK-PROD-5: "the data of a PRODUCE is stored byte for byte, whatever its bytes (zero bytes,
    bytes that are not UTF-8, empty data), and CONSUME returns it so."
    """
    with target.connect() as conn:
        topic = target.name("bytes")
        puts = produce_all(target, conn, topic, DATA)
        got = read_back(target, conn, topic, 0, len(puts))
        require_data(got, puts, "MK-PROD-5", f"CONSUME {show(topic)}")
