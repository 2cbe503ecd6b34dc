"""Cursus batch acknowledgement (SPEC.md, area "ack")."""

from __future__ import annotations

import re

from conformance.protocols.cursus import codec
from conformance.protocols.cursus.messages import Message
from conformance.suite.case import Violation, case, require
from conformance.suite.cursus.verify import (
    batch,
    consume_from,
    create_topic,
    expect_ack,
    expect_ack_ok,
    messages,
    reply_payload,
    shown,
)
from conformance.suite.shown import show
from conformance.suite.target import CaseContext


@case("cursus/ack/1", "CUR-ACK-1")
def test_an_acks_0_batch_still_gets_a_json_ack(target: CaseContext) -> None:
    """The broker answers every batch with one JSON frame, acks "0" included.

    CUR-ACK-1: "the broker answers every batch with exactly one frame holding a JSON response,
    whatever its acks level (acks "0" included)."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "acks0")
        expect_ack(target, conn, batch(topic, messages(b"fire-and-forget"), acks="0"), "acks=0")


@case("cursus/ack/2", "CUR-ACK-1")
def test_pipelined_batches_get_one_ack_each_in_order(target: CaseContext) -> None:
    """Every batch gets exactly one ack: three pipelined batches, three acks in order.

    CUR-ACK-1: "the broker answers every batch with exactly one frame holding a JSON response ..."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "pipe")
        frames = [
            codec.frame(codec.encode_batch(batch(topic, messages(b"m", seq=i * 10))))
            for i in range(3)
        ]
        conn.send(b"".join(frames), summary="three batches in one write")
        for i in range(3):
            read = reply_payload(target, conn, "CUR-ACK-1", f"ack {i + 1} of 3")
            ack = codec.decode_ack(read.payload) if read.payload[:1] == b"{" else None
            if ack is None:
                raise Violation(
                    "CUR-ACK-1",
                    f"reply {i + 1} of 3 is {shown(read)}, expected a JSON ack",
                    read.evidence,
                )
            require(
                ack.seq_start == i * 10,
                "CUR-ACK-1",
                f"ack {i + 1} of 3 has seq_start {ack.seq_start}, expected {i * 10}"
                f" (batch {i + 1}'s seqStart)",
                read.at("seq_start"),
            )


@case("cursus/ack/3", "CUR-ACK-2")
def test_ok_and_error_acks_carry_all_eight_fields(target: CaseContext) -> None:
    """The JSON response has all eight documented fields, each of its documented type.

    CUR-ACK-2: "the JSON response is an object with all eight documented fields, each of its
    documented type: status, producer_id, leader, error (strings); last_offset, producer_epoch,
    seq_start, seq_end (numbers)."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "fields")
        expect_ack(target, conn, batch(topic, messages(b"ok")), "a good batch")  # checks types
        expect_ack(target, conn, batch(topic, messages(b"bad"), partition=9), "a refused batch")


@case("cursus/ack/4", "CUR-ACK-3")
def test_a_stored_batch_gets_status_ok(target: CaseContext) -> None:
    """status is "OK" when every message of the batch was stored.

    CUR-ACK-3: "status is "OK" when every message of the batch was stored ..."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "status")
        expect_ack_ok(target, conn, batch(topic, messages(b"a", b"b")), "two messages")


@case("cursus/ack/5", "CUR-ACK-4")
def test_last_offset_is_the_highest_offset_assigned(target: CaseContext) -> None:
    """last_offset is the highest offset assigned to the batch.

    CUR-ACK-4: "last_offset is the highest offset assigned to the batch (the offset at which CONSUME
    returns its last message)."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "last")
        first = expect_ack_ok(target, conn, batch(topic, messages(b"a", b"b", b"c")), "3 messages")
        require(
            first.reply.last_offset == 2,
            "CUR-ACK-4",
            f"3 messages on an empty partition: last_offset {first.reply.last_offset}, expected 2",
            first.at("last_offset"),
        )
        second = expect_ack_ok(target, conn, batch(topic, messages(b"d", b"e", seq=3)), "2 more")
        require(
            second.reply.last_offset == 4,
            "CUR-ACK-4",
            f"2 more messages: last_offset {second.reply.last_offset}, expected 4",
            second.at("last_offset"),
        )
        at = consume_from(target, conn, topic, 0, 4)
        require(
            at.reply,
            "CUR-ACK-4",
            "CONSUME at offset 4 returned no message, expected the last one produced ('e')",
            at.at("message_count"),
        )
        require(
            at.reply[0].payload == b"e",
            "CUR-ACK-4",
            f"offset 4 holds payload {show(at.reply[0].payload, 40)}, expected the last message"
            " ('e')",
            at.at("message[0].payload"),
        )


@case("cursus/ack/6", "CUR-ACK-5", "CUR-CONV-8")
def test_producer_id_is_echoed(target: CaseContext) -> None:
    """producer_id echoes the producer identifier the batch carries.

    CUR-ACK-5: "producer_id echoes the producer identifier the batch carries."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "pid")
        msgs = messages(b"a", b"b", producer="producer-42")
        ack = expect_ack_ok(target, conn, batch(topic, msgs), "producer-42")
        require(
            ack.reply.producer_id == "producer-42",
            "CUR-ACK-5",
            f"producer_id {show(ack.reply.producer_id)}, expected 'producer-42'",
            ack.at("producer_id", asked=("message[0].producer_id",)),
        )


@case("cursus/ack/7", "CUR-ACK-6")
def test_seq_start_and_seq_end_are_the_batch_header_range(target: CaseContext) -> None:
    """seq_start and seq_end are the batch's seqStart and seqEnd.

    CUR-ACK-6: "seq_start and seq_end are the batch's seqStart and seqEnd."
    """
    msgs = tuple(Message(seq_num=7 + i, payload=b"s") for i in range(3))
    with target.connect() as conn:
        topic = create_topic(target, conn, "seq")
        b = batch(topic, msgs)
        b = type(b)(b.topic, b.partition, b.acks, False, 100, 102, b.messages)
        ack = expect_ack_ok(target, conn, b, "seqStart 100, seqEnd 102")
        require(
            (ack.reply.seq_start, ack.reply.seq_end) == (100, 102),
            "CUR-ACK-6",
            f"ack seq_start..seq_end {ack.reply.seq_start}..{ack.reply.seq_end}, expected 100..102"
            " (the header's seqStart..seqEnd)",
            ack.at("seq_start", "seq_end", asked=("seq_start", "seq_end")),
        )


@case("cursus/ack/8", "CUR-ACK-7")
def test_error_is_empty_on_ok_and_set_otherwise(target: CaseContext) -> None:
    """error is "" when status is OK, a non-empty description when it is not.

    CUR-ACK-7: "error is the empty string when status is "OK", and a non-empty description when it
    is not."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "err")
        ok = expect_ack_ok(target, conn, batch(topic, messages(b"a")), "a good batch")
        require(
            ok.reply.error == "",
            "CUR-ACK-7",
            f"an OK ack has error {show(ok.reply.error)}, expected ''",
            ok.at("status", "error"),
        )
        bad = expect_ack(target, conn, batch(topic, messages(b"a"), partition=9), "partition 9")
        if bad.reply.status != "OK":
            require(
                bad.reply.error != "",
                "CUR-ACK-7",
                f"a {bad.reply.status} ack has error '', expected a description",
                bad.at("status", "error"),
            )


@case("cursus/ack/9", "CUR-ACK-8", "CUR-CONV-8")
def test_producer_epoch_is_the_epoch_of_a_first_batch(target: CaseContext) -> None:
    """producer_epoch is the tracked epoch: for a producer's first batch, the one it carries.

    CUR-ACK-8: "producer_epoch is the epoch the broker tracks for the producer; for a producer's
    first batch it is the epoch the batch carries."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "epoch")
        msgs = messages(b"a", producer=target.name("prod"), epoch=7)
        ack = expect_ack_ok(target, conn, batch(topic, msgs), "epoch 7")
        require(
            ack.reply.producer_epoch == 7,
            "CUR-ACK-8",
            f"producer_epoch {ack.reply.producer_epoch}, expected 7 (the batch's epoch)",
            ack.at("producer_epoch", asked=("message[0].epoch",)),
        )


@case("cursus/ack/10", "CUR-ACK-9")
def test_leader_is_a_host_and_port(target: CaseContext) -> None:
    """leader names the current leader as a non-empty HOST:PORT.

    CUR-ACK-9: "leader names the current leader as a non-empty HOST:PORT."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "leader")
        ack = expect_ack_ok(target, conn, batch(topic, messages(b"a")), "a batch")
        require(
            re.fullmatch(r"\S+:\d{1,5}", ack.reply.leader),
            "CUR-ACK-9",
            f"leader {show(ack.reply.leader)}, expected HOST:PORT",
            ack.at("leader"),
        )
