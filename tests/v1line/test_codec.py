"""The V1 line codec: every command both ways, every BAD_REQUEST of the document's
validation list, reply lines and payloads, and Hypothesis round trips."""

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
    parse_reply,
    parse_request,
)
from conformance.protocols.v1line.commands import COMMANDS, I64_MAX, I64_MIN
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
    (b"V1|-1|PING|", Request("-1", "PING", ())),
    (b"V1|caf\xc3\xa9|PING|", Request("café", "PING", ())),
]


def test_every_command_has_a_golden_request() -> None:
    assert {r.command for _, r in REQUESTS} == set(COMMANDS)


@pytest.mark.parametrize(("line", "request_"), REQUESTS, ids=[r.command for _, r in REQUESTS])
def test_a_request_line_parses_and_encodes_back(line: bytes, request_: Request) -> None:
    assert parse_request(line) == request_
    assert parse_request(line + b"\n") == request_
    assert encode(request_) == line + b"\n"


def test_a_request_arg_is_read_by_name() -> None:
    req = parse_request(b"V1|7|COMMIT|g orders c-a 2 1 15")
    assert (req.arg("generation"), req.arg("partition"), req.arg("offset")) == (2, 1, 15)
    assert parse_request(b"V1|1|PRODUCE|t k:v").arg("acks") is None
    with pytest.raises(KeyError):
        req.arg("acks")


def test_integers_take_a_sign_and_leading_zeros_within_int64() -> None:
    assert parse_request(b"V1|1|CONSUME|t +007 0").args == ("t", 7, 0)
    top = parse_request(f"V1|1|REPLICA_FETCH|t 0 {I64_MIN} {I64_MAX}".encode())
    assert top.args == ("t", 0, I64_MIN, I64_MAX)


def test_encode_request_writes_raw_sections() -> None:
    assert encode_request(99, "PING") == b"V1|99|PING|\n"
    assert encode_request("1", "CONSUME", "t 0 0") == b"V1|1|CONSUME|t 0 0\n"


# ------------------------------------------------------------- BAD_REQUEST

BAD: list[tuple[bytes, str, str]] = [
    # the envelope (seed l.63-68)
    (b"V1|1|PING", "envelope", "got 3"),
    (b"V1|1|PING||", "envelope", "got 5"),
    (b"V1|1|PRODUCE|t k:a|b", "envelope", "got 5"),
    (b"", "envelope", "got 1"),
    (b"V2|1|PING|", "envelope", "'V2' is not V1"),
    (b"v1|1|PING|", "envelope", "is not V1"),
    (b" V1|1|PING|", "envelope", "is not V1"),
    (b"V1||PING|", "envelope", "empty correlation id"),
    (b"V1|1||", "envelope", "empty command"),
    (b"V1|1|PI\xffNG|", "envelope", "UTF-8"),
    (b"V1|1|PING|\nV1|2|PING|", "envelope", "newline"),
    # arguments (seed l.72-79)
    (b"V1|1|CONSUME|t x 0", "args", "partition 'x' is not an integer"),
    (b"V1|1|CONSUME|t 0 1.5", "args", "offset '1.5' is not an integer"),
    (b"V1|1|CONSUME|t 0 9223372036854775808", "args", "int64"),
    (b"V1|1|CONSUME|t 0 -1", "args", "offset -1 is below 0"),
    (b"V1|1|SYNC|g t c two", "args", "generation 'two'"),
    (b"V1|1|HEARTBEAT|g t c 0x1", "args", "generation '0x1'"),
    (b"V1|1|LEAVE|g t c ", "args", "single space"),
    (b"V1|1|COMMIT|g t c 1 0 1e3", "args", "offset '1e3'"),
    (b"V1|1|OFFSET|g t p", "args", "partition 'p'"),
    (b"V1|1|REPLICA_FETCH|t 0 one 0", "args", "replica_id 'one'"),
    (b"V1|1|PRODUCE|t k:v acks=2", "args", "not exactly one of acks=0, acks=1, acks=all"),
    (b"V1|1|PRODUCE|t k:v acks=ALL", "args", "not exactly one of"),
    (b"V1|1|PRODUCE|t k:v acks=", "args", "not exactly one of"),
    (b"V1|1|PRODUCE|t k:v ack=1", "args", "unexpected argument"),
    (b"V1|1|PRODUCE|t kv", "args", "message 'kv' is not <key>:<value>"),
    (b"V1|1|PRODUCE|t acks=all", "args", "is not <key>:<value>"),
    (b"V1|1|PRODUCE|t", "args", "got 1 argument(s)"),
    (b"V1|1|PRODUCE|t k:v acks=1 x", "args", "got 4 argument(s)"),
    (b"V1|1|PRODUCE|t k:v w", "args", "unexpected argument 'w'"),
    (b"V1|1|SET_PARTITION_ROLE|t 0 Leader", "args", "role 'Leader' is not exactly"),
    (b"V1|1|SET_PARTITION_ROLE|t 0 observer", "args", "is not exactly leader or follower"),
    (b"V1|1|JOIN|g t c assignor=sticky", "args", "not exactly one of assignor=round_robin"),
    (b"V1|1|JOIN|g t c assignor=Range", "args", "not exactly one of"),
    (b"V1|1|JOIN|g t", "args", "got 2 argument(s)"),
    (b"V1|1|CONSUME|t  0 0", "args", "single space"),
    (b"V1|1|CONSUME| t 0 0", "args", "single space"),
    (b"V1|1|CONSUME|", "args", "got 0 argument(s)"),
    (b"V1|1|PING|x", "args", "got 1 argument(s)"),
    (b"V1|1|PING| ", "args", "single space"),
    (b"V1|1|PING|\r", "args", "got 1 argument(s)"),
]


@pytest.mark.parametrize(("line", "stage", "words"), BAD, ids=[repr(b[0]) for b in BAD])
def test_a_bad_request_is_refused_with_correlation_id_0(
    line: bytes, stage: str, words: str
) -> None:
    with pytest.raises(BadRequest) as info:
        parse_request(line)
    err = info.value
    assert words in str(err), str(err)
    assert err.stage == stage
    assert err.reply_line().startswith(b"V1|0|ERR|BAD_REQUEST|")
    assert err.reply_line().endswith(b"\n") and err.reply_line().count(b"\n") == 1
    assert parse_reply(err.reply_line()) == ErrReply("0", "BAD_REQUEST", str(err))


def test_a_bad_request_keeps_the_correlation_id_the_line_carried() -> None:
    with pytest.raises(BadRequest) as info:
        parse_request(b"V1|77|PRODUCE|t k:v acks=2")
    assert info.value.request_correlation_id == "77"
    assert info.value.correlation_id == "0"
    with pytest.raises(BadRequest) as info:
        parse_request(b"V2|78|PING|")
    assert info.value.request_correlation_id == "78"


def test_an_unknown_command_answers_with_its_correlation_id() -> None:
    for line, command in [(b"V1|5|FETCH|t 0", "FETCH"), (b"V1|6|ping|", "ping")]:
        with pytest.raises(UnknownCommand) as info:
            parse_request(line)
        assert info.value.command == command
        corr = line.split(b"|")[1]
        assert info.value.reply_line().startswith(b"V1|" + corr + b"|ERR|UNKNOWN_COMMAND|")


def test_unknown_command_is_checked_before_its_arguments() -> None:
    with pytest.raises(UnknownCommand):
        parse_request(b"V1|5|NOPE|  x")


def test_collapse_spaces_reads_runs_of_spaces_as_one_separator() -> None:
    line = b"V1|1|CONSUME|  t   2 0 "
    assert parse_request(line, collapse_spaces=True).args == ("t", 2, 0)
    with pytest.raises(BadRequest):
        parse_request(line)


@pytest.mark.parametrize(
    ("request_", "words"),
    [
        (Request("1", "PRODUCE", ("t", KeyValue("k:x", "v"), None)), "holds ':'"),
        (Request("1", "PRODUCE", ("t", KeyValue("k", "a b"), None)), "one field"),
        (Request("1", "CONSUME", ("", 0, 0)), "one field"),
        (Request("1", "CONSUME", ("t", 0)), "takes 3"),
        (Request("a|b", "PING", ()), "correlation id"),
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
    assert [parse_request(f) for f in got] == [Request(str(i), "PING") for i in range(3)]
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
    ("JOIN", "generation=2 assigned=[0,1,2]", {"generation": 2, "assigned": (0, 1, 2)}),
    ("JOIN", "generation=2 assigned=[]", {"generation": 2, "assigned": ()}),
    ("SYNC", "generation=3 assigned=[4]", {"generation": 3, "assigned": (4,)}),
    ("HEARTBEAT", "heartbeat=ok", {"heartbeat": "ok"}),
    ("LEAVE", "left=true", {"left": True}),
    ("COMMIT", "committed=true", {"committed": True}),
    ("OFFSET", "offset=-1", {"offset": -1}),
    (
        "REPLICA_FETCH",
        "replica=1 acked_offset=7 hw=7 isr=[0,1] under_replicated=false",
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


@pytest.mark.parametrize(
    ("command", "text", "words"),
    [
        ("JOIN", "generation=2 assigned=[0 1 2]", "separates its items with spaces"),
        ("JOIN", "generation=2 assigned=[0;1]", "separated by commas"),
        ("JOIN", "generation=2 assigned=[0,,1]", "separated by commas"),
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
    st.characters(exclude_characters="| \n", exclude_categories=["Cs"]), min_size=1, max_size=12
)
# (a token: any text without the separators; surrogates cannot be UTF-8)
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
def test_encode_then_parse_gives_the_same_request(request_: Request) -> None:
    line = encode(request_)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert parse_request(line) == request_
    assert parse_request(line, collapse_spaces=True) == request_


@given(st.binary(max_size=80) | st.builds(lambda b: b"V1|" + b, st.binary(max_size=60)))
def test_parse_request_raises_only_the_codecs_errors(line: bytes) -> None:
    try:
        req = parse_request(line)
    except (BadRequest, UnknownCommand) as exc:
        assert isinstance(exc, ProtocolError)
        assert exc.reply_line().endswith(b"\n") and exc.reply_line().count(b"\n") == 1
    else:
        assert parse_request(encode(req)) == req


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
