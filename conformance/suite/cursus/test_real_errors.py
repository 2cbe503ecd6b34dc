"""Cursus revision real: `ERROR: <code> ...` replies (SPEC.md, area "rerrors")."""

from __future__ import annotations

from conformance.protocols.cursus.real_messages import command
from conformance.suite.case import case, require
from conformance.suite.cursus.real_verify import (
    create_topic,
    expect_error,
    expect_ok,
    ok_value,
)
from conformance.suite.target import CaseContext


@case("cursus/rerrors/1", "CUR-RERR-1")
def test_refusals_begin_with_error_and_a_code(target: CaseContext) -> None:
    """Three refusals each begin `ERROR: ` and a code word.

    CUR-RERR-1: "every refusal of a text command is a text reply that begins with the exact prefix
    `ERROR: ` followed by a code word; `key=value` details may follow."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "codes")
        for cmd, what in (
            (command("CREATE", partitions=1), "CREATE without topic="),
            (command("JOIN_GROUP", topic=topic, group="g"), "JOIN_GROUP without member="),
            (
                command(
                    "SYNC_GROUP", topic=topic, group=target.name("no"), member="m", generation=1
                ),
                "SYNC_GROUP of an unknown group",
            ),
        ):
            read = expect_error(target, conn, cmd, "CUR-RERR-1", what)
            code = read.reply.code
            require(
                read.payload.startswith(b"ERROR: ") and code and "=" not in code,
                "CUR-RERR-1",
                f"{what}: the reply {read.payload[:60]!r} has no code word after 'ERROR: '",
                read.at("word0", "word1"),
            )


@case("cursus/rerrors/2", "CUR-RERR-2")
def test_the_connection_serves_on_after_an_error(target: CaseContext) -> None:
    """After an ERROR: reply, LIST on the same connection is served.

    CUR-RERR-2: "after an `ERROR:` reply to a well-framed request (other than the refusal of an
    unknown command, CUR-RTEXT-10), the connection stays open and the next request on it is served."
    """
    with target.connect() as conn:
        expect_error(target, conn, command("CREATE", topic="a/b"), "CUR-RERR-2", "a bad name")
        expect_ok(target, conn, command("LIST"), "CUR-RERR-2", "LIST after an ERROR: reply")


@case("cursus/rerrors/3", "CUR-RERR-3")
def test_create_refuses_bad_names_and_partition_counts(target: CaseContext) -> None:
    """Names with '/', '.', 250 bytes; partitions 0 and 'x': each refused, no topic made.

    CUR-RERR-3: "CREATE with a topic name outside 1-249 ASCII letters, digits, `.`, `_`, `-` and `=`
    (or `.` or `..`) is refused with `ERROR: invalid_topic_name ...`, and with a partition count
    that is not a positive integer with `ERROR: invalid_partitions ...`; no topic is made."
    """
    good = target.name("count")
    bad = (
        (command("CREATE", topic=target.name("a/b")), "a name with '/'"),
        (command("CREATE", topic="."), "the name '.'"),
        (command("CREATE", topic="n" * 250), "a 250-byte name"),
        (command("CREATE", topic=good, partitions=0), "partitions=0"),
        (command("CREATE", topic=good, partitions="x"), "partitions=x"),
    )
    with target.connect() as conn:
        for cmd, what in bad:
            expect_error(target, conn, cmd, "CUR-RERR-3", f"CREATE with {what}")
        listed = expect_ok(target, conn, command("LIST"), "CUR-RERR-3", "LIST")
        names = ok_value(listed, "topics", "CUR-RERR-3", "LIST").split(",")
        require(
            good not in names and target.name("a/b") not in names,
            "CUR-RERR-3",
            "a refused CREATE made a topic: LIST names it",
            listed.at("topics"),
        )


@case("cursus/rerrors/4", "CUR-RERR-4")
def test_a_command_without_a_key_it_needs_is_refused(target: CaseContext) -> None:
    """CONSUME without member, STREAM without group, HEARTBEAT without group: ERROR:.

    CUR-RERR-4: "a command without a key it needs, or with a number key that is not a number of
    its kind, is refused with an `ERROR:` reply (CONSUME without topic, partition, offset or member;
    STREAM without topic, partition or group; a group command without its group or member; ..."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "keys")
        for cmd, what in (
            (command("CONSUME", topic=topic, partition=0, offset=0), "CONSUME without member="),
            (command("STREAM", topic=topic, partition=0), "STREAM without group="),
            (
                command("HEARTBEAT", topic=topic, member="m", generation=1),
                "HEARTBEAT without group=",
            ),
        ):
            expect_error(target, conn, cmd, "CUR-RERR-4", what)


@case("cursus/rerrors/5", "CUR-RERR-5")
def test_reads_of_unknown_topics_and_partitions_are_refused(target: CaseContext) -> None:
    """CONSUME of a missing topic and of partition 3 of 1, STREAM of a missing topic: ERROR:.

    CUR-RERR-5: "a command on a topic that does not exist (CONSUME, STREAM, DELETE, METADATA, the
    first JOIN_GROUP of a group), and CONSUME or STREAM of a partition the topic does not have, is
    answered with an `ERROR:` reply."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "reads")
        missing = target.name("missing")
        for cmd, what in (
            (
                command("CONSUME", topic=missing, partition=0, offset=0, member="m"),
                "a missing topic",
            ),
            (
                command("CONSUME", topic=topic, partition=3, offset=0, member="m"),
                "partition 3 of 1",
            ),
            (command("STREAM", topic=missing, partition=0, group="g"), "STREAM of a missing topic"),
        ):
            expect_error(target, conn, cmd, "CUR-RERR-5", what)
