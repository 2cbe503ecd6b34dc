"""Cursus revision real: the JSON ack (SPEC.md, area "rack")."""

from __future__ import annotations

import json

from conformance.protocols.cursus.messages import Batch, Message
from conformance.suite.case import case, require
from conformance.suite.cursus.real_verify import (
    batch,
    consume_from,
    create_topic,
    expect_ack,
    expect_ok,
    idempotent_topic,
    messages,
    produce,
)
from conformance.suite.target import CaseContext


@case("cursus/rack/1", "CUR-RACK-1")
def test_the_ack_has_the_six_fields_of_their_types(target: CaseContext) -> None:
    """A batch at acks 1 and one at acks all each get one JSON ack with the six fields.

    CUR-RACK-1: "a batch at acks `1`, `-1` or `all` gets exactly one reply, a JSON object with
    `status` "OK", the numbers `last_offset`, `producer_epoch`, `seq_start`, `seq_end` and the
    string `producer_id`."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "six")
        for acks in ("1", "all"):
            expect_ack(target, conn, batch(topic, messages(b"x"), acks=acks), f"acks {acks}")


@case("cursus/rack/2", "CUR-RACK-2")
def test_the_ack_leaves_out_empty_leader_and_error(target: CaseContext) -> None:
    """The ack of a stored batch has neither `leader` nor `error`.

    CUR-RACK-2: "the ack leaves out `leader` and `error` when they are empty: an ack of a stored
    batch on a single broker has neither field."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "omit")
        ack = produce(target, conn, topic, b"x")
        keys = json.loads(ack.payload)
        empty = [k for k in ("leader", "error") if k in keys and keys[k] == ""]
        require(
            not empty,
            "CUR-RACK-2",
            f"the ack carries the empty field(s) {', '.join(empty)}, expected them left out",
            ack.at(*empty),
        )


@case("cursus/rack/3", "CUR-RACK-3")
def test_last_offset_is_the_last_messages_offset(target: CaseContext) -> None:
    """Three messages then two: last_offset 2, then 4.

    CUR-RACK-3: "the ack's `last_offset` is the offset of the batch's last message (the partition's
    next offset minus one)."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "last")
        for payloads, want in (((b"a", b"b", b"c"), 2), ((b"d", b"e"), 4)):
            ack = produce(target, conn, topic, *payloads)
            require(
                ack.reply.last_offset == want,
                "CUR-RACK-3",
                f"last_offset {ack.reply.last_offset}, expected {want}",
                ack.at("last_offset"),
            )


@case("cursus/rack/4", "CUR-RACK-4")
def test_producer_and_sequences_come_from_the_messages(target: CaseContext) -> None:
    """Header seq 100..102, messages seq 5..7 and producers a, a, b: the ack says b, 5..7.

    CUR-RACK-4: "the ack's `producer_id` and `producer_epoch` are those of the batch's last
    message, and `seq_start` and `seq_end` the seqNum of its first and last message (not the
    header's seqStart and seqEnd)."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "seqs")
        msgs = (
            Message(seq_num=5, producer_id="a", epoch=1, payload=b"x"),
            Message(seq_num=6, producer_id="a", epoch=1, payload=b"y"),
            Message(seq_num=7, producer_id="b", epoch=9, payload=b"z"),
        )
        ack = expect_ack(target, conn, Batch(topic, "0", "1", False, 100, 102, msgs), "seq 5..7")
        a = ack.reply
        got = (a.producer_id, a.producer_epoch, a.seq_start, a.seq_end)
        require(
            got == ("b", 9, 5, 7),
            "CUR-RACK-4",
            f"the ack says producer {a.producer_id!r} epoch {a.producer_epoch} seq "
            f"{a.seq_start}..{a.seq_end}, expected 'b' epoch 9 seq 5..7",
            ack.at("producer_id", "producer_epoch", "seq_start", "seq_end"),
        )


@case("cursus/rack/5", "CUR-RACK-5")
def test_a_resent_batch_on_an_idempotent_topic_is_stored_once(target: CaseContext) -> None:
    """On a topic created idempotent=true, the same batch twice is acked twice, stored once.

    CUR-RACK-5: "on a topic created with `idempotent=true`, a batch sent again with the same
    producer id, epoch and seqNums is acknowledged OK and not stored a second time."
    """
    with target.connect() as conn:
        topic = idempotent_topic(target, conn, "dedup", "CUR-RACK-5")
        b = batch(topic, messages(b"i0", b"i1", b"i2", producer="prod", epoch=3, seq=1))
        for attempt in ("first", "second"):
            expect_ok(target, conn, b, "CUR-RACK-5", f"the {attempt} send of seq 1..3")
        page = consume_from(target, conn, topic, 0, 0, "CUR-RACK-5")
        require(
            [m.payload for m in page.reply] == [b"i0", b"i1", b"i2"],
            "CUR-RACK-5",
            f"the topic holds {len(page.reply)} message(s) after the batch was sent twice, "
            "expected 3",
            page.at("message_count"),
        )
