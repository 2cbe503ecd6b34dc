"""Cursus batch layout (SPEC.md, area "batch")."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from conformance.protocols.cursus import codec
from conformance.protocols.cursus.messages import Batch, Message
from conformance.suite.case import case, require
from conformance.suite.cursus.verify import (
    batch,
    consume_all,
    create_topic,
    expect_ack,
    expect_ack_ok,
    expect_close_or_error,
    messages,
    send,
)
from conformance.suite.shown import joined, show, show_all, show_fields
from conformance.suite.target import CaseContext


@case("cursus/batch/1", "CUR-BATCH-1")
def test_a_batch_is_stored_to_the_partition_its_header_names(target: CaseContext) -> None:
    """A 0xBA7C payload is a batch; its messages go to the header's topic and partition.

    CUR-BATCH-1: "a payload beginning with the magic 0xBA7C is decoded as a batch with the
    documented header ... its messages are stored to that topic and partition."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "routed", partitions=2)
        expect_ack_ok(target, conn, batch(topic, messages(b"to-1"), partition="1"), "produce to 1")
        one = consume_all(target, conn, topic, 1)
        zero = consume_all(target, conn, topic, 0)
        require(
            one.payloads() == [b"to-1"],
            "CUR-BATCH-1",
            f"partition 1 holds payloads {show_all(one.payloads())}, expected 'to-1'",
            one.at("payload"),
        )
        require(
            not zero.messages,
            "CUR-BATCH-1",
            f"partition 0 holds {len(zero.messages)} message(s), expected none",
            zero.at(),
        )


FULL = Message(
    offset=0,
    seq_num=0,
    producer_id="producer-Ω",
    key="key-1",
    epoch=3,
    payload=b"payload-1",
    event_type="OrderPlaced",
    schema_version=2,
    aggregate_version=9,
    metadata='{"trace":"abc"}',
)


@case("cursus/batch/2", "CUR-BATCH-2")
def test_every_message_field_is_read_and_every_message_stored(target: CaseContext) -> None:
    """Each message has the documented ten fields; every message of the batch is stored.

    CUR-BATCH-2: "each of the messageCount messages has the documented layout: offset, seqNum,
    producerIdLen+producerId, keyLen+key, epoch, payloadLen (i32)+payload, eventTypeLen+eventType,
    schemaVersion, aggregateVersion, metadataLen+metadata; every message of the batch is stored."
    """
    msgs = tuple(
        dataclasses.replace(FULL, seq_num=i, key=f"key-{i}", payload=f"p{i}".encode())
        for i in range(3)
    )
    with target.connect() as conn:
        topic = create_topic(target, conn, "fields")
        expect_ack_ok(target, conn, batch(topic, msgs), "a batch of 3 full messages")
        got = consume_all(target, conn, topic)
        want = [(m.key, m.payload) for m in msgs]
        require(
            [(m.key, m.payload) for m in got.messages] == want,
            "CUR-BATCH-2",
            f"stored {_keyed(got.messages)}; expected {_keyed(msgs)}",
            got.at("key") + got.at("payload"),
        )


@case("cursus/batch/3", "CUR-BATCH-3")
def test_integers_are_big_endian(target: CaseContext) -> None:
    """All integer fields are big-endian (seqStart and payloadLen read back as sent).

    CUR-BATCH-3: "every integer of a batch is big-endian."
    """
    seq = 0x0102030405060708
    msgs = (Message(seq_num=seq, payload=b"z" * 0x0102),)
    with target.connect() as conn:
        topic = create_topic(target, conn, "endian")
        ack = expect_ack_ok(target, conn, batch(topic, msgs), "seqStart 0x0102030405060708")
        require(
            ack.reply.seq_start == seq,
            "CUR-BATCH-3",
            f"ack seq_start {ack.reply.seq_start:#x}, expected {seq:#x} (the header's seqStart)",
            ack.at("seq_start", asked=("seq_start",)),
        )
        got = consume_all(target, conn, topic)
        require(
            [len(m.payload) for m in got.messages] == [0x0102],
            "CUR-BATCH-3",
            f"a 258-byte payload read back as payloads of "
            f"{show_all(len(m.payload) for m in got.messages)} bytes, expected 258",
            got.at("payload"),
        )


@case("cursus/batch/4", "CUR-BATCH-4")
def test_empty_strings_are_accepted_in_every_string_field(target: CaseContext) -> None:
    """An empty string is 0x0000 with nothing after it, accepted in every string field.

    CUR-BATCH-4: "... the empty string is 0x0000 with nothing after it, and is accepted in every
    string field."
    """
    msgs = (Message(producer_id="", key="", event_type="", metadata="", payload=b"e"),)
    with target.connect() as conn:
        topic = create_topic(target, conn, "empty")
        expect_ack_ok(target, conn, batch(topic, msgs), "a message with every string empty")
        got = consume_all(target, conn, topic)
        require(
            [(m.key, m.payload) for m in got.messages] == [("", b"e")],
            "CUR-BATCH-4",
            f"read back {_keyed(got.messages)}; expected key '' payload 'e'",
            got.at("key") + got.at("payload"),
        )


@case("cursus/batch/5", "CUR-BATCH-5", "CUR-ACK-1")
def test_acks_levels_1_0_and_minus_1_are_accepted(target: CaseContext) -> None:
    """The acks levels "1", "0" and "-1" are all accepted (and each batch gets its ack).

    CUR-BATCH-5: "the acks levels "1", "0" and "-1" are all accepted."

    CUR-ACK-1: "the broker answers every batch with exactly one frame holding a JSON response,
    whatever its acks level ..."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "acks")
        for i, acks in enumerate(("1", "0", "-1")):
            b = batch(topic, messages(f"acks{acks}".encode(), seq=i), acks=acks)
            ack = expect_ack(target, conn, b, f"acks={acks}")
            require(
                ack.reply.status == "OK",
                "CUR-BATCH-5",
                f"acks={acks}: status {ack.reply.status} (error {show(ack.reply.error)}), "
                "expected OK",
                ack.at("status", "error", asked=("acks",)),
            )
        got = consume_all(target, conn, topic)
        require(
            len(got.messages) == 3,
            "CUR-BATCH-5",
            f"{len(got.messages)} message(s) stored, expected 3",
            got.at(),
        )


def _refused_and_not_stored(target: CaseContext, payload: bytes, what: str) -> None:
    with target.connect() as conn:
        topic = create_topic(target, conn, "malformed")
        send(conn, payload)
        expect_close_or_error(target, conn, "CUR-BATCH-6", what)
    with target.connect() as conn:
        got = consume_all(target, conn, topic)
        require(
            not got.messages,
            "CUR-BATCH-6",
            f"{what}: {len(got.messages)} message(s) were stored, expected none",
            got.at(),
        )


def _good(target: CaseContext) -> bytes:
    return codec.encode_batch(Batch(target.name("malformed"), messages=messages(b"m1", b"m2")))


@case("cursus/batch/6", "CUR-BATCH-6")
def test_a_truncated_batch_is_refused(target: CaseContext) -> None:
    """A batch that does not fit the layout (truncated) is refused and nothing stored.

    CUR-BATCH-6: "a batch that does not fit the layout (truncated ...) is refused and nothing of it
    is stored."
    """
    _refused_and_not_stored(target, _good(target)[:-3], "a batch missing its last 3 bytes")


@case("cursus/batch/7", "CUR-BATCH-6")
def test_trailing_bytes_after_a_batch_are_refused(target: CaseContext) -> None:
    """A batch that does not fit the layout (trailing bytes) is refused and nothing stored.

    CUR-BATCH-6: "a batch that does not fit the layout (... trailing bytes ...) is refused and
    nothing of it is stored."
    """
    _refused_and_not_stored(target, _good(target) + b"\x00\x01", "a batch with 2 trailing bytes")


@case("cursus/batch/8", "CUR-BATCH-6")
def test_a_negative_message_count_is_refused(target: CaseContext) -> None:
    """A batch with a negative messageCount is refused and nothing stored.

    CUR-BATCH-6: "a batch that does not fit the layout (... a negative messageCount ...) is refused
    and nothing of it is stored."
    """
    raw = bytearray(codec.encode_batch(Batch(target.name("malformed"))))
    raw[-4:] = (-1).to_bytes(4, "big", signed=True)
    _refused_and_not_stored(target, bytes(raw), "messageCount -1")


@case("cursus/batch/9", "CUR-BATCH-6")
def test_an_idempotent_flag_of_2_is_refused(target: CaseContext) -> None:
    """A batch whose idempotent flag is neither 0 nor 1 is refused and nothing stored.

    CUR-BATCH-6: "a batch that does not fit the layout (... an idempotent flag other than 0 or 1) is
    refused and nothing of it is stored."
    """
    good = _good(target)
    topic_len = int.from_bytes(good[2:4], "big")
    at = 4 + topic_len
    at += 2 + int.from_bytes(good[at : at + 2], "big")  # partition
    at += 2 + int.from_bytes(good[at : at + 2], "big")  # acks
    raw = good[:at] + b"\x02" + good[at + 1 :]
    _refused_and_not_stored(target, raw, "idempotent = 0x02")


@case("cursus/batch/10", "CUR-BATCH-7")
def test_a_resent_idempotent_batch_is_not_stored_twice(target: CaseContext) -> None:
    """With idempotent = 1, a re-sent batch is acknowledged without being stored twice.

    CUR-BATCH-7: "with idempotent = 1, a batch sent again with the same producer, epoch and
    seqStart..seqEnd is acknowledged without being stored a second time."
    """
    msgs = messages(b"once-a", b"once-b", producer="idem-producer", epoch=1, seq=0)
    with target.connect() as conn:
        topic = create_topic(target, conn, "idem")
        b = batch(topic, msgs, idempotent=True)
        first = expect_ack_ok(target, conn, b, "idempotent batch")
        again = expect_ack(target, conn, b, "the same idempotent batch again")
        require(
            again.reply.status == "OK",
            "CUR-BATCH-7",
            f"the re-send got status {again.reply.status} (error {show(again.reply.error)}),"
            " expected OK",
            again.at("status", "error"),
        )
        require(
            again.reply.last_offset == first.reply.last_offset,
            "CUR-BATCH-7",
            f"the re-send's ack has last_offset {again.reply.last_offset}, expected"
            f" {first.reply.last_offset} (the first ack's)",
            first.at("last_offset") + again.at("last_offset"),
        )
        got = consume_all(target, conn, topic)
        require(
            got.payloads() == [b"once-a", b"once-b"],
            "CUR-BATCH-7",
            f"stored payloads {show_all(got.payloads())}, expected 'once-a', 'once-b' once",
            got.at("payload"),
        )


@case("cursus/batch/11", "CUR-BATCH-8")
def test_a_non_decimal_partition_is_refused(target: CaseContext) -> None:
    """A batch whose partition is not a decimal number is refused with an ERROR ack.

    CUR-BATCH-8: "a batch whose partition is not a decimal number ... is refused with an ack of
    status ERROR."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "nondecimal")
        ack = expect_ack(target, conn, batch(topic, messages(b"x"), partition="x1"), "partition x1")
        require(
            ack.reply.status == "ERROR",
            "CUR-BATCH-8",
            f"partition 'x1' got status {ack.reply.status}, expected ERROR",
            ack.at("status", asked=("partition",)),
        )


@case("cursus/batch/12", "CUR-BATCH-8")
def test_a_partition_the_topic_lacks_is_refused(target: CaseContext) -> None:
    """A batch naming a partition the topic does not have is refused with an ERROR ack.

    CUR-BATCH-8: "a batch whose partition ... names a partition the topic does not have, is refused
    with an ack of status ERROR."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "onepart")
        ack = expect_ack(target, conn, batch(topic, messages(b"x"), partition=5), "partition 5")
        require(
            ack.reply.status == "ERROR",
            "CUR-BATCH-8",
            f"partition 5 of a 1-partition topic got status {ack.reply.status}, expected ERROR",
            ack.at("status", asked=("partition",)),
        )


@case("cursus/batch/13", "CUR-BATCH-2")
def test_a_one_mebibyte_payload_is_stored_whole(target: CaseContext) -> None:
    """payloadLen is an int32: a 1 MiB payload is stored and read back whole.

    CUR-BATCH-2: "each of the messageCount messages has the documented layout: ... payloadLen
    (i32)+payload ...; every message of the batch is stored."
    """
    big = bytes(range(256)) * 4096
    with target.connect() as conn:
        topic = create_topic(target, conn, "big")
        expect_ack_ok(target, conn, batch(topic, (Message(payload=big),)), "a 1 MiB payload")
        got = consume_all(target, conn, topic)
        sizes = [len(m.payload) for m in got.messages]
        require(
            sizes == [len(big)],
            "CUR-BATCH-2",
            f"read back payloads of {show_all(sizes)} bytes, expected one of {len(big)}",
            got.at("payload"),
        )
        require(
            got.messages[0].payload == big,
            "CUR-BATCH-2",
            "the 1 MiB payload read back differs from the one produced",
            got.at("payload"),
        )


def _keyed(msgs: Iterable[Message]) -> str:
    """Messages by key and payload: ``key 'key-0' payload 'p0', ...``."""
    return joined(
        (show_fields(key=m.key, payload=m.payload) for m in msgs), sep="; ", empty="no message"
    )
