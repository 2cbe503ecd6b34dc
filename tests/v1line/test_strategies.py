"""The V1 line strategies: every drawn request parses back in its revision, every command
and real-only form is drawn, and drawn replies read back."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.fuzz.draw import draw
from conformance.protocols.v1line import codec, strategies
from conformance.protocols.v1line.commands import (
    COMMANDS,
    REVISIONS,
    ErrReply,
    KeyValue,
    OkReply,
    Request,
    Revision,
)
from conformance.protocols.v1line.errors import V1LineError


@given(strategies.requests())
def test_a_drawn_request_encodes_and_parses_back_in_both_revisions(request: Request) -> None:
    line = codec.encode(request)
    for revision in REVISIONS:
        assert codec.parse_request(line, revision=revision) == request


@pytest.mark.parametrize("command", list(COMMANDS))
def test_each_command_draws_its_own_requests(command: str) -> None:
    for i in range(20):
        request = draw(f"t:{command}:{i}", strategies.requests(command))
        assert request.command == command
        assert len(request.args) == len(COMMANDS[command].arg_names)


@pytest.mark.parametrize("revision", REVISIONS)
@given(data=st.data())
def test_a_drawn_line_parses_to_its_request_in_its_revision(
    revision: Revision, data: st.DataObject
) -> None:
    line, request = data.draw(strategies.request_lines(revision))
    assert b"\n" not in line
    assert codec.parse_request(line, revision=revision) == request


@given(strategies.requests(), st.data())
def test_real_writes_the_drawn_request_except_a_bar_in_the_value(
    request: Request, data: st.DataObject
) -> None:
    _line, parsed = data.draw(strategies.written(request, "real"))
    if request.command == "PRODUCE" and parsed != request:
        message = parsed.arg("message")
        assert isinstance(message, KeyValue) and "|" in message.value
        assert parsed.arg("topic") == request.arg("topic")
    else:
        assert parsed == request


def test_real_lines_carry_what_only_real_reads() -> None:
    """Any case, tabs, padded sections and a | in a value: doc refuses some of them."""
    lines = [draw(f"r{i}", strategies.request_lines("real"))[0] for i in range(300)]
    assert any(b"\t" in line for line in lines)
    assert any(line.startswith((b" ", b"\t")) for line in lines)
    commands = [line.split(b"|")[2].strip() for line in lines if line.count(b"|") >= 3]
    assert any(c != c.upper() for c in commands)
    refused = 0
    for line in lines:
        try:
            codec.parse_request(line, revision="doc")
        except V1LineError:
            refused += 1
    assert 50 < refused < 250  # about half are written as doc writes them


def test_doc_lines_are_as_encode_writes_them() -> None:
    for i in range(100):
        line, request = draw(f"d{i}", strategies.request_lines("doc"))
        assert line + b"\n" == codec.encode(request)


def test_keys_may_be_empty_and_values_hold_colons() -> None:
    keys = [draw(f"k{i}", strategies.keys()) for i in range(300)]
    assert "" in keys and not any(":" in k for k in keys)
    values = [draw(f"v{i}", strategies.values()) for i in range(300)]
    assert "" in values


@given(strategies.tokens())
def test_a_token_is_one_field(token: str) -> None:
    assert token and token.split() == [token] and "|" not in token


@settings(max_examples=200)
@given(strategies.replies())
def test_a_drawn_reply_reads_back(drawn: tuple[bytes, OkReply | ErrReply]) -> None:
    line, reply = drawn
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert codec.parse_reply(line) == reply
    assert codec.encode_reply(reply) == line


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_drawn_success_payload_decodes_to_its_values(command: str) -> None:
    for i in range(20):
        values = draw(f"p:{command}:{i}", strategies.payload_values(command))
        line = codec.encode_result("1", command, values)
        reply = codec.parse_reply(line)
        assert isinstance(reply, OkReply)
        if reply.payload is None:
            assert values == {}
        else:
            assert codec.decode_payload(command, reply.payload) == values
