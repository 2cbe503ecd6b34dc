"""Cursus text commands (SPEC.md, area "text")."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from conformance.protocols.cursus.messages import Command, ErrorReply
from conformance.suite.case import case, require
from conformance.suite.cursus.group_steps import fetch_offset, join
from conformance.suite.cursus.verify import (
    batch,
    consume_all,
    consume_from,
    create_topic,
    expect_ack,
    expect_ack_ok,
    expect_error,
    expect_ok,
    kind_of,
    messages,
    produce,
    reply_payload,
    send,
    shown,
)
from conformance.suite.shown import joined, show_all, show_fields
from conformance.suite.target import CaseContext


@case("cursus/text/1", "CUR-TEXT-1")
def test_list_is_served(target: CaseContext) -> None:
    """A text command is a UTF-8 string, fields separated by a single space; LIST is served.

    CUR-TEXT-1: "a text command is a UTF-8 string whose fields are separated by a single space ...
    Every documented command in its documented form is served (not answered as unknown)."
    """
    with target.connect() as conn:
        expect_ok(target, conn, Command("LIST"), "CUR-TEXT-1", "LIST")


@case("cursus/text/2", "CUR-TEXT-1")
def test_every_documented_command_is_served(target: CaseContext) -> None:
    """Every documented command in its documented form is served (not answered as unknown).

    CUR-TEXT-1: "... Every documented command in its documented form is served (not answered as
    unknown)."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "commands")
        group = target.name("g")
        produce(target, conn, topic, b"a", b"b")
        member, generation = join(target, conn, topic, group, "c1").reply
        script = [
            Command("LIST"),
            Command("SUBSCRIBE", (topic, group)),
            Command("SYNC_GROUP", (topic, group, member, generation)),
            Command("HEARTBEAT", (topic, group, "c1", member, generation)),
            Command("COMMIT", (topic, group, 0, 1)),
            Command("BATCH_COMMIT", (topic, group, member, generation, ((0, 2),))),
            Command("CONSUME", (topic, 0, 0)),
            Command("LEAVE_GROUP", (topic, group, "c1")),
            Command("DELETE", (topic,)),
        ]
        for cmd in script:
            expect_ok(target, conn, cmd, "CUR-TEXT-1", cmd.name)
        again = create_topic(target, conn, "stream-cmd")
        send(conn, Command("STREAM", (again, 0, 0)))
        produce(target, target.connect(), again, b"pushed")
        read = reply_payload(target, conn, "CUR-TEXT-1", "STREAM")
        require(
            not read.payload.upper().startswith(b"ERROR"),
            "CUR-TEXT-1",
            f"STREAM got {shown(read)}, expected it served",
            read.at("word0"),
        )


@case("cursus/text/3", "CUR-TEXT-2")
def test_a_payload_starting_0xba_but_not_the_magic_is_a_text_command(target: CaseContext) -> None:
    """Any frame that does not begin with 0xBA7C is a text command, even one starting 0xBA.

    CUR-TEXT-2: "a payload that does not begin with the two bytes 0xBA 0x7C is a text command, never
    a batch, even when its first byte is 0xBA."
    """
    with target.connect() as conn:
        # BA 01 'LIST': first byte of the magic only; as text it is not valid UTF-8.
        send(conn, b"\xba\x01LIST")
        read = reply_payload(target, conn, "CUR-TEXT-2", "payload BA 01 'LIST'")
        require(
            read.payload[:1] != b"{",
            "CUR-TEXT-2",
            f"a payload starting BA 01 was taken for a batch: answered {shown(read, 120)},"
            " expected a text reply",
            read.at("status", "error", asked=("word0",)),
        )


@case("cursus/text/4", "CUR-TEXT-2")
def test_a_one_byte_0xba_payload_is_a_text_command(target: CaseContext) -> None:
    """Any frame that does not begin with 0xBA7C is a text command.

    CUR-TEXT-2: "a payload that does not begin with the two bytes 0xBA 0x7C is a text command, never
    a batch, even when its first byte is 0xBA."
    """
    with target.connect() as conn:
        send(conn, b"\xba")
        read = reply_payload(target, conn, "CUR-TEXT-2", "payload BA")
        require(
            read.payload[:1] != b"{",
            "CUR-TEXT-2",
            f"payload BA was taken for a batch: answered {shown(read)}, expected a text reply",
            read.at("status", "error", asked=("word0",)),
        )


@case("cursus/text/5", "CUR-TEXT-3")
def test_create_makes_exactly_the_partitions_asked_for(target: CaseContext) -> None:
    """CREATE <topic> <partitions> creates exactly that many partitions, numbered from 0.

    CUR-TEXT-3: "`CREATE <topic> <partitions>` creates a topic with exactly that many partitions,
    numbered from 0."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "three", partitions=3)
        for p in range(3):
            produce(target, conn, topic, f"p{p}".encode(), partition=p)
        ack = expect_ack(target, conn, batch(topic, messages(b"x"), partition=3), "partition 3")
        require(
            ack.reply.status != "OK",
            "CUR-TEXT-3",
            "a batch for partition 3 of a 3-partition topic got status OK, expected an error",
            ack.at("status", asked=("partition",)),
        )


@case("cursus/text/6", "CUR-TEXT-4", "CUR-TEXT-5")
def test_consume_starts_at_the_offset_asked_for(target: CaseContext) -> None:
    """CONSUME returns messages starting at the given offset, in order, with no gaps.

    CUR-TEXT-4: "`CONSUME <topic> <partition> <offset>` returns messages of that partition starting
    at the given offset, in offset order, with no gaps."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "offsets")
        produce(target, conn, topic, *(f"m{i}".encode() for i in range(5)))
        got = consume_from(target, conn, topic, 0, 2)
        require(
            got.reply,
            "CUR-TEXT-4",
            "CONSUME from offset 2 of 5 messages returned no message, expected m2 to m4",
            got.at("message_count", asked=("offset",)),
        )
        payloads = [m.payload for m in got.reply]
        want = [b"m2", b"m3", b"m4"][: len(payloads)]
        require(
            payloads == want,
            "CUR-TEXT-5",
            f"payloads from offset 2: {show_all(payloads)}, expected {show_all(want)}",
            got.at(*(f"message[{i}].payload" for i in range(len(payloads)))),
        )


@case("cursus/text/7", "CUR-TEXT-5")
def test_consume_returns_keys_and_payloads_unchanged(target: CaseContext) -> None:
    """The messages CONSUME returns carry the key and payload produced, byte for byte.

    CUR-TEXT-5: "the messages CONSUME returns carry the key and payload that were produced at those
    offsets, byte for byte."
    """
    payloads = [b"", "päyload ✓".encode(), bytes(range(32, 127)), b"x" * 70_000]
    with target.connect() as conn:
        topic = create_topic(target, conn, "bytes")
        msgs = messages(*payloads)
        expect_ack_ok(target, conn, batch(topic, msgs), "produce 4 messages")
        got = consume_all(target, conn, topic)
        require(
            [(m.key, m.payload) for m in got.messages] == [(m.key, m.payload) for m in msgs],
            "CUR-TEXT-5",
            f"read back {_keyed(got.messages)}; expected {_keyed(msgs)}",
            got.at("key") + got.at("payload"),
        )


@case("cursus/text/8", "CUR-CONV-3")
def test_consume_at_the_end_returns_an_empty_batch(target: CaseContext) -> None:
    """CONSUME at the high watermark returns an empty batch (convention).

    CUR-CONV-3: "CONSUME is answered with ... an empty batch when nothing is at or after the offset
    ..."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "end")
        produce(target, conn, topic, b"only")
        got = consume_from(target, conn, topic, 0, 1, requirement="CUR-CONV-3")
        require(
            not got.reply,
            "CUR-CONV-3",
            f"CONSUME at the end returned {len(got.reply)} message(s), expected none",
            got.at("message_count"),
        )


@case("cursus/text/9", "CUR-TEXT-6")
def test_delete_removes_the_topic_and_its_data(target: CaseContext) -> None:
    """DELETE removes the topic and all its data; re-created, it starts empty.

    CUR-TEXT-6: "`DELETE <topic>` removes the topic and all its data: it is gone from LIST, and a
    topic created again under that name starts empty."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "doomed")
        produce(target, conn, topic, b"old")
        expect_ok(target, conn, Command("DELETE", (topic,)), "CUR-TEXT-6", f"DELETE {topic}")
        send(conn, Command("LIST"))
        listing = reply_payload(target, conn, "CUR-TEXT-6", "LIST after DELETE")
        require(
            topic.encode() not in listing.payload,
            "CUR-TEXT-6",
            f"LIST after DELETE {topic} answered {shown(listing)}, expected it without {topic}",
            listing.at("reply"),
        )
        expect_ok(target, conn, Command("CREATE", (topic, 1)), "CUR-TEXT-6", "CREATE again")
        got = consume_from(target, conn, topic, 0, 0, requirement="CUR-TEXT-6")
        require(
            not got.reply,
            "CUR-TEXT-6",
            f"the re-created topic holds {len(got.reply)} message(s), expected none",
            got.at("message_count"),
        )


@case("cursus/text/10", "CUR-TEXT-7")
def test_list_names_every_topic(target: CaseContext) -> None:
    """LIST names every topic on the broker.

    CUR-TEXT-7: "`LIST` names every topic on the broker."
    """
    with target.connect() as conn:
        topics = [create_topic(target, conn, f"listed{i}") for i in range(3)]
        send(conn, Command("LIST"))
        listing = reply_payload(target, conn, "CUR-TEXT-7", "LIST")
        missing = [t for t in topics if t.encode() not in listing.payload]
        require(
            not missing,
            "CUR-TEXT-7",
            f"LIST answered {shown(listing)}: {show_all(missing)} missing, expected all of "
            f"{show_all(topics)}",
            listing.at("reply"),
        )


@case("cursus/text/11", "CUR-TEXT-8")
def test_subscribe_to_an_existing_topic_succeeds(target: CaseContext) -> None:
    """SUBSCRIBE <topic> <group> on an existing topic succeeds.

    CUR-TEXT-8: "`SUBSCRIBE <topic> <group>` on an existing topic succeeds (the reply is not an
    error)."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "sub")
        cmd = Command("SUBSCRIBE", (topic, target.name("g")))
        expect_ok(target, conn, cmd, "CUR-TEXT-8", "SUBSCRIBE")


@case("cursus/text/12", "CUR-TEXT-9")
def test_commit_on_an_existing_partition_succeeds(target: CaseContext) -> None:
    """COMMIT <topic> <group> <partition> <offset> on an existing partition succeeds.

    CUR-TEXT-9: "`COMMIT <topic> <group> <partition> <offset>` on an existing topic and partition
    succeeds (the reply is not an error)."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "commit")
        produce(target, conn, topic, b"a", b"b")
        cmd = Command("COMMIT", (topic, target.name("g"), 0, 1))
        expect_ok(target, conn, cmd, "CUR-TEXT-9", "COMMIT")


@case("cursus/text/13", "CUR-TEXT-10", "CUR-CONV-6", "CUR-CONV-7")
def test_batch_commit_commits_every_partition_named(target: CaseContext) -> None:
    """BATCH_COMMIT from a current member commits every partition it names in one round trip.

    CUR-TEXT-10: "`BATCH_COMMIT <topic> <group> <memberId> <generation> <offsetsPayload>` from a
    current member commits every partition it names in one round trip."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "bc", partitions=2)
        group = target.name("g")
        for p in (0, 1):
            produce(target, conn, topic, b"a", b"b", b"c", partition=p)
        member, gen = join(target, conn, topic, group, "c1").reply
        cmd = Command("BATCH_COMMIT", (topic, group, member, gen, ((0, 2), (1, 3))))
        committed = expect_ok(target, conn, cmd, "CUR-TEXT-10", "BATCH_COMMIT 0:2,1:3")
        for p, want in ((0, 2), (1, 3)):
            got = fetch_offset(target, conn, topic, group, p)
            require(
                got.reply == want,
                "CUR-TEXT-10",
                f"after BATCH_COMMIT 0:2,1:3, FETCH_OFFSET of partition {p} answers"
                f" offset={got.reply}, expected {want}",
                committed.at("word0", asked=("offsetsPayload",)) + got.at("offset"),
            )


@case("cursus/text/14", "CUR-TEXT-11")
def test_consume_from_an_unknown_topic_is_an_error(target: CaseContext) -> None:
    """A command on a topic that does not exist is answered with an error reply.

    CUR-TEXT-11: "a command on a topic that does not exist is answered with an error reply, not with
    success or silence."
    """
    with target.connect() as conn:
        cmd = Command("CONSUME", (target.name("nosuch"), 0, 0))
        expect_error(target, conn, cmd, "CUR-TEXT-11", "CONSUME on an unknown topic")


@case("cursus/text/15", "CUR-TEXT-11")
def test_commit_to_an_unknown_topic_is_an_error(target: CaseContext) -> None:
    """A command on a topic that does not exist is answered with an error reply.

    CUR-TEXT-11: "a command on a topic that does not exist is answered with an error reply, not with
    success or silence."
    """
    with target.connect() as conn:
        cmd = Command("COMMIT", (target.name("nosuch"), target.name("g"), 0, 0))
        r = expect_error(target, conn, cmd, "CUR-TEXT-11", "COMMIT on an unknown topic")
        require(
            isinstance(r.reply, ErrorReply),
            "CUR-TEXT-11",
            f"COMMIT on an unknown topic answered {shown(r)}, expected an ERROR: reply",
            r.at(*kind_of(r.reply)),
        )


@case("cursus/text/16", "CUR-TEXT-11")
def test_joining_a_group_on_an_unknown_topic_is_an_error(target: CaseContext) -> None:
    """A command on a topic that does not exist is answered with an error reply.

    CUR-TEXT-11: "a command on a topic that does not exist is answered with an error reply, not with
    success or silence."
    """
    with target.connect() as conn:
        cmd = Command("JOIN_GROUP", (target.name("nosuch"), target.name("g"), "c1"))
        expect_error(target, conn, cmd, "CUR-TEXT-11", "JOIN_GROUP on an unknown topic")


def _keyed(msgs: Iterable[Any]) -> str:
    """Messages by key and payload, long payloads cut at 20 bytes."""
    return joined(
        (show_fields(20, key=m.key, payload=m.payload) for m in msgs), sep="; ", empty="no message"
    )
