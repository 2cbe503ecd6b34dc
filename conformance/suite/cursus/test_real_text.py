"""Cursus revision real: text commands in the envelope, key=value (SPEC.md, area "rtext")."""

from __future__ import annotations

from conformance.client import Connection
from conformance.protocols.cursus import real_codec
from conformance.protocols.cursus.messages import Batch, ErrorReply, Message, OkReply
from conformance.protocols.cursus.real_messages import command
from conformance.suite.case import Violation, case, require
from conformance.suite.cursus.real_verify import (
    batch,
    consume_from,
    create_topic,
    expect_ack,
    expect_error,
    expect_ok,
    fetch_offset,
    join,
    ok_value,
    produce,
    request,
)
from conformance.suite.cursus.verify import shown
from conformance.suite.shown import show_all
from conformance.suite.target import CaseContext


@case("cursus/rtext/1", "CUR-RTEXT-1")
def test_a_command_in_the_envelope_is_served_whatever_its_topic(target: CaseContext) -> None:
    """LIST in the envelope, with an empty topic and with the topic 'admin', is served.

    CUR-RTEXT-1: "a text command inside the envelope `[u16 topicLen][topic][command]` is served
    whatever the envelope's topic ..."
    """
    with target.connect() as conn:
        for topic in ("", "admin"):
            # 0000 'LIST', then 0005 'admin' 'LIST'
            payload = real_codec.envelope("LIST", topic)
            read = expect_ok(target, conn, payload, "CUR-RTEXT-1", f"LIST in envelope {topic!r}")
            require(
                isinstance(read.reply, OkReply) and "count" in dict(read.reply.fields),
                "CUR-RTEXT-1",
                f"LIST in the envelope {topic!r} answered {shown(read)}, expected 'OK count=...'",
                read.at("word0", asked=("envelope_topic",)),
            )


@case("cursus/rtext/2", "CUR-RTEXT-2")
def test_a_raw_command_is_served(target: CaseContext) -> None:
    """LIST sent raw, without the envelope, is served.

    CUR-RTEXT-2: "a text command sent raw, without the envelope, whose first word is a command name
    is served as if it came in the envelope."
    """
    with target.connect() as conn:
        read = expect_ok(target, conn, b"LIST", "CUR-RTEXT-2", "a raw LIST")
        require(
            isinstance(read.reply, OkReply) and "count" in dict(read.reply.fields),
            "CUR-RTEXT-2",
            f"a raw LIST answered {shown(read)}, expected 'OK count=...'",
            read.at("word0"),
        )


@case("cursus/rtext/3", "CUR-RTEXT-3")
def test_arguments_in_any_order_and_a_lower_case_name(target: CaseContext) -> None:
    """`create partitions=2 topic=T` makes a 2-partition topic.

    CUR-RTEXT-3: "a command's arguments are `key=value` words separated by whitespace, in any
    order, and its name is matched without regard to case ..."
    """
    with target.connect() as conn:
        topic = target.name("order")
        payload = real_codec.envelope(f"create partitions=2 topic={topic}")
        expect_ok(target, conn, payload, "CUR-RTEXT-3", "create partitions=2 topic=... (lower)")
        read = request(
            target,
            conn,
            command("CONSUME", offset=0, member="m", partition=1, topic=topic),
            "CUR-RTEXT-3",
            "CONSUME with its keys in another order, of partition 1",
        )
        require(
            isinstance(read.reply, Batch),
            "CUR-RTEXT-3",
            f"CONSUME of partition 1 answered {shown(read)}, expected a batch",
            read.at("word0", "magic"),
        )


@case("cursus/rtext/4", "CUR-RTEXT-4")
def test_create_makes_exactly_the_partitions_asked_for(target: CaseContext) -> None:
    """CREATE partitions=3 makes partitions 0-2, and CREATE without partitions= makes 4.

    CUR-RTEXT-4: "`CREATE topic=T partitions=N` creates a topic with exactly N partitions,
    numbered from 0, and answers `OK topic=T partitions=N ...`; without `partitions=` the topic
    has 4."
    """
    with target.connect() as conn:
        three = create_topic(target, conn, "three", 3)
        plain = target.name("plain")
        read = expect_ok(target, conn, command("CREATE", topic=plain), "CUR-RTEXT-4", "CREATE")
        got = ok_value(read, "partitions", "CUR-RTEXT-4", f"CREATE topic={plain}")
        require(
            got == "4",
            "CUR-RTEXT-4",
            f"CREATE topic={plain} without partitions= made partitions={got}, expected 4",
            read.at("partitions"),
        )
        for topic, last in ((three, 2), (plain, 3)):
            consume_from(target, conn, topic, last, 0, "CUR-RTEXT-4")
            what = f"CONSUME of partition {last + 1} of {topic}"
            cmd = command("CONSUME", topic=topic, partition=last + 1, offset=0, member="m")
            expect_error(target, conn, cmd, "CUR-RTEXT-4", what)


@case("cursus/rtext/5", "CUR-RTEXT-5")
def test_consume_returns_the_partition_from_the_offset(target: CaseContext) -> None:
    """CONSUME from offset 2 of 5 returns 2..4 with the partition in the header; past the
    end, an empty batch.

    CUR-RTEXT-5: "`CONSUME topic=T partition=P offset=O member=M` answers one frame holding a batch
    in the real layout (CUR-RBATCH-1) whose header names partition P, with the partition's messages
    from O on, in offset order, with no gaps; an empty batch (message count 0) when there is nothing
    at or after O."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "reads", 2)
        produce(target, conn, topic, *(b"m%d" % i for i in range(5)), partition=1)
        page = consume_from(target, conn, topic, 1, 2)
        require(
            [m.payload for m in page.reply] == [b"m2", b"m3", b"m4"],
            "CUR-RTEXT-5",
            f"CONSUME from offset 2 gave {show_all([m.payload for m in page.reply])}, "
            "expected m2, m3, m4",
            page.at(*(f"message[{i}].payload" for i in range(len(page.reply)))),
        )
        cmd = command("CONSUME", topic=topic, partition=1, offset=5, member="m")
        read = request(target, conn, cmd, "CUR-RTEXT-5", "CONSUME at the end")
        r = read.reply
        require(
            isinstance(r, Batch) and not r.messages and r.partition == "1",
            "CUR-RTEXT-5",
            f"CONSUME at the end of partition 1 answered {shown(read)}, expected an empty batch "
            "naming partition 1",
            read.at("magic", "partition", "message_count"),
        )


FULL = (
    Message(0, 11, "prod-a", "key-1", 3, b"\x00\xffpay", "Created", 2, 40, '{"a":1}'),
    Message(0, 12, "prod-a", "", 3, b"", "", 0, 0, ""),
)


@case("cursus/rtext/6", "CUR-RTEXT-6")
def test_consume_returns_every_field_produced(target: CaseContext) -> None:
    """Every field of a message comes back from CONSUME byte for byte.

    CUR-RTEXT-6: "the messages CONSUME returns carry, byte for byte, the key, payload, producer id,
    epoch, sequence number, event type, schema version, aggregate version and metadata that were
    produced at those offsets."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "fields")
        expect_ack(target, conn, batch(topic, FULL), "produce two messages with every field")
        page = consume_from(target, conn, topic, 0, 0)
        fields: tuple[str, ...] = ("seq_num", "producer_id", "key", "epoch", "payload")
        fields += ("event_type",)
        fields += ("schema_version", "aggregate_version", "metadata")
        for i, (sent, got) in enumerate(zip(FULL, page.reply, strict=False)):
            for f in fields:
                require(
                    getattr(got, f) == getattr(sent, f),
                    "CUR-RTEXT-6",
                    f"message {i}: {f} {getattr(got, f)!r}, expected {getattr(sent, f)!r}",
                    page.at(f"message[{i}].{f}"),
                )
        require(
            len(page.reply) == 2,
            "CUR-RTEXT-6",
            f"CONSUME gave {len(page.reply)} message(s), expected the 2 produced",
            page.at("message_count"),
        )


@case("cursus/rtext/7", "CUR-RTEXT-7")
def test_delete_removes_the_topic_and_its_data(target: CaseContext) -> None:
    """DELETE answers deleted=true; LIST no longer names the topic; made again, it is empty.

    CUR-RTEXT-7: "`DELETE topic=T` answers `OK topic=T deleted=true`; the topic is then gone from
    LIST, and a topic created again under that name starts empty."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "gone")
        produce(target, conn, topic, b"old")
        read = expect_ok(target, conn, command("DELETE", topic=topic), "CUR-RTEXT-7", "DELETE")
        require(
            ok_value(read, "deleted", "CUR-RTEXT-7", "DELETE") == "true",
            "CUR-RTEXT-7",
            f"DELETE answered {shown(read)}, expected deleted=true",
            read.at("deleted"),
        )
        listed = expect_ok(target, conn, command("LIST"), "CUR-RTEXT-7", "LIST after DELETE")
        names = ok_value(listed, "topics", "CUR-RTEXT-7", "LIST").split(",")
        require(
            topic not in names,
            "CUR-RTEXT-7",
            f"LIST after DELETE still names {topic}",
            listed.at("topics"),
        )
        expect_ok(
            target, conn, command("CREATE", topic=topic, partitions=1), "CUR-RTEXT-7", "CREATE"
        )
        page = consume_from(target, conn, topic, 0, 0, "CUR-RTEXT-7")
        require(
            not page.reply,
            "CUR-RTEXT-7",
            f"the topic made again holds {len(page.reply)} message(s), expected none",
            page.at("message_count"),
        )


def _owner(target: CaseContext, conn: Connection, base: str) -> tuple[str, str, str, int]:
    """A one-partition topic with 5 messages and a group whose one member owns it."""
    topic = create_topic(target, conn, base)
    produce(target, conn, topic, *(b"m%d" % i for i in range(5)))
    group = target.name("g")
    member = join(target, conn, topic, group, "reader").reply
    return topic, group, member.id, member.generation


@case("cursus/rtext/8", "CUR-RTEXT-8")
def test_consume_of_a_group_starts_at_its_committed_offset(target: CaseContext) -> None:
    """A group that committed offset 3 CONSUMEs from 3 when it asks for 0.

    CUR-RTEXT-8: "CONSUME and STREAM for a group (`group=`, `default-group` when absent) that has
    committed an offset for the partition start at the committed offset, not at the asked one."
    """
    with target.connect() as conn:
        topic, group, member, gen = _owner(target, conn, "resume")
        commit = command(
            "COMMIT_OFFSET",
            topic=topic,
            partition=0,
            group=group,
            offset=3,
            member=member,
            generation=gen,
        )
        expect_ok(target, conn, commit, "CUR-RTEXT-8", "COMMIT_OFFSET offset=3")
        cmd = command("CONSUME", topic=topic, partition=0, offset=0, member=member, group=group)
        page = request(target, conn, cmd, "CUR-RTEXT-8", "CONSUME offset=0 of the group")
        got = [m.offset for m in page.reply.messages] if isinstance(page.reply, Batch) else []
        require(
            got[:1] == [3],
            "CUR-RTEXT-8",
            f"CONSUME offset=0 of a group that committed 3 answered {shown(page)} with offsets "
            f"{show_all(got)}, expected them to start at 3",
            page.at("message[0].offset", asked=("offset", "group")),
        )


@case("cursus/rtext/9", "CUR-RTEXT-9")
def test_list_counts_and_names_every_topic(target: CaseContext) -> None:
    """LIST answers count=N and names every topic once.

    CUR-RTEXT-9: "`LIST` answers `OK count=N topics=a,b,...`: N the number of topics and every topic
    named once, separated by commas."
    """
    with target.connect() as conn:
        made = [create_topic(target, conn, base) for base in ("list-a", "list-b")]
        read = expect_ok(target, conn, command("LIST"), "CUR-RTEXT-9", "LIST")
        names = ok_value(read, "topics", "CUR-RTEXT-9", "LIST").split(",")
        count = ok_value(read, "count", "CUR-RTEXT-9", "LIST")
        require(
            all(names.count(t) == 1 for t in made) and count == str(len(names)),
            "CUR-RTEXT-9",
            f"LIST answered count={count} and {len(names)} name(s), expected each of {made} once "
            "and a count of the names",
            read.at("count", "topics"),
        )


@case("cursus/rtext/10", "CUR-RTEXT-10")
def test_text_that_is_no_command_gets_an_error(target: CaseContext) -> None:
    """An unknown command, raw or in the envelope, and a broken envelope get ERROR:.

    CUR-RTEXT-10: "a text payload that is no known command, raw or in the envelope, is answered
    with an `ERROR:` reply ..."
    """
    cases = (
        (b"PUBLISHED hello", "an unknown raw command"),
        (real_codec.envelope("SUBSCRIBE t g"), "the document's SUBSCRIBE in the envelope"),
        (b"\x00\x09LIST", "an envelope whose topic length runs past the payload"),
    )
    for payload, what in cases:
        with target.connect() as conn:  # the real broker closes after malformed_input
            expect_error(target, conn, payload, "CUR-RTEXT-10", what)


@case("cursus/rtext/11", "CUR-RTEXT-11")
def test_fetch_offset_of_a_group_without_commits_is_zero(target: CaseContext) -> None:
    """FETCH_OFFSET of a group that committed nothing answers offset=0.

    CUR-RTEXT-11: "`FETCH_OFFSET topic=T partition=P group=G` answers `OK offset=N`: the offset the
    group last committed for the partition, `0` when it committed none."
    """
    with target.connect() as conn:
        topic, group, _, _ = _owner(target, conn, "fetch")
        got = fetch_offset(target, conn, topic, group, 0)
        require(
            got.reply == 0,
            "CUR-RTEXT-11",
            f"FETCH_OFFSET before any commit answered offset={got.reply}, expected 0",
            got.at("offset"),
        )


@case("cursus/rtext/12", "CUR-RTEXT-12")
def test_coordinator_and_leaders_name_addresses_that_serve(target: CaseContext) -> None:
    """FIND_COORDINATOR names an address serving the group; METADATA one leader a partition.

    CUR-RTEXT-12: "`FIND_COORDINATOR group=G` answers `OK ... host=H port=P` naming an address that
    serves the group's commands, and `METADATA topic=T` answers `OK topic=T partitions=N
    leaders=a1,...,aN ...` with one address per partition, each one serving that partition ..."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "meta", 2)
        read = expect_ok(target, conn, command("FIND_COORDINATOR", group="g"), "CUR-RTEXT-12", "")
        host = ok_value(read, "host", "CUR-RTEXT-12", "FIND_COORDINATOR")
        port = ok_value(read, "port", "CUR-RTEXT-12", "FIND_COORDINATOR")
        meta = expect_ok(target, conn, command("METADATA", topic=topic), "CUR-RTEXT-12", "METADATA")
        leaders = ok_value(meta, "leaders", "CUR-RTEXT-12", "METADATA").split(",")
        require(
            len(leaders) == 2 and all(a.rpartition(":")[2].isdigit() for a in leaders),
            "CUR-RTEXT-12",
            f"METADATA of a 2-partition topic names leaders {leaders}, expected two host:port",
            meta.at("leaders"),
        )
    for address in {f"{host}:{port}", *leaders}:
        _serves(target, address, read if address == f"{host}:{port}" else meta)


def _serves(target: CaseContext, address: str, named: object) -> None:
    host, _, port = address.rpartition(":")
    if host in ("localhost", "127.0.0.1", target.target.host) and port == str(target.target.port):
        return  # the target itself
    conn = Connection(
        host,
        int(port),
        deframer=target.target.plugin.framing.deframer("reply"),
        log=target.log,
        timeout=target.timeout,
    )
    with conn:
        read = request(target, conn, command("LIST"), "CUR-RTEXT-12", f"LIST at {address}")
        if isinstance(read.reply, ErrorReply):
            raise Violation("CUR-RTEXT-12", f"{address} answered {shown(read)}", read.at())
