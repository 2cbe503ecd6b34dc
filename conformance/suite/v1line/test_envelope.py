"""V1 line envelope: request and reply lines, unknown commands, arg errors (SPEC.md, area
"envelope"; lines that do not parse, and the connection after them, are
test_parse_errors.py's)."""

from __future__ import annotations

from conformance.protocols.v1line.errors import (
    BAD_REQUEST,
    ERROR_CODES,
    UNKNOWN_COMMAND,
)
from conformance.suite.case import case, require
from conformance.suite.shown import show
from conformance.suite.target import CaseContext
from conformance.suite.v1line.acks import follow
from conformance.suite.v1line.steps import (
    consume,
    join,
    produce,
    replicate,
    wait_read,
)
from conformance.suite.v1line.verify import (
    expect_error,
    expect_ok,
    expect_parse_error,
    listed,
    lone_parse_error,
    next_cid,
    read,
    send,
    send_line,
    still_served,
)


@case("v1line/envelope/1", "V1L-ENV-1")
def test_requests_in_one_write_get_one_reply_each_in_order(target: CaseContext) -> None:
    """Three requests sent in one write get three replies, in request order.

    V1L-ENV-1: "the broker answers every request with exactly one reply line, in request
    order, also when several requests arrive in one write."
    """
    with target.connect() as conn:
        topic = target.name("pipe")
        cids = [next_cid() for _ in range(3)]
        lines = [
            f"V1|{cids[0]}|OFFSET|{target.name('g')} {topic} 0\n",
            f"V1|{cids[1]}|PRODUCE|{topic} k:v\n",
            f"V1|{cids[2]}|CONSUME|{topic} 0 0\n",
        ]
        send_line(conn, "".join(lines).encode(), "three requests in one write")
        for i, cid in enumerate(cids):
            reply = read(target, conn, "V1L-ENV-1", f"reply {i + 1} of 3")
            require(
                reply.cid == cid,
                "V1L-ENV-1",
                f"reply {i + 1} of 3 is {reply.shown()}, correlation id {show(reply.cid)},"
                f" expected {show(cid)} (request {i + 1}'s)",
                reply.at("correlation_id"),
            )
        still_served(target, conn, "V1L-ENV-1", "OFFSET after the three replies")


@case("v1line/envelope/20", "V1L-ENV-1")
def test_a_reply_that_waits_for_acks_all_holds_back_the_next_one(target: CaseContext) -> None:
    """A CONSUME sent right after a PRODUCE acks=all is answered after it, while the followers
    report.

    V1L-ENV-1: "the broker answers every request with exactly one reply line, in request order,
    also when several requests arrive in one write."
    """
    with target.connect() as conn, target.connect() as other:
        topic = target.name("order")
        seed = produce(target, conn, topic, "k", "seed", "V1L-ENV-1")
        waiting, after = next_cid(), next_cid()
        lines = f"V1|{waiting}|PRODUCE|{topic} k:v acks=all\nV1|{after}|CONSUME|{topic} 0 0\n"
        send_line(conn, lines.encode(), "PRODUCE acks=all and CONSUME in one write")
        # whether the acks=all succeeds is not this case's business: its reply comes first
        follow(target, conn, other, topic, seed.partition, seed.offset + 1, "V1L-ENV-1")
        for i, cid in enumerate((waiting, after)):
            what = ("the PRODUCE acks=all", "the CONSUME")[i]
            reply = read(target, conn, "V1L-ENV-1", what, timeout=wait_read(target, 0.0))
            require(
                reply.cid == cid,
                "V1L-ENV-1",
                f"reply {i + 1} of 2 is {reply.shown()}, correlation id {show(reply.cid)},"
                f" expected {show(cid)} ({what}, request {i + 1})",
                reply.at("correlation_id"),
            )


@case("v1line/envelope/2", "V1L-ENV-2")
def test_every_reply_ends_in_a_newline(target: CaseContext) -> None:
    """A success, an error and a parse error each come back as a line ended by a newline.

    V1L-ENV-2: "every reply line ends in `\\n`."
    """
    with target.connect() as conn:
        topic = target.name("newline")
        # the client reads lines: a reply without its "\n" never arrives
        expect_ok(target, conn, "PRODUCE", f"{topic} k:v", "V1L-ENV-2", "PRODUCE")
        expect_error(target, conn, "PRODUCE", f"{topic} novalue", None, "V1L-ENV-2", "PRODUCE")
        still_served(target, conn, "V1L-ENV-2", "OFFSET")
        # last: whether the connection stays open after a parse error is V1L-ENV-12's
        expect_parse_error(target, conn, b"V1|5\n", "V1L-ENV-2", "the line 'V1|5'")


@case("v1line/envelope/3", "V1L-ENV-3")
def test_a_success_echoes_a_non_numeric_correlation_id(target: CaseContext) -> None:
    """A success reply is V1|<cid>|OK|<payload> with the request's non-numeric correlation id.

    V1L-ENV-3: "a success reply is `V1|<cid>|OK` or `V1|<cid>|OK|<payload>`, where `<cid>` is
    the request's correlation id byte for byte (it need not be numeric; in `real`, as trimmed
    by V1L-ENV-18)."
    """
    with target.connect() as conn:
        topic = target.name("cid")
        for cid in ("req-7a", "x"):
            send(conn, "PRODUCE", f"{topic} k:v", cid=cid)
            reply = read(target, conn, "V1L-ENV-3", f"PRODUCE with correlation id {cid}")
            require(
                reply.ok,
                "V1L-ENV-3",
                f"PRODUCE with correlation id {show(cid)}: answered {reply.shown()}, expected OK",
                reply.at("status", "code"),
            )
            require(
                reply.cid == cid,
                "V1L-ENV-3",
                f"PRODUCE with correlation id {show(cid)}: answered {reply.shown()}, correlation"
                f" id {show(reply.cid)}, expected {show(cid)}",
                reply.at("correlation_id", asked=("correlation_id",)),
            )


@case("v1line/envelope/4", "V1L-ENV-4")
def test_error_replies_carry_one_of_the_five_codes(target: CaseContext) -> None:
    """Every error reply is V1|<cid>|ERR|<code>|<message> with one of the five codes.

    V1L-ENV-4: "an error reply is `V1|<cid>|ERR|<code>|<message>` with code one of BAD_REQUEST,
    UNKNOWN_COMMAND, REPLICATION_TIMEOUT, NOT_LEADER, GENERATION_MISMATCH."
    """
    topic = target.name("codes")
    with target.connect() as conn:
        asks = [
            ("PRODUCE", f"{topic} novalue"),
            ("NO_SUCH_COMMAND", ""),
            ("SYNC", f"{target.name('g')} {topic} nobody 1"),
            ("CONSUME", f"{topic} x 0"),
        ]
        for command, args in asks:
            reply = expect_error(
                target, conn, command, args, None, "V1L-ENV-4", f"{command} {args}".strip()
            )
            require(
                reply.code in ERROR_CODES,
                "V1L-ENV-4",
                f"{command} {args}: answered {reply.shown()}, error code {reply.code}, expected"
                f" one of {', '.join(ERROR_CODES)}",
                reply.at("code"),
            )


@case("v1line/envelope/14", "V1L-ENV-14")
def test_an_unknown_command_is_unknown_command_with_its_correlation_id(
    target: CaseContext,
) -> None:
    """V1|<cid>|FETCH_ALL| is answered UNKNOWN_COMMAND with its correlation id; the connection
    stays open.

    V1L-ENV-14: "a well-formed envelope naming a command the broker does not have is answered
    `V1|<cid>|ERR|UNKNOWN_COMMAND|<message>` with the request's correlation id, and the
    connection stays open."
    """
    with target.connect() as conn:
        for command, args in (("FETCH_ALL", ""), ("DELETE_TOPIC", target.name("t"))):
            what = f"{command} {args}".strip()
            expect_error(target, conn, command, args, UNKNOWN_COMMAND, "V1L-ENV-14", what)
            still_served(target, conn, "V1L-ENV-14", f"OFFSET after {command}")


@case("v1line/envelope/15", "V1L-ENV-15")
def test_a_wrong_arg_count_is_bad_request_with_its_correlation_id(target: CaseContext) -> None:
    """A command with too few or too many args is answered BAD_REQUEST with its correlation id.

    V1L-ENV-15: "a command with the wrong number of args is answered BAD_REQUEST with the
    request's correlation id (not 0)."
    """
    topic, group = target.name("count"), target.name("g")
    with target.connect() as conn:
        # the topic, the group and its member exist, so the count is all that is wrong
        put = produce(target, conn, topic, "k", "v", "V1L-PROD-1")
        gen = join(target, conn, group, topic, "c", "V1L-GRP-1").generation
        where = put.partition
        for command, args in (
            ("PRODUCE", topic),
            ("CONSUME", f"{topic} {where}"),
            ("CONSUME", f"{topic} {where} 0 0"),
            ("JOIN", f"{group} {topic}"),
            ("SYNC", f"{group} {topic} c"),
            ("HEARTBEAT", f"{group} {topic} c {gen} 1"),
            ("LEAVE", group),
            ("COMMIT", f"{group} {topic} c {gen} {where}"),
            ("OFFSET", f"{group} {topic}"),
            ("REPLICA_FETCH", f"{topic} {where} 1"),
            ("SET_PARTITION_ROLE", f"{topic} {where}"),
        ):
            expect_error(
                target, conn, command, args, BAD_REQUEST, "V1L-ENV-15", f"{command} {args}"
            )


@case("v1line/envelope/16", "V1L-ENV-16")
def test_a_numeric_field_that_is_not_an_integer_is_bad_request(target: CaseContext) -> None:
    """'abc', '1.5' and 'x1' in a numeric field of each command are answered BAD_REQUEST.

    V1L-ENV-16: "a numeric field of CONSUME, SYNC, HEARTBEAT, LEAVE, COMMIT, OFFSET or
    REPLICA_FETCH that is not an integer (`abc`, `1.5`, `x1`) is answered BAD_REQUEST with the
    request's correlation id."
    """
    topic, group = target.name("num"), target.name("g")
    with target.connect() as conn:
        # the topic, the group and its member exist, so the bad number is all that is wrong
        put = produce(target, conn, topic, "k", "v", "V1L-PROD-1")
        gen = join(target, conn, group, topic, "c", "V1L-GRP-1").generation
        where, offset = put.partition, put.offset
        for command, args in (
            ("CONSUME", f"{topic} abc {offset}"),
            ("CONSUME", f"{topic} {where} 1.5"),
            ("SYNC", f"{group} {topic} c x1"),
            ("HEARTBEAT", f"{group} {topic} c 1.5"),
            ("LEAVE", f"{group} {topic} c abc"),
            ("COMMIT", f"{group} {topic} c {gen} x1 0"),
            ("COMMIT", f"{group} {topic} c {gen} {where} 1.5"),
            ("OFFSET", f"{group} {topic} abc"),
            ("REPLICA_FETCH", f"{topic} {where} x1 {offset}"),
            ("REPLICA_FETCH", f"{topic} {where} 1 abc"),
        ):
            expect_error(
                target, conn, command, args, BAD_REQUEST, "V1L-ENV-16", f"{command} {args}"
            )


@case("v1line/envelope/17", "V1L-ENV-17")
def test_a_newline_ends_a_request_wherever_it_is(target: CaseContext) -> None:
    """A newline inside a PRODUCE's value ends it: the rest is the next request.

    V1L-ENV-17: "`\\n` ends a request wherever it appears: bytes after it are parsed as the next
    request, so no key or value can carry a newline."
    """
    with target.connect() as conn:
        topic = target.name("nl")
        first, second = next_cid(), next_cid()
        line = f"V1|{first}|PRODUCE|{topic} k:head\nV1|{second}|CONSUME|{topic} 0 0\n"
        send_line(conn, line.encode(), "a PRODUCE whose value holds a newline")
        one = read(target, conn, "V1L-ENV-17", "the PRODUCE before the newline", command="PRODUCE")
        require(
            one.ok and one.cid == first,
            "V1L-ENV-17",
            f"the PRODUCE ended by the newline: answered {one.shown()}, expected"
            f" V1|{first}|OK|... (a PRODUCE of the value 'head')",
            one.at("correlation_id", "status"),
        )
        two = read(target, conn, "V1L-ENV-17", "the CONSUME after the newline")
        require(
            two.ok and two.cid == second,
            "V1L-ENV-17",
            f"the bytes after the newline: answered {two.shown()}, expected V1|{second}|OK|..."
            " (they are the next request, a CONSUME)",
            two.at("correlation_id", "status"),
        )
        partition, offset = one.number("partition"), one.number("offset")
        replicate(target, conn, topic, partition, offset, "V1L-ENV-17")
        got = consume(target, conn, topic, partition, offset, "V1L-ENV-17")
        items = got.messages()
        require(
            items[:1] == [(offset, "head")],
            "V1L-ENV-17",
            f"CONSUME {topic} {partition} {offset}: messages {listed(items)},"
            f" expected '{offset}:head' first (the value ends at the newline)",
            got.at("messages"),
        )


@case("v1line/envelope/18", "V1L-ENV-18")
def test_the_real_broker_trims_sections_and_reads_args_loosely(target: CaseContext) -> None:
    """Spaces around sections, a lower-case command, a '\\r' before the newline, runs of
    whitespace between args and a '|' inside the args are all read as the real broker does.

    V1L-ENV-18: "the envelope's fourth section runs to the end of the line (a `|` inside the args
    is kept); sections are trimmed of surrounding whitespace, the command name is matched
    case-insensitively, args are split on runs of whitespace and a `\\r` before `\\n` is ignored."
    """
    with target.connect() as conn:
        topic = target.name("loose")
        cid = next_cid()
        loose = f" V1 | {cid} | offset | {topic}  {topic}\t0 "
        send_line(conn, f"{loose}\r\n".encode(), "a loosely written OFFSET")
        reply = read(target, conn, "V1L-ENV-18", f"{show(loose)} ended by '\\r\\n'")
        require(
            reply.ok and reply.cid == cid,
            "V1L-ENV-18",
            f"{show(loose)} ended by '\\r\\n': answered {reply.shown()}, expected"
            f" V1|{cid}|OK|offset=...",
            reply.at("correlation_id", "status", "code"),
        )
        cid = next_cid()
        send_line(conn, f"V1|{cid}|PRODUCE|{topic}   k:a|b\tacks=1\n".encode(), "loose args")
        put = read(target, conn, "V1L-ENV-18", "PRODUCE of 'k:a|b'", command="PRODUCE")
        require(
            put.ok and put.cid == cid,
            "V1L-ENV-18",
            f"PRODUCE {topic} k:a|b (args split by runs of whitespace): answered {put.shown()},"
            " expected OK",
            put.at("status", "code"),
        )
        partition, offset = put.number("partition"), put.number("offset")
        replicate(target, conn, topic, partition, offset, "V1L-ENV-18")
        got = consume(target, conn, topic, partition, offset, "V1L-ENV-18")
        require(
            got.messages()[:1] == [(offset, "a|b")],
            "V1L-ENV-18",
            f"CONSUME {topic} {partition} {offset}: messages {listed(got.messages())}, expected"
            f" '{offset}:a|b' (the '|' kept in the value)",
            got.at("messages"),
        )


REAL_TEXTS = (
    (b"V1|5\n", "expected format V1|<correlation_id>|<command>|<args>"),
    (b"V2|5|PING|\n", "unsupported version"),
    (b"V1||PING|\n", "correlation id required"),
    (b"V1|5||\n", "command required"),
)


@case("v1line/envelope/19", "V1L-ENV-19")
def test_error_messages_are_the_real_brokers_texts(target: CaseContext) -> None:
    """Parse errors, an unknown command, a bad integer and a wrong arg count carry the real
    broker's messages.

    V1L-ENV-19: "error messages are the real broker's texts: `expected format
    V1|<correlation_id>|<command>|<args>`, `unsupported version`, `correlation id required`,
    `command required`, `unsupported command`, `invalid <field>`, and `<COMMAND> requires:
    <usage>` for a wrong arg count."
    """
    topic = target.name("texts")
    replies = []
    for line, text in REAL_TEXTS:  # each alone: a broker may close after a parse error
        shown = show(line[:-1].decode())
        replies.append((lone_parse_error(target, line, "V1L-ENV-19", shown), text))
    with target.connect() as conn:
        for command, args, text in (
            ("NO_SUCH", "", "unsupported command"),
            ("CONSUME", f"{topic} abc 0", "invalid partition"),
            ("CONSUME", f"{topic} 0 x1", "invalid offset"),
            ("CONSUME", f"{topic} 0", "CONSUME requires: <topic> <partition> <offset>"),
        ):
            what = f"{command} {args}".strip()
            replies.append(
                (expect_error(target, conn, command, args, None, "V1L-ENV-19", what), text)
            )
        for reply, text in replies:
            require(
                reply.message == text,
                "V1L-ENV-19",
                f"answered {reply.shown()}, message {show(reply.message)}, expected {show(text)}",
                reply.at("message"),
            )
