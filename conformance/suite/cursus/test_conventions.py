"""Reference-broker conventions where the document is silent (SPEC.md, "conventions").

Every requirement here is at level MAY: a target that answers otherwise is
UNSUPPORTED, never FAIL.
"""

from __future__ import annotations

from conformance.protocols.cursus.messages import Batch, Command, ErrorReply, OkReply, TopicList
from conformance.suite.case import case, require
from conformance.suite.cursus.group_steps import fetch_offset, join
from conformance.suite.cursus.verify import (
    batch,
    consume_from,
    create_topic,
    expect_ack_ok,
    expect_ok,
    kind_of,
    messages,
    produce,
    request,
    shown,
)
from conformance.suite.shown import show, show_all
from conformance.suite.target import CaseContext


@case("cursus/conventions/1", "CUR-CONV-1")
def test_success_replies_are_ok_with_fields(target: CaseContext) -> None:
    """A successful text command is answered OK followed by key=value fields.

    CUR-CONV-1: "a successful text command is answered `OK` followed by space-separated `key=value`
    fields."
    """
    with target.connect() as conn:
        topic = target.name("conv")
        r = expect_ok(target, conn, Command("CREATE", (topic, 2)), "CUR-TEXT-3", "CREATE")
        require(
            isinstance(r.reply, OkReply),
            "CUR-CONV-1",
            f"CREATE answered {shown(r)}, expected OK key=value...",
            r.at(*kind_of(r.reply)),
        )


@case("cursus/conventions/2", "CUR-CONV-2")
def test_list_is_a_json_array_of_names(target: CaseContext) -> None:
    """LIST is answered with a JSON array of topic names.

    CUR-CONV-2: "LIST is answered with a JSON array of topic names."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "listed")
        r = request(target, conn, Command("LIST"), "CUR-CONV-2", "LIST")
        require(
            isinstance(r.reply, TopicList) and topic in r.reply.topics,
            "CUR-CONV-2",
            f"LIST answered {shown(r)}, expected a JSON array naming {topic}",
            r.at(*kind_of(r.reply)),
        )


@case("cursus/conventions/3", "CUR-CONV-3")
def test_consume_answers_a_batch_with_stored_offsets(target: CaseContext) -> None:
    """CONSUME is answered with one 0xBA7C batch whose messages carry their offsets.

    CUR-CONV-3: "CONSUME is answered with one batch in the 0xBA7C layout whose messages carry their
    stored offsets ..."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "batchreply")
        produce(target, conn, topic, b"a", b"b")
        r = request(target, conn, Command("CONSUME", (topic, 0, 0)), "CUR-CONV-3", "CONSUME")
        b = r.reply
        require(
            isinstance(b, Batch),
            "CUR-CONV-3",
            f"CONSUME answered {shown(r)}, expected a 0xBA7C batch",
            r.at(*kind_of(b)),
        )
        assert isinstance(b, Batch)
        offsets = [m.offset for m in b.messages]
        require(
            offsets == [0, 1],
            "CUR-CONV-3",
            f"offsets {show_all(offsets)}, expected 0, 1",
            r.at(*(f"message[{i}].offset" for i in range(len(offsets))), "message_count"),
        )


@case("cursus/conventions/4", "CUR-CONV-6", "CUR-TEXT-10")
def test_offsets_payload_is_partition_colon_offset_list(target: CaseContext) -> None:
    """The BATCH_COMMIT offsetsPayload is <partition>:<offset>[,...].

    CUR-CONV-6: "the BATCH_COMMIT offsetsPayload is
    `<partition>:<offset>[,<partition>:<offset>...]`, each a decimal number ..."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "payload")
        produce(target, conn, topic, b"a")
        group = target.name("g")
        c1 = join(target, conn, topic, group, "c1").reply
        cmd = Command("BATCH_COMMIT", (topic, group, c1.id, c1.generation, ((0, 1),)))
        r = request(target, conn, cmd, "CUR-CONV-6", "BATCH_COMMIT 0:1")
        require(
            isinstance(r.reply, OkReply),
            "CUR-CONV-6",
            f"BATCH_COMMIT 0:1 answered {shown(r)}, expected OK",
            r.at(*kind_of(r.reply), asked=("offsetsPayload",)),
        )


@case("cursus/conventions/5", "CUR-CONV-7")
def test_fetch_offset_reads_back_a_commit(target: CaseContext) -> None:
    """FETCH_OFFSET returns OK offset=<n>, or -1 when nothing was committed.

    CUR-CONV-7: "`FETCH_OFFSET <topic> <group> <partition>` returns `OK offset=<n>`, the committed
    offset, or -1 when none was committed."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "fetch")
        produce(target, conn, topic, b"a", b"b", b"c")
        group = target.name("g")
        before = fetch_offset(target, conn, topic, group, 0)
        require(
            before.reply == -1,
            "CUR-CONV-7",
            f"before any commit: offset={before.reply}, expected -1",
            before.at("offset"),
        )
        expect_ok(target, conn, Command("COMMIT", (topic, group, 0, 2)), "CUR-TEXT-9", "COMMIT")
        after = fetch_offset(target, conn, topic, group, 0)
        require(
            after.reply == 2,
            "CUR-CONV-7",
            f"after COMMIT 2: offset={after.reply}, expected 2",
            after.at("offset"),
        )


@case("cursus/conventions/6", "CUR-CONV-8")
def test_producer_id_and_epoch_come_from_the_first_message(target: CaseContext) -> None:
    """The producer id and epoch of a batch are those of its first message.

    CUR-CONV-8: "the producer id and epoch of a batch are those of its first message ..."
    """
    first = messages(b"a", producer="first-producer", epoch=5)
    second = messages(b"b", producer="second-producer", epoch=9, seq=1)
    with target.connect() as conn:
        topic = create_topic(target, conn, "firstmsg")
        ack = expect_ack_ok(target, conn, batch(topic, first + second), "two producers")
        require(
            (ack.reply.producer_id, ack.reply.producer_epoch) == ("first-producer", 5),
            "CUR-CONV-8",
            f"ack names producer_id {show(ack.reply.producer_id)} producer_epoch"
            f" {ack.reply.producer_epoch}, expected 'first-producer' 5 (the first message's)",
            ack.at(
                "producer_id",
                "producer_epoch",
                asked=("message[0].producer_id", "message[0].epoch"),
            ),
        )


@case("cursus/conventions/7", "CUR-CONV-12")
def test_create_of_an_existing_topic_is_refused_and_changes_nothing(target: CaseContext) -> None:
    """CREATE of an existing topic gets ERROR: TOPIC_EXISTS and leaves the topic as it is.

    CUR-CONV-12: "CREATE of a topic that already exists is refused with `ERROR: TOPIC_EXISTS` and
    leaves the topic as it is (its partitions and its messages)."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "exists")
        produce(target, conn, topic, b"kept")
        r = request(target, conn, Command("CREATE", (topic, 2)), "CUR-CONV-12", "CREATE again")
        require(
            isinstance(r.reply, ErrorReply) and r.reply.code == "TOPIC_EXISTS",
            "CUR-CONV-12",
            f"CREATE of an existing topic answered {shown(r)}, expected ERROR: TOPIC_EXISTS",
            r.at("word0", "word1") if isinstance(r.reply, ErrorReply) else r.at(*kind_of(r.reply)),
        )
        kept = consume_from(target, conn, topic, 0, 0)
        payloads = [m.payload for m in kept.reply]
        require(
            payloads == [b"kept"],
            "CUR-CONV-12",
            f"after CREATE again, partition 0 holds payloads {show_all(payloads)}, expected 'kept'",
            kept.at(*(f"message[{i}].payload" for i in range(len(payloads))), "message_count"),
        )
        second = Command("CONSUME", (topic, 1, 0))
        r = request(target, conn, second, "CUR-CONV-12", "CONSUME of partition 1")
        require(
            isinstance(r.reply, ErrorReply),
            "CUR-CONV-12",
            f"CREATE {topic} 2 of an existing 1-partition topic made a partition 1: CONSUME of it"
            f" answered {shown(r)}, expected an error",
            r.at(*kind_of(r.reply), asked=("partition",)),
        )
