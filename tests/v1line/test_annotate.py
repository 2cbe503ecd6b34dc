"""The V1 line annotator: request fields named by the grammar, droppable args the minimizer
can cut, reply sections and payload keys, and no exception on any bytes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.annotation import annotate_payload
from conformance.fuzz.shrink import shrinks
from conformance.plugin import FieldSpan
from conformance.protocols import get
from conformance.protocols.v1line import codec, strategies
from conformance.protocols.v1line.annotate import annotate
from conformance.protocols.v1line.commands import REVISIONS, Revision
from conformance.protocols.v1line.errors import BadRequest, V1LineError


def fields(line: bytes, direction: str = "request") -> dict[str, FieldSpan]:
    return {f.name: f for f in annotate(line, direction, []).fields}


def spanned(line: bytes, f: FieldSpan) -> bytes:
    return line[f.start : f.end]


def test_request_fields_are_the_envelope_and_each_arg_by_its_name() -> None:
    line = b"V1|42|PRODUCE|orders user1:created acks=all"
    got = fields(line)
    assert list(got) == ["version", "correlation_id", "command", "topic", "message", "acks"]
    assert [got[n].value for n in got] == [
        "V1",
        "42",
        "PRODUCE",
        "orders",
        "user1:created",
        "acks=all",
    ]
    assert spanned(line, got["correlation_id"]) == b"42"
    assert spanned(line, got["command"]) == b"PRODUCE"
    assert not any(got[n].droppable for n in ("version", "correlation_id", "command"))


@pytest.mark.parametrize(
    ("line", "names"),
    [
        (b"V1|1|CONSUME|t 0 5", ("topic", "partition", "offset")),
        (b"V1|1|COMMIT|g t c 2 0 5", ("group", "topic", "consumer_id", "generation")),
        (b"V1|1|REPLICA_FETCH|t 0 1 5", ("topic", "partition", "replica_id", "offset")),
        (b"V1|1|SET_PARTITION_ROLE|t 0 leader", ("topic", "partition", "role")),
        (b"V1|1|JOIN|g t c assignor=range", ("group", "topic", "consumer_id", "assignor")),
    ],
)
def test_args_are_named_after_commands_py(line: bytes, names: tuple[str, ...]) -> None:
    assert tuple(fields(line))[3 : 3 + len(names)] == names


def test_a_real_line_splits_args_on_tabs_and_runs_of_spaces() -> None:
    line = b"V1|7|consume|t\t0  1"
    got = fields(line)
    assert [got[n].value for n in ("topic", "partition", "offset")] == ["t", "0", "1"]


def test_args_past_the_grammar_and_of_an_unknown_command_are_named_by_position() -> None:
    assert "arg 4" in fields(b"V1|1|CONSUME|t 0 5 9")
    assert [f.name for f in annotate(b"V1|1|NOPE|a b", "request", []).fields][3:] == [
        "arg 1",
        "arg 2",
    ]


@pytest.mark.parametrize(
    "line",
    [b"V1|9|COMMIT|g t c 2 0 5", b"V1|9|CONSUME|t\t0  1", b"V1|9|PRODUCE|t :v acks=1"],
)
def test_dropping_an_arg_leaves_the_others_separated_by_whitespace(line: bytes) -> None:
    spans = annotate(line, "request", []).fields
    args = [f for f in spans if f.droppable]
    for cut in shrinks(line, spans):
        head, _, rest = cut.rpartition(b"|")
        assert head == line.rpartition(b"|")[0]
        assert not rest[:1].isspace(), cut  # what is left starts with a token
        assert len(rest.split()) == len(args) - 1, cut


def test_a_shrink_of_a_crashing_consume_keeps_its_negative_offset_reachable() -> None:
    line = b"V1|123456|CONSUME|fuzz-read 1 -1 extra"
    smaller = shrinks(line, annotate(line, "request", []).fields)
    assert b"V1|123456|CONSUME|fuzz-read 1 -1" in smaller


def test_a_line_that_does_not_parse_is_still_split_and_summarized() -> None:
    got = annotate(b"V2|7|PING|", "request", [])
    assert got.summary.startswith("unparsed (BAD_REQUEST: unsupported version)")
    assert [f.name for f in got.fields] == ["version", "correlation_id", "command"]
    three = annotate(b"V1|7|PING", "request", [])
    assert [f.name for f in three.fields] == ["version", "correlation_id", "command"]


def test_reply_sections_and_payload_keys() -> None:
    line = b"V1|3|OK|replica=1 acked_offset=5 hw=3 isr=[0 1] under_replicated=false"
    got = fields(line, "reply")
    assert list(got) == [
        "version",
        "correlation_id",
        "status",
        "replica",
        "acked_offset",
        "hw",
        "isr",
        "under_replicated",
    ]
    assert got["status"].value == "OK"
    assert got["isr"].value == "[0 1]" and spanned(line, got["isr"]) == b"isr=[0 1]"
    assert got["hw"].value == "3"


def test_an_error_reply_has_its_code_and_whole_message() -> None:
    line = b"V1|0|ERR|BAD_REQUEST|expected format V1|<correlation_id>|<command>|<args>"
    got = fields(line, "reply")
    assert got["status"].value == "ERR"
    assert got["code"].value == "BAD_REQUEST"
    assert got["message"].value == "expected format V1|<correlation_id>|<command>|<args>"
    assert spanned(line, got["message"]) == got["message"].value.encode()


def test_a_payload_less_ok_and_an_empty_messages_field() -> None:
    assert list(fields(b"V1|5|OK", "reply")) == ["version", "correlation_id", "status"]
    got = fields(b"V1|5|OK|messages= hw=-1", "reply")
    assert (got["messages"].value, got["hw"].value) == ("", "-1")


def test_the_plugin_annotates_through_the_generic_entry_point() -> None:
    plugin = get("v1line")
    request = annotate_payload(plugin, b"V1|7|OFFSET|g t 0", "request")
    assert request.summary.startswith("OFFSET")
    reply = annotate_payload(plugin, b"V1|7|OK|offset=0\n", "reply", [b"V1|7|OFFSET|g t 0"])
    assert [f.name for f in reply.fields] == ["version", "correlation_id", "status", "offset"]


@pytest.mark.parametrize("revision", REVISIONS)
@given(data=st.data())
def test_every_drawn_request_is_annotated_with_its_parsed_args(
    revision: Revision, data: st.DataObject
) -> None:
    line, request = data.draw(strategies.request_lines(revision))
    got = annotate(line, "request", []).fields
    args = [f for f in got if f.droppable]
    if b"|" not in line.rpartition(b"|")[2] and revision == "doc":
        assert len(args) == len([a for a in request.args if a is not None])
    assert all(0 <= f.start <= f.end <= len(line) for f in got)


@given(st.binary(max_size=120), st.sampled_from(("request", "reply")))
def test_any_bytes_are_annotated_without_an_exception(payload: bytes, direction: str) -> None:
    got = annotate(payload, direction, [])
    assert all(0 <= f.start <= f.end <= len(payload) for f in got.fields)
    if direction == "request":
        try:
            codec.parse_request(payload, revision="real")
        except BadRequest as exc:  # a parse error; an args error is named by its command
            assert got.summary.startswith("unparsed") == (exc.stage == "envelope")
        except V1LineError:
            assert not got.summary.startswith("unparsed")


def test_a_line_our_broker_refuses_for_its_args_is_named_as_sent() -> None:
    """A negative CONSUME offset is a valid integer on the wire; the reference broker's
    refusal is said as its own, not as a line that does not parse."""
    got = annotate(b"V1|44|CONSUME|t 0 -1", "request", [])
    assert got.summary == "CONSUME V1|44|CONSUME|t 0 -1 (reference broker: invalid offset)"
