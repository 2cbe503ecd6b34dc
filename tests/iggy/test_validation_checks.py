"""The Iggy client checker without a broker: what one connection's requests and replies
make it find (sans-IO, frames built with tests/support/iggy_validation.py)."""

from __future__ import annotations

import struct

import pytest

from conformance.protocols.iggy.validation import IggyValidation
from conformance.protocols.iggy.validation_checks import IggyChecker
from conformance.protocols.iggy.validation_fields import user_headers_problem
from tests.support import iggy_validation as wire

OK = struct.pack("<I", 0)


def frame(code: int, body: bytes = b"") -> bytes:
    """A request as the deframer hands it out: ``u32 code + payload``."""
    return struct.pack("<I", code) + body


def status(code: int) -> bytes:
    return struct.pack("<I", code)


def broken(checker: IggyChecker, request: bytes) -> list[str]:
    return [v.requirement for v in checker.request(request, 0.0).violations]


def exchange(checker: IggyChecker, request: bytes, reply: bytes = OK) -> list[str]:
    found = broken(checker, request)
    checker.reply(reply, request)
    return found


@pytest.fixture
def checker() -> IggyChecker:
    return IggyValidation("classic").connection(1)


def test_the_login_gate_opens_on_a_zero_status_and_closes_again(checker: IggyChecker) -> None:
    streams = frame(wire.GET_STREAMS)
    assert exchange(checker, frame(wire.PING)) == []
    assert exchange(checker, streams, status(40)) == ["IGG-CLI-7"]
    login = frame(wire.LOGIN_USER, wire.login_body())
    assert exchange(checker, login, status(42)) == []  # refused: still logged out
    assert exchange(checker, streams, status(40)) == ["IGG-CLI-7"]
    assert exchange(checker, login) == []
    assert exchange(checker, streams) == []
    assert exchange(checker, streams, status(40)) == []  # a 40 logs the connection out
    assert exchange(checker, streams, status(40)) == ["IGG-CLI-7"]
    assert exchange(checker, login) == []
    assert exchange(checker, frame(wire.LOGOUT_USER)) == []
    assert exchange(checker, streams, status(40)) == ["IGG-CLI-7"]


def test_a_login_counts_on_its_own_connection_only() -> None:
    validation = IggyValidation("classic")
    first, second = validation.connection(1), validation.connection(2)
    assert exchange(first, frame(wire.LOGIN_USER, wire.login_body())) == []
    assert exchange(second, frame(wire.GET_STREAMS), status(40)) == ["IGG-CLI-7"]


def test_the_fourth_identical_request_after_three_identical_errors(checker: IggyChecker) -> None:
    exchange(checker, frame(wire.LOGIN_USER, wire.login_body()))
    delete = frame(203, wire.ident("nope"))
    assert [exchange(checker, delete, status(1009)) for _ in range(3)] == [[], [], []]
    assert exchange(checker, delete, status(1009)) == ["IGG-CLI-13"]
    assert exchange(checker, delete) == ["IGG-CLI-13"]  # the fifth too; then it succeeded
    assert exchange(checker, delete, status(1009)) == []
    other = frame(203, wire.ident("other"))
    assert [exchange(checker, other, status(s)) for s in (1009, 1, 1009, 1009)] == [[]] * 4


def test_partitions_are_judged_by_what_the_topic_was_described_with() -> None:
    validation = IggyValidation("classic")
    c = validation.connection(1)
    exchange(c, frame(wire.LOGIN_USER, wire.login_body()))
    send = frame(wire.SEND_MESSAGES, wire.send_body("s", "t", 2, [wire.message(b"x")]))
    assert exchange(c, send) == [], "nothing known of topic s/t: not judged"
    stream = struct.pack("<IQIQQ", 4, 0, 0, 0, 0) + wire.name("s")
    exchange(c, frame(wire.GET_STREAM, wire.ident("s")), OK + stream)
    topic = struct.pack("<IQIQBQBQQ", 9, 0, 2, 0, 1, 0, 0, 0, 0) + wire.name("t")
    exchange(c, frame(wire.GET_TOPIC, wire.ident("s") + wire.ident("t")), OK + topic)
    assert exchange(c, send, status(3007)) == ["IGG-CLI-12"]
    other = validation.connection(2)  # the same topic named by its ids, elsewhere
    exchange(other, frame(wire.LOGIN_USER, wire.login_body()))
    assert exchange(other, frame(wire.POLL_MESSAGES, wire.poll_body(4, 9, 1))) == []
    assert exchange(other, frame(wire.POLL_MESSAGES, wire.poll_body(4, 9, 2))) == ["IGG-CLI-12"]
    more = wire.ident("s") + wire.ident("t") + struct.pack("<I", 1)
    exchange(other, frame(402, more))  # CREATE_PARTITIONS 1: now 3
    assert exchange(c, send) == []


@pytest.mark.parametrize(
    ("block", "problem"),
    [
        (b"", None),
        (wire.header_entry(b"k", b"v"), None),
        (wire.header_entry(b"k", b"v", key_kind=16), "entry 0's key kind is 16 (1 to 15)"),
        (wire.header_entry(b"k", b"v", value_kind=0), "entry 0's value kind is 0 (1 to 15)"),
        (wire.header_entry(b"", b"v"), "entry 0's key is 0 bytes long (1 to 255)"),
        (wire.header_entry(b"k", b"v")[:-1], "entry 0's value runs past the block"),
        (wire.header_entry(b"k", b"v") + b"\x02", "entry 1's key kind and length run past"),
    ],
)
def test_user_header_blocks(block: bytes, problem: str | None) -> None:
    found = user_headers_problem(block)
    assert found == problem if problem is None else found is not None and problem in found


def test_doc_reads_the_seed_layouts() -> None:
    c = IggyValidation("doc").connection(1)
    doc_poll = b"\x01" + struct.pack("<I", 0) + wire.ident("s") + wire.ident("t")
    doc_poll += struct.pack("<IBQIB", 0, 7, 0, 10, 0)  # partition 0, strategy 7
    assert exchange(c, frame(wire.POLL_MESSAGES, doc_poll)) == ["IGG-CLI-10"]
    empty = wire.ident("s") + wire.ident("t") + b"\x02\x04" + struct.pack("<I", 0)
    assert exchange(c, frame(wire.SEND_MESSAGES, empty)) == ["IGG-CLI-8"]
    assert exchange(c, frame(wire.LOGIN_USER, wire.login_body())) == ["IGG-CLI-3"]
    assert exchange(c, frame(wire.GET_STREAMS)) == [], "no login in doc"


@pytest.mark.parametrize(
    ("body", "requirement"),
    [
        (wire.ident("s") + b"\x02\x05ab", "IGG-CLI-4"),  # GET_TOPIC: the topic cut short
        (b"\x02\x02\xff\xfe", "IGG-CLI-5"),  # GET_STREAM: a string Identifier, not UTF-8
        (b"\x07\x04\x01\x00\x00\x00", "IGG-CLI-5"),  # GET_STREAM: an Identifier of kind 7
        (b"\x01\x04\x01\x00\x00\x00zz", "IGG-CLI-4"),  # GET_STREAM: 2 bytes after it
    ],
)
def test_what_does_not_decode_is_blamed_on_the_field(
    checker: IggyChecker, body: bytes, requirement: str
) -> None:
    exchange(checker, frame(wire.LOGIN_USER, wire.login_body()))
    code = wire.GET_TOPIC if body.startswith(b"\x02\x01s") else wire.GET_STREAM
    assert exchange(checker, frame(code, body), status(3)) == [requirement]


def test_a_send_whose_index_or_partitioning_is_wrong_breaks_the_message_rules(
    checker: IggyChecker,
) -> None:
    exchange(checker, frame(wire.LOGIN_USER, wire.login_body()))
    good = wire.send_body("s", "t", 0, [wire.message(b"x")])
    meta = 4 + len(wire.ident("s") + wire.ident("t")) + 6 + 4
    bad_index = bytearray(good)
    bad_index[meta] = 1  # the index entry's first u32 is not 0
    assert exchange(checker, frame(wire.SEND_MESSAGES, bytes(bad_index))) == ["IGG-CLI-8"]
    bad_kind = bytearray(good)
    bad_kind[4 + len(wire.ident("s") + wire.ident("t"))] = 4  # Partitioning kind 4
    assert exchange(checker, frame(wire.SEND_MESSAGES, bytes(bad_kind))) == ["IGG-CLI-8"]
    empty_name = frame(wire.LOGIN_USER, wire.name("") + wire.name("pw") + bytes(8))
    assert exchange(checker, empty_name) == ["IGG-CLI-6"]


def test_group_errors_answer_group_consumers_only() -> None:
    validation = IggyValidation("classic")
    plain = frame(wire.POLL_MESSAGES, wire.poll_body("s", "t", 0))
    group = frame(wire.POLL_MESSAGES, b"\x02" + wire.poll_body("s", "t", 0)[1:])
    assert validation.error_reply(plain, "CONSUMER_GROUP_MEMBER_NOT_FOUND") is None
    assert validation.error_reply(group, "CONSUMER_GROUP_MEMBER_NOT_FOUND") == status(5006)
    assert validation.errors["CONSUMER_GROUP_MEMBER_NOT_FOUND"].requirement == "IGG-CLI-16"
