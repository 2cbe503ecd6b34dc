"""Cursus error replies (SPEC.md, area "errors")."""

from __future__ import annotations

import re

from conformance.protocols.cursus.messages import Batch, Command, ErrorReply
from conformance.suite.case import case, require
from conformance.suite.cursus.group_steps import join
from conformance.suite.cursus.reads import Read
from conformance.suite.cursus.verify import (
    batch,
    create_topic,
    expect_error,
    expect_ok,
    kind_of,
    messages,
    shown,
)
from conformance.suite.shown import show
from conformance.suite.target import CaseContext


def _error_text(
    target: CaseContext, payload: bytes, requirement: str, what: str
) -> Read[ErrorReply]:
    with target.connect() as conn:
        r = expect_error(target, conn, payload, requirement, what)
        require(
            isinstance(r.reply, ErrorReply),
            requirement,
            f"{what}: answered {shown(r)}, expected an ERROR: reply",
            r.at(*kind_of(r.reply)),
        )
        assert isinstance(r.reply, ErrorReply)
        return r.but(r.reply)


@case("cursus/errors/1", "CUR-ERR-1", "CUR-ERR-3")
def test_an_unknown_command_gets_error_prefix_and_description(target: CaseContext) -> None:
    """A hard error reply begins with the exact prefix ERROR: followed by a description.

    CUR-ERR-1: "a hard error reply is text beginning with the exact, upper-case prefix `ERROR:`
    followed by a description."

    CUR-ERR-3: "an unknown command ... is answered with an `ERROR:` reply."
    """
    r = _error_text(target, b"FROBNICATE now", "CUR-ERR-3", "unknown command FROBNICATE")
    require(
        r.reply.text.strip(),
        "CUR-ERR-1",
        f"the reply {shown(r)} has no description after the ERROR: prefix, expected one",
        r.at("word0"),
    )


@case("cursus/errors/2", "CUR-ERR-3")
def test_a_command_with_too_few_fields_is_an_error(target: CaseContext) -> None:
    """A command with the wrong number of fields is answered with ERROR:.

    CUR-ERR-3: "... a command with the wrong number of fields ... is answered with an `ERROR:`
    reply."
    """
    _error_text(
        target, b"CREATE " + target.name("t").encode(), "CUR-ERR-3", "CREATE without a count"
    )


@case("cursus/errors/3", "CUR-ERR-3")
def test_a_non_numeric_partition_count_is_an_error(target: CaseContext) -> None:
    """A malformed field is answered with ERROR:.

    CUR-ERR-3: "... a malformed field is answered with an `ERROR:` reply."
    """
    _error_text(target, f"CREATE {target.name('t')} three".encode(), "CUR-ERR-3", "CREATE t three")


@case("cursus/errors/4", "CUR-ERR-3", "CUR-TEXT-1")
def test_a_double_space_is_an_error(target: CaseContext) -> None:
    """Fields are separated by a single space: two spaces make a malformed command.

    CUR-ERR-3: "... a malformed field is answered with an `ERROR:` reply."

    CUR-TEXT-1: "a text command is a UTF-8 string whose fields are separated by a single space ..."
    """
    _error_text(target, f"CREATE  {target.name('t')} 1".encode(), "CUR-ERR-3", "two spaces")


@case("cursus/errors/5", "CUR-ERR-3", "CUR-TEXT-1")
def test_a_command_that_is_not_utf8_is_an_error(target: CaseContext) -> None:
    """Text commands are UTF-8: invalid UTF-8 is answered with ERROR:.

    CUR-ERR-3: "... a malformed field is answered with an `ERROR:` reply."

    CUR-TEXT-1: "a text command is a UTF-8 string ..."
    """
    _error_text(target, b"LIST \xff\xfe", "CUR-ERR-3", "invalid UTF-8")


@case("cursus/errors/6", "CUR-ERR-3")
def test_an_empty_frame_is_an_error(target: CaseContext) -> None:
    """An empty command is answered with ERROR:.

    CUR-ERR-3: "an unknown command, a command with the wrong number of fields or a malformed field
    is answered with an `ERROR:` reply."
    """
    _error_text(target, b"", "CUR-ERR-3", "an empty frame")


@case("cursus/errors/7", "CUR-ERR-4")
def test_the_connection_stays_usable_after_an_error(target: CaseContext) -> None:
    """After an error reply to a well-framed request, the next request is answered.

    CUR-ERR-4: "after an error reply to a well-framed request, the connection stays open and the
    next request is answered."
    """
    with target.connect() as conn:
        expect_error(target, conn, b"NOPE", "CUR-ERR-4", "unknown command NOPE")
        expect_error(target, conn, b"CREATE", "CUR-ERR-4", "CREATE with no fields")
        expect_ok(target, conn, Command("LIST"), "CUR-ERR-4", "LIST after two errors")


@case("cursus/errors/8", "CUR-CONV-9")
def test_an_error_description_begins_with_a_code(target: CaseContext) -> None:
    """An error description begins with an upper-case code word (convention).

    CUR-CONV-9: "an error description begins with an upper-case code word (`ERROR: UNKNOWN_TOPIC
    ...`)."
    """
    r = _error_text(target, b"FROBNICATE", "CUR-CONV-9", "unknown command")
    require(
        re.match(r"[A-Z][A-Z0-9_]+(\s|$)", r.reply.text),
        "CUR-CONV-9",
        f"description {show(r.reply.text)}, expected an upper-case code word first",
        r.at("word1") if r.reply.text else r.at("word0"),
    )


@case("cursus/errors/9", "CUR-ERR-6")
def test_a_request_that_cannot_be_carried_out_is_an_error(target: CaseContext) -> None:
    """A request that cannot be carried out as the document describes it is an error.

    Here: a topic, partition, group or member that does not exist; an offset below 0.

    CUR-ERR-6: "a request that cannot be carried out as the document describes it (a batch or
    command naming a topic, partition, group, member or generation that does not exist, a partition
    or generation below 0 included; an offset below 0 in CONSUME ...) is answered with an error (an
    `ERROR:` reply, an ack with status ERROR ...), not with success."
    """
    with target.connect() as conn:
        topic = create_topic(target, conn, "nosuch")
        ghost = target.name("ghost")
        refused: list[tuple[Command | Batch, str]] = [
            (Command("CONSUME", (topic, 7, 0)), "CONSUME of partition 7 of a 1-partition topic"),
            (Command("CONSUME", (topic, -1, 0)), "CONSUME of partition -1"),
            (Command("CONSUME", (topic, 0, -1)), "CONSUME at offset -1"),
            (batch(topic, messages(b"x"), partition=7), "a batch for partition 7 of 1"),
            (batch(ghost, messages(b"x")), "a batch for a topic that does not exist"),
            (Command("SYNC_GROUP", (topic, ghost, "m-1", 1)), "SYNC_GROUP of an unknown group"),
        ]
        for req, what in refused:
            expect_error(target, conn, req, "CUR-ERR-6", what)
        group = target.name("g")
        join(target, conn, topic, group, "alice")
        cmd = Command("HEARTBEAT", (topic, group, "alice", ghost, 1))
        expect_error(target, conn, cmd, "CUR-ERR-6", "HEARTBEAT of a member the group lacks")
