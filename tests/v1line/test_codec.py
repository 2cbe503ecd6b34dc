"""The V1 line codec against SPEC.md: every command both ways in each revision that has it
(PING is ``doc``'s: ``real`` reads it as an unknown command, V1L-PING-3), every BAD_REQUEST of
the validation list (with the correlation id it is answered with), each difference between
``doc`` and ``real``, reply lines and payloads, Hypothesis round trips."""

from __future__ import annotations

import contextlib
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.errors import FrameTooLarge, ProtocolError
from conformance.protocols.v1line import codec
from conformance.protocols.v1line.codec import (
    ErrReply,
    KeyValue,
    OkReply,
    PayloadValue,
    Request,
    decode_payload,
    encode,
    encode_payload,
    encode_reply,
    encode_request,
    encode_result,
    parse_reply,
    parse_request,
)
from conformance.protocols.v1line.commands import COMMANDS, I64_MAX, I64_MIN, REVISIONS, Revision
from conformance.protocols.v1line.errors import BadReply, BadRequest, UnknownCommand

# ----------------------------------------------------------- golden requests

REQUESTS: list[tuple[bytes, Request]] = [
    (
        b"V1|42|PRODUCE|orders user1:created",
        Request("42", "PRODUCE", ("orders", KeyValue("user1", "created"), None)),
    ),
    (
        b"V1|43|PRODUCE|orders user1:created acks=all",
        Request("43", "PRODUCE", ("orders", KeyValue("user1", "created"), "all")),
    ),
    (b"V1|1|PRODUCE|t k:v acks=0", Request("1", "PRODUCE", ("t", KeyValue("k", "v"), "0"))),
    (b"V1|1|PRODUCE|t k:v acks=1", Request("1", "PRODUCE", ("t", KeyValue("k", "v"), "1"))),
    (b"V1|2|CONSUME|orders 2 0", Request("2", "CONSUME", ("orders", 2, 0))),
    (b"V1|3|JOIN|g orders c-a", Request("3", "JOIN", ("g", "orders", "c-a", None))),
    (
        b"V1|3|JOIN|g orders c-a assignor=round_robin",
        Request("3", "JOIN", ("g", "orders", "c-a", "round_robin")),
    ),
    (
        b"V1|3|JOIN|g orders c-a assignor=range",
        Request("3", "JOIN", ("g", "orders", "c-a", "range")),
    ),
    (b"V1|4|SYNC|g orders c-a 2", Request("4", "SYNC", ("g", "orders", "c-a", 2))),
    (b"V1|5|HEARTBEAT|g orders c-a 2", Request("5", "HEARTBEAT", ("g", "orders", "c-a", 2))),
    (b"V1|6|LEAVE|g orders c-a 2", Request("6", "LEAVE", ("g", "orders", "c-a", 2))),
    (
        b"V1|7|COMMIT|g orders c-a 2 1 15",
        Request("7", "COMMIT", ("g", "orders", "c-a", 2, 1, 15)),
    ),
    (b"V1|8|OFFSET|g orders 1", Request("8", "OFFSET", ("g", "orders", 1))),
    (b"V1|9|REPLICA_FETCH|orders 0 1 7", Request("9", "REPLICA_FETCH", ("orders", 0, 1, 7))),
    (
        b"V1|10|SET_PARTITION_ROLE|orders 0 leader",
        Request("10", "SET_PARTITION_ROLE", ("orders", 0, "leader")),
    ),
    (
        b"V1|10|SET_PARTITION_ROLE|orders 0 follower",
        Request("10", "SET_PARTITION_ROLE", ("orders", 0, "follower")),
    ),
    (b"V1|99|PING|", Request("99", "PING", ())),
    # values holding ':' split on the first; a correlation id is any non-empty text
    (b"V1|x-1|PRODUCE|t k:a:b:c", Request("x-1", "PRODUCE", ("t", KeyValue("k", "a:b:c"), None))),
    (b"V1|1|PRODUCE|t :", Request("1", "PRODUCE", ("t", KeyValue("", ""), None))),
    (b"V1|1|PRODUCE|t k:acks=all", Request("1", "PRODUCE", ("t", KeyValue("k", "acks=all"), None))),
    (b"V1|-1|OFFSET|g orders 1", Request("-1", "OFFSET", ("g", "orders", 1))),
    (b"V1|caf\xc3\xa9|OFFSET|g orders 1", Request("café", "OFFSET", ("g", "orders", 1))),
]


def test_every_command_has_a_golden_request() -> None:
    assert {r.command for _, r in REQUESTS} == set(COMMANDS)


@pytest.mark.parametrize("revision", REVISIONS)
@pytest.mark.parametrize(("line", "request_"), REQUESTS, ids=[r.command for _, r in REQUESTS])
def test_a_request_line_parses_and_encodes_back(
    line: bytes, request_: Request, revision: Revision
) -> None:
    """PING, in real, is an unknown command with its correlation id (V1L-PING-3)."""
    for sent in (line, line + b"\n"):
        if request_.command == "PING" and revision == "real":
            with pytest.raises(UnknownCommand) as info:
                parse_request(sent, revision=revision)
            assert (info.value.command, info.value.correlation_id) == (
                "PING",
                request_.correlation_id,
            )
        else:
            assert parse_request(sent, revision=revision) == request_
    assert encode(request_) == line + b"\n"


def test_a_request_arg_is_read_by_name() -> None:
    req = parse_request(b"V1|7|COMMIT|g orders c-a 2 1 15", revision="doc")
    assert (req.arg("generation"), req.arg("partition"), req.arg("offset")) == (2, 1, 15)
    assert parse_request(b"V1|1|PRODUCE|t k:v", revision="doc").arg("acks") is None
    with pytest.raises(KeyError):
        req.arg("acks")


@pytest.mark.parametrize("revision", REVISIONS)
def test_integers_take_a_sign_and_leading_zeros_within_int64(revision: Revision) -> None:
    assert parse_request(b"V1|1|CONSUME|t +007 0", revision=revision).args == ("t", 7, 0)
    top = parse_request(f"V1|1|REPLICA_FETCH|t 0 {I64_MIN} {I64_MAX}".encode(), revision=revision)
    assert top.args == ("t", 0, I64_MIN, I64_MAX)
    # more leading zeros than int() reads from text (4300 digits) are still a number
    zeros = b"0" * 5000
    padded = parse_request(
        b"V1|1|REPLICA_FETCH|t " + zeros + b"7 1 -" + zeros + b"12", revision=revision
    )
    assert padded.args == ("t", 7, 1, -12)


@pytest.mark.parametrize("revision", REVISIONS)
def test_a_negative_generation_or_stored_offset_is_left_to_the_handler(
    revision: Revision,
) -> None:
    # V1L-GRP-9: another generation is GENERATION_MISMATCH; V1L-OFF-6: stored as given;
    # V1L-REPL-15: acked_offset echoes the offset reported
    for line, args in [
        (b"V1|1|SYNC|g t c -1", ("g", "t", "c", -1)),
        (b"V1|1|COMMIT|g t c 2 0 -5", ("g", "t", "c", 2, 0, -5)),
        (b"V1|1|REPLICA_FETCH|t 0 1 -1", ("t", 0, 1, -1)),
    ]:
        assert parse_request(line, revision=revision).args == args


def test_encode_request_writes_raw_sections() -> None:
    assert encode_request(99, "PING") == b"V1|99|PING|\n"
    assert encode_request("1", "CONSUME", "t 0 0") == b"V1|1|CONSUME|t 0 0\n"


def test_an_unknown_revision_is_refused() -> None:
    with pytest.raises(ValueError, match="revision"):
        parse_request(b"V1|1|PING|", revision="v2")  # type: ignore[arg-type]


# ------------------------------------------------------------- BAD_REQUEST

ENVELOPE = "expected format V1|<correlation_id>|<command>|<args>"

# (line, stage, message, reply correlation id): refused alike in both revisions
BAD: list[tuple[bytes, str, str, str]] = [
    # the envelope: parse errors, correlation id 0 (V1L-ENV-5 to -9, -11)
    (b"V1|7|PING", "envelope", ENVELOPE, "0"),
    (b"", "envelope", ENVELOPE, "0"),
    (b"V2|7|PING|", "envelope", "unsupported version", "0"),
    (b"v1|7|PING|", "envelope", "unsupported version", "0"),
    (b"|7|PING|", "envelope", "unsupported version", "0"),
    (b"V1||PING|", "envelope", "correlation id required", "0"),
    (b"V1|7||", "envelope", "command required", "0"),
    (b"V1|7|PI\xffNG|", "envelope", "UTF-8", "0"),
    (b"V1|7|PING|\nV1|2|PING|", "envelope", "newline", "0"),
    # arguments: the request's correlation id (V1L-ENV-15, -16, -19)
    (b"V1|7|CONSUME|t x 0", "args", "invalid partition", "7"),
    (b"V1|7|CONSUME|t 0 1.5", "args", "invalid offset", "7"),
    (b"V1|7|CONSUME|t 0 x1", "args", "invalid offset", "7"),
    (b"V1|7|CONSUME|t 0 9223372036854775808", "args", "invalid offset", "7"),
    (b"V1|7|CONSUME|t 0 -1", "args", "invalid offset", "7"),
    (b"V1|7|CONSUME|t -1 0", "args", "invalid partition", "7"),
    (b"V1|7|SYNC|g t c two", "args", "invalid generation", "7"),
    (b"V1|7|HEARTBEAT|g t c 0x1", "args", "invalid generation", "7"),
    (b"V1|7|LEAVE|g t c abc", "args", "invalid generation", "7"),
    (b"V1|7|COMMIT|g t c 1 0 1e3", "args", "invalid offset", "7"),
    (b"V1|7|OFFSET|g t p", "args", "invalid partition", "7"),
    (b"V1|7|REPLICA_FETCH|t 0 one 0", "args", "invalid replica_id", "7"),
    (b"V1|7|PRODUCE|t k:v acks=2", "args", "invalid ack mode; expected acks=0|1|all", "7"),
    (b"V1|7|PRODUCE|t k:v acks=", "args", "invalid ack mode", "7"),
    (b"V1|7|PRODUCE|t k:v ack=1", "args", "invalid ack mode", "7"),
    (b"V1|7|PRODUCE|t k:v w", "args", "invalid ack mode", "7"),
    (b"V1|7|PRODUCE|t kv", "args", "message must be key:value", "7"),
    (b"V1|7|PRODUCE|t acks=all", "args", "message must be key:value", "7"),
    (b"V1|7|PRODUCE|t", "args", "PRODUCE requires: <topic> <key>:<value> [acks=0|1|all]", "7"),
    (b"V1|7|PRODUCE|t k:v acks=1 x", "args", "PRODUCE requires:", "7"),
    (b"V1|7|SET_PARTITION_ROLE|t 0 observer", "args", "invalid role", "7"),
    (
        b"V1|7|JOIN|g t c assignor=sticky",
        "args",
        "invalid assignor; expected assignor=round_robin|range",
        "7",
    ),
    (b"V1|7|JOIN|g t c strategy=range", "args", "invalid assignor", "7"),
    (b"V1|7|JOIN|g t", "args", "JOIN requires: <group> <topic> <consumer_id> [assignor=", "7"),
    (b"V1|7|CONSUME|", "args", "CONSUME requires: <topic> <partition> <offset>", "7"),
]


def _refused(line: bytes, revision: Revision) -> BadRequest:
    with pytest.raises(BadRequest) as info:
        parse_request(line, revision=revision)
    err = info.value
    reply = err.reply_line()
    assert reply.startswith(f"V1|{err.correlation_id}|ERR|BAD_REQUEST|".encode())
    assert reply.endswith(b"\n") and reply.count(b"\n") == 1
    assert parse_reply(reply) == ErrReply(err.correlation_id, "BAD_REQUEST", str(err))
    return err


@pytest.mark.parametrize("revision", REVISIONS)
@pytest.mark.parametrize(("line", "stage", "words", "corr"), BAD, ids=[repr(b[0]) for b in BAD])
def test_a_bad_request_is_refused(
    line: bytes, stage: str, words: str, corr: str, revision: Revision
) -> None:
    err = _refused(line, revision)
    assert words in str(err), str(err)
    assert (err.stage, err.correlation_id) == (stage, corr)


@pytest.mark.parametrize("revision", REVISIONS)
def test_a_parse_error_keeps_the_correlation_id_the_line_carried(revision: Revision) -> None:
    err = _refused(b"V2|78|PING|", revision)
    assert (err.request_correlation_id, err.correlation_id) == ("78", "0")
    err = _refused(b"V1|79|PING", revision)
    assert (err.request_correlation_id, err.correlation_id) == ("79", "0")


def test_an_args_error_needs_the_requests_correlation_id() -> None:
    with pytest.raises(ValueError, match="correlation id"):
        BadRequest("x", stage="args")


@pytest.mark.parametrize("revision", REVISIONS)
def test_an_unknown_command_answers_with_its_correlation_id(revision: Revision) -> None:
    with pytest.raises(UnknownCommand) as info:
        parse_request(b"V1|5|FETCH|t 0", revision=revision)
    assert info.value.command == "FETCH"
    assert info.value.reply_line() == b"V1|5|ERR|UNKNOWN_COMMAND|unsupported command\n"


@pytest.mark.parametrize("revision", REVISIONS)
def test_unknown_command_is_checked_before_its_arguments(revision: Revision) -> None:
    with pytest.raises(UnknownCommand):
        parse_request(b"V1|5|NOPE|  x", revision=revision)


# ------------------------------------------------- where doc and real differ

Outcome = Request | tuple[str, str, str]
"""A parsed request, or (stage, message, reply correlation id) of a BadRequest, or
("unknown", command, correlation id) of an UnknownCommand."""

DIFFERENCES: list[tuple[str, bytes, Outcome, Outcome]] = [
    (
        "V1L-ENV-10/18 a | in the args",
        b"V1|7|PRODUCE|t k:a|b",
        ("envelope", ENVELOPE, "0"),
        Request("7", "PRODUCE", ("t", KeyValue("k", "a|b"), None)),
    ),
    (
        "V1L-ENV-10/18 five sections",
        b"V1|7|OFFSET||",
        ("envelope", ENVELOPE, "0"),
        ("args", "OFFSET requires: <group> <topic> <partition>", "7"),
    ),
    (
        "V1L-ENV-18 command in any case",
        b"V1|7|offset|g t 1",
        ("unknown", "offset", "7"),
        Request("7", "OFFSET", ("g", "t", 1)),
    ),
    (
        "V1L-ENV-18 command in any case, args",
        b"V1|7|Consume|t 1 2",
        ("unknown", "Consume", "7"),
        Request("7", "CONSUME", ("t", 1, 2)),
    ),
    (
        "V1L-ENV-18 \\r before \\n",
        b"V1|7|OFFSET|g t 1\r",
        ("args", "invalid partition", "7"),
        Request("7", "OFFSET", ("g", "t", 1)),
    ),
    (
        "V1L-ENV-18 \\r after args",
        b"V1|7|CONSUME|t 0 0\r\n",
        ("args", "invalid offset", "7"),
        Request("7", "CONSUME", ("t", 0, 0)),
    ),
    (
        "V1L-ENV-18 sections trimmed",
        b" V1 | 7 | OFFSET | g t 1 ",
        ("envelope", "unsupported version", "0"),
        Request("7", "OFFSET", ("g", "t", 1)),
    ),
    (
        "V1L-ENV-18 a blank correlation id",
        b"V1| |PING|",
        Request(" ", "PING"),
        ("envelope", "correlation id required", "0"),
    ),
    (
        "V1L-ENV-18 runs of spaces",
        b"V1|7|CONSUME|  t   2 0 ",
        ("args", "CONSUME requires:", "7"),
        Request("7", "CONSUME", ("t", 2, 0)),
    ),
    (
        "V1L-ENV-18 tabs",
        b"V1|7|CONSUME|t\t2\t0",
        ("args", "CONSUME requires:", "7"),
        Request("7", "CONSUME", ("t", 2, 0)),
    ),
    (
        "V1L-ENV-18 a trailing space",
        b"V1|7|LEAVE|g t c 1 ",
        ("args", "LEAVE requires:", "7"),
        Request("7", "LEAVE", ("g", "t", "c", 1)),
    ),
    (
        "V1L-PING-1/3 PING",
        b"V1|7|PING|",
        Request("7", "PING"),
        ("unknown", "PING", "7"),
    ),
    (
        "V1L-PING-3 PING with an arg",
        b"V1|7|PING|x",
        ("args", "PING requires: no args", "7"),
        ("unknown", "PING", "7"),
    ),
    (
        "V1L-PING-3 a space as PING's args",
        b"V1|7|PING| ",
        ("args", "PING requires: no args", "7"),
        ("unknown", "PING", "7"),
    ),
    (
        "V1L-PING-3 PING's five sections",
        b"V1|7|PING||",
        ("envelope", ENVELOPE, "0"),
        ("unknown", "PING", "7"),
    ),
    (
        "V1L-PROD-6/10 acks=ALL",
        b"V1|7|PRODUCE|t k:v acks=ALL",
        ("args", "invalid ack mode", "7"),
        Request("7", "PRODUCE", ("t", KeyValue("k", "v"), "all")),
    ),
    (
        "V1L-PROD-6/10 ACKS=1",
        b"V1|7|PRODUCE|t k:v ACKS=1",
        ("args", "invalid ack mode", "7"),
        Request("7", "PRODUCE", ("t", KeyValue("k", "v"), "1")),
    ),
    (
        "V1L-REPL-3/16 LEADER",
        b"V1|7|SET_PARTITION_ROLE|t 0 LEADER",
        ("args", "invalid role", "7"),
        Request("7", "SET_PARTITION_ROLE", ("t", 0, "leader")),
    ),
    (
        "V1L-REPL-3/16 Follower",
        b"V1|7|SET_PARTITION_ROLE|t 0 Follower",
        ("args", "invalid role", "7"),
        Request("7", "SET_PARTITION_ROLE", ("t", 0, "follower")),
    ),
    (
        "V1L-GRP-8/14 assignor=RANGE",
        b"V1|7|JOIN|g t c assignor=RANGE",
        ("args", "invalid assignor", "7"),
        Request("7", "JOIN", ("g", "t", "c", "range")),
    ),
    (
        "V1L-GRP-8/14 ASSIGNOR=Round_Robin",
        b"V1|7|JOIN|g t c ASSIGNOR=Round_Robin",
        ("args", "invalid assignor", "7"),
        Request("7", "JOIN", ("g", "t", "c", "round_robin")),
    ),
]


def _check(line: bytes, revision: Revision, expected: Outcome) -> None:
    if isinstance(expected, Request):
        assert parse_request(line, revision=revision) == expected
        return
    stage, words, corr = expected
    if stage == "unknown":
        with pytest.raises(UnknownCommand) as info:
            parse_request(line, revision=revision)
        assert (info.value.command, info.value.correlation_id) == (words, corr)
        return
    err = _refused(line, revision)
    assert words in str(err), str(err)
    assert (err.stage, err.correlation_id) == (stage, corr)


@pytest.mark.parametrize(
    ("name", "line", "doc", "real"), DIFFERENCES, ids=[d[0] for d in DIFFERENCES]
)
def test_doc_and_real_read_a_line_differently(
    name: str, line: bytes, doc: Outcome, real: Outcome
) -> None:
    assert doc != real
    _check(line, "doc", doc)
    _check(line, "real", real)


@pytest.mark.parametrize(
    "line", [b"V1|7|ping|", b"V1|7|Ping|", b" V1 | 7 | PING | ", b"V1|7|PING|\r", b"V1|7|PING|\t"]
)
def test_real_has_no_ping_in_any_case_or_spacing(line: bytes) -> None:
    """V1L-PING-3 through V1L-ENV-18: real reads each of these as PING, and has no PING."""
    with pytest.raises(UnknownCommand) as info:
        parse_request(line, revision="real")
    assert info.value.correlation_id == "7"
    assert info.value.command.strip().upper() == "PING"


def test_real_echoes_the_correlation_id_trimmed_and_keeps_inner_spaces() -> None:
    line, args = b"V1| a b |OFFSET|g t 1", ("g", "t", 1)
    assert parse_request(line, revision="real") == Request("a b", "OFFSET", args)
    assert parse_request(line, revision="doc") == Request(" a b ", "OFFSET", args)


@pytest.mark.parametrize(
    ("request_", "words"),
    [
        (Request("1", "PRODUCE", ("t", KeyValue("k:x", "v"), None)), "holds ':'"),
        (Request("1", "PRODUCE", ("t", KeyValue("k", "a b"), None)), "one field"),
        (Request("1", "PRODUCE", ("t", KeyValue("k", "a|b"), None)), "one field"),
        (Request("1", "PRODUCE", ("t", KeyValue("k", "a\tb"), None)), "one field"),
        (Request("1", "CONSUME", ("", 0, 0)), "one field"),
        (Request("1", "CONSUME", ("t", 0)), "takes 3"),
        (Request("a|b", "PING", ()), "correlation id"),
        (Request(" 1", "PING", ()), "correlation id"),
    ],
)
def test_encode_refuses_what_would_not_parse_back(request_: Request, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        encode(request_)


# ------------------------------------------------------------------- framing


def test_the_framing_takes_64_kib_lines_and_refuses_longer() -> None:
    lines = [encode_request(i, "PING") for i in range(3)]
    stream = b"".join(lines)
    d = codec.FRAMING.deframer()
    assert d.feed(stream + b"V1|9|PI") == [line[:-1] for line in lines]
    d = codec.FRAMING.deframer()
    got = [f for i in range(len(stream)) for f in d.feed(stream[i : i + 1])]
    assert [parse_request(f, revision="doc") for f in got] == [
        Request(str(i), "PING") for i in range(3)
    ]
    ok = b"V1|1|PRODUCE|t k:" + b"v" * (64 * 1024 - 17)
    assert len(ok) == 64 * 1024
    assert codec.FRAMING.deframer().feed(ok + b"\n") == [ok]
    with pytest.raises(FrameTooLarge):
        codec.FRAMING.deframer().feed(ok + b"v")


# ------------------------------------------------------------------- replies

REPLIES: list[tuple[bytes, OkReply | ErrReply]] = [
    (b"V1|1|OK\n", OkReply("1")),
    (b"V1|1|OK|\n", OkReply("1", "")),
    (b"V1|42|OK|partition=0 offset=3 hw=3\n", OkReply("42", "partition=0 offset=3 hw=3")),
    (b"V1|0|ERR|BAD_REQUEST|bad\n", ErrReply("0", "BAD_REQUEST", "bad")),
    (b"V1|7|ERR|NOT_LEADER|\n", ErrReply("7", "NOT_LEADER", "")),
    (
        b"V1|7|ERR|BAD_REQUEST|expected V1|a|b|c\n",
        ErrReply("7", "BAD_REQUEST", "expected V1|a|b|c"),
    ),
]


@pytest.mark.parametrize(("line", "reply"), REPLIES)
def test_a_reply_line_parses_and_encodes_back(line: bytes, reply: OkReply | ErrReply) -> None:
    assert encode_reply(reply) == line
    assert parse_reply(line) == reply
    assert parse_reply(line[:-1]) == reply


def test_an_error_message_with_a_newline_stays_one_line() -> None:
    assert encode_reply(ErrReply("1", "X", "a\nb")) == b"V1|1|ERR|X|a b\n"


@pytest.mark.parametrize(
    "line",
    [b"", b"V1|1", b"V2|1|OK", b"V1||OK", b"V1|1|YES", b"V1|1|ERR|X", b"V1|1|ERR||m", b"\xff"],
)
def test_a_malformed_reply_is_refused(line: bytes) -> None:
    with pytest.raises(BadReply):
        parse_reply(line)


PAYLOADS: list[tuple[str, str, dict[str, PayloadValue]]] = [
    ("PRODUCE", "partition=1 offset=5 hw=4", {"partition": 1, "offset": 5, "hw": 4}),
    (
        "CONSUME",
        "messages=0:created,1:paid hw=2",
        {"messages": ((0, "created"), (1, "paid")), "hw": 2},
    ),
    ("CONSUME", "messages= hw=0", {"messages": (), "hw": 0}),
    ("CONSUME", "messages=3:a:b,4:x,y hw=5", {"messages": ((3, "a:b"), (4, "x,y")), "hw": 5}),
    ("CONSUME", "messages=0: hw=1", {"messages": ((0, ""),), "hw": 1}),
    ("CONSUME", "messages= hw=-1", {"messages": (), "hw": -1}),
    ("JOIN", "generation=2 assigned=[0 1 2]", {"generation": 2, "assigned": (0, 1, 2)}),
    ("JOIN", "generation=2 assigned=[]", {"generation": 2, "assigned": ()}),
    ("SYNC", "generation=3 assigned=[4]", {"generation": 3, "assigned": (4,)}),
    ("HEARTBEAT", "heartbeat=ok", {"heartbeat": "ok"}),
    ("LEAVE", "left=true", {"left": True}),
    ("COMMIT", "committed=true", {"committed": True}),
    ("OFFSET", "offset=-1", {"offset": -1}),
    (
        "REPLICA_FETCH",
        "replica=1 acked_offset=7 hw=7 isr=[0 1] under_replicated=false",
        {"replica": 1, "acked_offset": 7, "hw": 7, "isr": (0, 1), "under_replicated": False},
    ),
    (
        "REPLICA_FETCH",
        "replica=2 acked_offset=0 hw=0 isr=[] under_replicated=true",
        {"replica": 2, "acked_offset": 0, "hw": 0, "isr": (), "under_replicated": True},
    ),
    (
        "SET_PARTITION_ROLE",
        "topic=orders partition=0 role=follower hw=3",
        {"topic": "orders", "partition": 0, "role": "follower", "hw": 3},
    ),
    ("PING", "", {}),
]


def test_every_command_has_a_golden_payload() -> None:
    assert {c for c, _, _ in PAYLOADS} == set(COMMANDS)


@pytest.mark.parametrize(("command", "text", "values"), PAYLOADS)
def test_a_payload_decodes_and_encodes_back(
    command: str, text: str, values: dict[str, PayloadValue]
) -> None:
    assert decode_payload(command, text) == values
    assert encode_payload(command, values) == text


def test_a_payload_keeps_keys_it_does_not_know_and_reads_any_order() -> None:
    got = decode_payload("PRODUCE", "hw=1 leader=0 offset=1 partition=0")
    assert got == {"partition": 0, "offset": 1, "hw": 1, "leader": "0"}
    assert encode_payload("PRODUCE", got) == "partition=0 offset=1 hw=1 leader=0"
    got = decode_payload("JOIN", "replicas=[1 2] assigned=[0 2] generation=2")
    assert got == {"generation": 2, "assigned": (0, 2), "replicas": "[1 2]"}


def test_a_list_holds_spaces_only_where_one_is_declared() -> None:
    got = decode_payload("SET_PARTITION_ROLE", "topic=[x partition=0 role=leader hw=-1")
    assert got["topic"] == "[x"
    got = decode_payload("CONSUME", "messages=0:[a,1:b] hw=1")
    assert got["messages"] == ((0, "[a"), (1, "b]"))


def test_a_success_without_payload_has_no_payload_section() -> None:
    assert encode_result(9, "PING", {}) == b"V1|9|OK\n"
    assert encode_result("a", "LEAVE", {"left": True}) == b"V1|a|OK|left=true\n"
    line = encode_result(3, "REPLICA_FETCH", decode_payload("REPLICA_FETCH", REPLICA_FETCH))
    assert line == b"V1|3|OK|" + REPLICA_FETCH.encode() + b"\n"


REPLICA_FETCH = "replica=2 acked_offset=-1 hw=-1 isr=[0] under_replicated=true"


@pytest.mark.parametrize(
    ("command", "text", "words"),
    [
        ("JOIN", "generation=2 assigned=[0,1,2]", "as in [0 1 2], not commas"),
        ("JOIN", "generation=2 assigned=[0, 1]", "not commas"),
        ("JOIN", "generation=2 assigned=[0;1]", "separated by one space"),
        ("JOIN", "generation=2 assigned=[0  1]", "separated by one space"),
        ("JOIN", "generation=2 assigned=[ 0]", "separated by one space"),
        ("JOIN", "generation=2 assigned=[0 1", "never closes"),
        (
            "REPLICA_FETCH",
            "replica=1 acked_offset=0 hw=0 isr=[0 under_replicated=x]",
            "items must be integers separated by one space",
        ),
        ("JOIN", "generation=2 assigned=0,1", "not a list in [...]"),
        ("JOIN", "generation=2", "has no assigned="),
        ("JOIN", "generation=x assigned=[]", "not an integer"),
        ("LEAVE", "left=yes", "not true or false"),
        ("HEARTBEAT", "heartbeat=OK", "expected exactly 'ok'"),
        ("CONSUME", "messages=a:b hw=0", "item 'a:b' is not <offset>:<value>"),
        ("CONSUME", "messages=0:a hw=0 hw=1", "appears twice"),
        ("OFFSET", "offset=1  x=2", "is not key=value"),
        ("SET_PARTITION_ROLE", "topic= partition=0 role=leader hw=0", "empty"),
    ],
)
def test_a_bad_payload_says_what_it_refused(command: str, text: str, words: str) -> None:
    with pytest.raises(BadReply) as info:
        decode_payload(command, text)
    assert words in str(info.value), str(info.value)


# ----------------------------------------------------------------- properties

TOKEN = st.text(
    st.characters(exclude_characters="|", exclude_categories=["Cs"]).filter(
        lambda c: not c.isspace()
    ),
    min_size=1,
    max_size=12,
)
# (a token: any text without the separators, | and whitespace; surrogates cannot be UTF-8)
KEY = TOKEN.filter(lambda s: ":" not in s) | st.just("")
VALUE = TOKEN | st.just("")
U64 = st.integers(0, I64_MAX)
I64 = st.integers(I64_MIN, I64_MAX)


def _value(command: str, name: str) -> st.SearchStrategy[object]:
    spec = COMMANDS[command]
    if spec.option is not None and name == spec.option.key:
        return st.none() | st.sampled_from(spec.option.choices)
    field = next(f for f in spec.fields if f.name == name)
    if field.kind == "name":
        return TOKEN
    if field.kind == "message":
        return st.builds(KeyValue, KEY, VALUE)
    if field.kind == "choice":
        return st.sampled_from(field.choices)
    return U64 if field.minimum == 0 else I64


@st.composite
def requests(draw: st.DrawFn) -> Request:
    command = draw(st.sampled_from(sorted(COMMANDS)))
    values = tuple(draw(_value(command, n)) for n in COMMANDS[command].arg_names)
    return Request(draw(TOKEN), command, values)  # type: ignore[arg-type]


@given(requests())
def test_encode_then_parse_gives_the_same_request_in_each_revision_that_has_it(
    request_: Request,
) -> None:
    """A PING, in real, is an unknown command with its correlation id (V1L-PING-3)."""
    line = encode(request_)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    for revision in REVISIONS:
        if request_.command == "PING" and revision == "real":
            with pytest.raises(UnknownCommand) as info:
                parse_request(line, revision=revision)
            assert info.value.correlation_id == request_.correlation_id
        else:
            assert parse_request(line, revision=revision) == request_


def _writable(req: Request) -> bool:
    texts = [req.correlation_id.strip(), *(str(a) for a in req.args if a is not None)]
    return not any(c == "|" or c.isspace() for t in texts for c in t)


@given(
    st.sampled_from(REVISIONS),
    st.binary(max_size=80) | st.builds(lambda b: b"V1|" + b, st.binary(max_size=60)),
)
def test_parse_request_raises_only_the_codecs_errors(revision: Revision, line: bytes) -> None:
    try:
        req = parse_request(line, revision=revision)
    except (BadRequest, UnknownCommand) as exc:
        assert isinstance(exc, ProtocolError)
        assert exc.reply_line().endswith(b"\n") and exc.reply_line().count(b"\n") == 1
        if isinstance(exc, BadRequest) and exc.stage == "envelope":
            assert exc.correlation_id == "0"
        else:
            assert exc.correlation_id not in ("", None)
    else:
        if _writable(req) and req.correlation_id == req.correlation_id.strip():
            assert parse_request(encode(req), revision=revision) == req
        else:
            with pytest.raises(ValueError):
                encode(req)


@given(st.binary(max_size=80))
def test_parse_reply_raises_only_bad_reply(line: bytes) -> None:
    try:
        reply = parse_reply(line)
    except BadReply:
        return
    assert parse_reply(encode_reply(reply)) == reply


@st.composite
def payloads(draw: st.DrawFn) -> tuple[str, dict[str, PayloadValue]]:
    command = draw(st.sampled_from(sorted(COMMANDS)))
    out: dict[str, PayloadValue] = {}
    for f in COMMANDS[command].reply:
        if f.kind == "int":
            out[f.name] = draw(I64)
        elif f.kind == "bool":
            out[f.name] = draw(st.booleans())
        elif f.kind == "word":
            out[f.name] = draw(TOKEN)
        elif f.kind == "literal":
            out[f.name] = f.literal
        elif f.kind == "int_list":
            out[f.name] = tuple(draw(st.lists(U64, max_size=5)))
        else:
            value = VALUE.filter(lambda v: not re.search(r",[0-9]+:", v))
            out[f.name] = tuple(draw(st.lists(st.tuples(U64, value), max_size=5)))
    return command, out


@given(payloads())
def test_a_payload_encodes_and_decodes_back(case: tuple[str, dict[str, PayloadValue]]) -> None:
    command, values = case
    assert decode_payload(command, encode_payload(command, values)) == values


@given(st.sampled_from(sorted(COMMANDS)), st.text(max_size=60))
def test_decode_payload_raises_only_bad_reply(command: str, text: str) -> None:
    with contextlib.suppress(BadReply):
        decode_payload(command, text)
