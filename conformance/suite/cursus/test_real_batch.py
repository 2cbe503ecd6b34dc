"""Cursus revision real: the binary batch in the real layout (SPEC.md, area "rbatch")."""

from __future__ import annotations

from conformance.protocols.cursus import real_codec
from conformance.protocols.cursus.messages import Batch
from conformance.suite.case import case, require
from conformance.suite.cursus.real_verify import (
    batch,
    consume_from,
    create_topic,
    expect_ack,
    expect_error,
    expect_ok,
    messages,
    request,
)
from conformance.suite.cursus.real_verify import (
    send as real_send,
)
from conformance.suite.cursus.verify import reply_payload, shown
from conformance.suite.shown import show_all
from conformance.suite.target import CaseContext


def _nothing_stored(target: CaseContext, conn: object, topic: str, requirement: str) -> None:
    page = consume_from(target, conn, topic, 0, 0, requirement)  # type: ignore[arg-type]
    require(
        not page.reply,
        requirement,
        f"{topic}/0 holds {len(page.reply)} message(s) after a refused batch, expected none",
        page.at("message_count"),
    )


@case("cursus/rbatch/1", "CUR-RBATCH-1")
def test_a_batch_in_the_real_layout_is_stored_in_order(target: CaseContext) -> None:
    """A batch to partition 1 (an i32) at acks -1 (a u8 length) is stored there, in order.

    CUR-RBATCH-1: "a payload that begins 0xBA 0x7C and has a non-empty topic is a batch in the real
    layout: ... **i32 partition**, **u8 acks length** and acks, ... Every message of an
    acknowledged batch is stored, in order, at consecutive offsets."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "layout", 2)
        sent = (b"a", b"bb", b"ccc")
        b = batch(topic, messages(*sent), partition=1, acks="-1")
        expect_ack(target, conn, b, "a batch of 3 to partition 1 at acks -1")
        page = consume_from(target, conn, topic, 1, 0, "CUR-RBATCH-1")
        got = [m.payload for m in page.reply]
        require(
            got == list(sent),
            "CUR-RBATCH-1",
            f"partition 1 holds {show_all(got)}, expected {show_all(list(sent))}",
            page.at(*(f"message[{i}].payload" for i in range(len(got)))),
        )
        _nothing_stored(target, conn, topic, "CUR-RBATCH-1")


@case("cursus/rbatch/2", "CUR-RBATCH-2")
def test_a_batch_that_does_not_fit_gets_an_error_line(target: CaseContext) -> None:
    """A truncated batch, and counts of -1 and 100001, get ERROR: lines; nothing is stored.

    CUR-RBATCH-2: "a batch that does not fit the layout (it ends inside a field, or its message
    count is below 0 or above 100000) is answered with an `ERROR:` text line (the real broker's
    `batch_decode_failed`), not with a JSON ack, nothing of it is stored, and the connection keeps
    serving."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "broken")
        whole = real_codec.encode_batch(batch(topic, messages(b"payload")))
        empty = real_codec.encode_batch(batch(topic, ()))
        for payload, what in (
            (whole[:-6], "a batch cut inside its last message"),
            (empty[:-4] + (-1).to_bytes(4, "big", signed=True), "a message count of -1"),
            (empty[:-4] + (100_001).to_bytes(4, "big"), "a message count of 100001"),
        ):
            expect_error(target, conn, payload, "CUR-RBATCH-2", what)
        _nothing_stored(target, conn, topic, "CUR-RBATCH-2")


@case("cursus/rbatch/3", "CUR-RBATCH-3")
def test_acks_outside_0_1_minus1_all_are_refused(target: CaseContext) -> None:
    """Acks '2' is refused; 'ALL' and '' are acknowledged.

    CUR-RBATCH-3: "a batch whose acks is not `0`, `1`, `-1` or `all` (compared without case; empty
    means 1) is refused with an `ERROR:` line and nothing of it is stored."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "acks")
        bad = batch(topic, messages(b"x"), acks="2")
        expect_error(target, conn, bad, "CUR-RBATCH-3", "a batch at acks '2'")
        _nothing_stored(target, conn, topic, "CUR-RBATCH-3")
        for acks in ("ALL", ""):
            expect_ok(target, conn, batch(topic, messages(b"y"), acks=acks), "CUR-RBATCH-3", acks)


@case("cursus/rbatch/4", "CUR-RBATCH-4")
def test_a_batch_for_an_unknown_topic_or_partition_is_refused(target: CaseContext) -> None:
    """Batches for a missing topic and for partition 5 of a 1-partition topic get ERROR:.

    CUR-RBATCH-4: "a batch for a topic that does not exist, or for a partition the topic does not
    have, is refused with an `ERROR:` line and nothing is stored."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "target")
        missing = batch(target.name("missing"), messages(b"x"))
        expect_error(target, conn, missing, "CUR-RBATCH-4", "a batch for a missing topic")
        wide = batch(topic, messages(b"x"), partition=5)
        expect_error(target, conn, wide, "CUR-RBATCH-4", "a batch for partition 5 of 1")
        _nothing_stored(target, conn, topic, "CUR-RBATCH-4")


@case("cursus/rbatch/5", "CUR-RBATCH-5")
def test_a_batch_without_messages_is_refused(target: CaseContext) -> None:
    """A batch with message count 0 gets ERROR:.

    CUR-RBATCH-5: "a batch with no messages, at acks 1, -1 or all, is refused with an `ERROR:`
    line."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "empty")
        expect_error(target, conn, batch(topic, ()), "CUR-RBATCH-5", "a batch of no message")


@case("cursus/rbatch/6", "CUR-RBATCH-6")
def test_a_batch_at_acks_0_is_answered_ok_and_stored(target: CaseContext) -> None:
    """A batch at acks 0 gets the bare text OK; its messages are stored.

    CUR-RBATCH-6: "a batch at acks `0` is answered with the bare text `OK` (no JSON), and its
    messages are stored."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "fire")
        read = request(
            target, conn, batch(topic, messages(b"f0", b"f1"), acks="0"), "CUR-RBATCH-6", "acks 0"
        )
        require(
            read.payload == b"OK",
            "CUR-RBATCH-6",
            f"a batch at acks 0 was answered {shown(read)}, expected the bare text 'OK'",
            read.at("word0", "status", asked=("acks",)),
        )
        page = consume_from(target, conn, topic, 0, 0, "CUR-RBATCH-6")
        require(
            [m.payload for m in page.reply] == [b"f0", b"f1"],
            "CUR-RBATCH-6",
            f"the acks-0 batch left {len(page.reply)} message(s), expected f0, f1",
            page.at("message_count"),
        )


@case("cursus/rbatch/7", "CUR-RBATCH-7")
def test_a_magic_with_an_empty_topic_is_not_a_batch(target: CaseContext) -> None:
    """0xBA7C followed by a topic length of 0 is read as text and refused.

    CUR-RBATCH-7: "a payload beginning 0xBA 0x7C whose topic length is 0 is not a batch; it is read
    as text and refused with an `ERROR:` reply."
    """
    with target.connect() as conn:
        b = Batch("", "0", "1", False, 1, 1, messages(b"x"))
        real_send(conn, b)  # BA7C 0000 ...: a batch only if its topic is not empty
        read = reply_payload(target, conn, "CUR-RBATCH-7", "a batch with an empty topic")
        require(
            read.payload.startswith(b"ERROR:"),
            "CUR-RBATCH-7",
            f"a batch with an empty topic was answered {shown(read)}, expected an 'ERROR:' reply",
            read.at("word0", "status", asked=("topic.len",)),
        )
