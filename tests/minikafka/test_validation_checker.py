"""The mini-Kafka client checker alone (sans-IO): what it names for each frame, per revision.

Its oracle, first: whatever bytes a client sends, the checker returns what it saw without
raising, names only requirements of the revision served, and lists every requirement it
names as broken among those it checked.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.protocols.minikafka import codec
from conformance.protocols.minikafka.validation import ERRORS, MiniKafkaValidation
from conformance.spec import client_requirements


def ids_of(revision: str) -> set[str]:
    return {r.id for r in client_requirements("minikafka").values() if revision in r.revisions}


@pytest.mark.parametrize("revision", ["doc", "real"])
@settings(max_examples=300, deadline=None)
@given(payloads=st.lists(st.binary(max_size=64), max_size=6))
def test_any_bytes_are_seen_without_raising(revision: str, payloads: list[bytes]) -> None:
    checker = MiniKafkaValidation(revision).connection(1)
    ids = ids_of(revision)
    for payload in payloads:
        seen = checker.request(payload, 0.0)
        broken = {v.requirement for v in seen.violations}
        assert broken <= ids and set(seen.checked) <= ids, (payload.hex(), broken)
        assert broken <= set(seen.checked) or seen.kind == "UNKNOWN", (payload.hex(), seen)
        checker.reply(payload, payload)
    assert checker.closed(1.0) == []


REAL = [
    ("the real client's padding", codec.Consume("t", 0, 1), bytes(7), set()),
    ("non-zero bytes after a CONSUME", codec.Consume("t", 0, 1), b"\x00\x01", {"MK-CLI-4"}),
    ("bytes after a PRODUCE", codec.Produce("t", b"x"), bytes(2), {"MK-CLI-4"}),
    ("bytes after a FLUSH", codec.Flush(), bytes(1), {"MK-CLI-4"}),
    ("a topic not UTF-8", codec.Produce(b"\xfe", b"x"), b"", {"MK-CLI-9"}),
    ("a negative offset", codec.Consume("t", -5, 1), b"", {"MK-CLI-10"}),
]


@pytest.mark.parametrize(("what", "request_", "tail", "broken"), REAL, ids=[r[0] for r in REAL])
def test_in_real_the_padding_is_allowed_and_other_tails_are_named(
    what: str, request_: codec.Request, tail: bytes, broken: set[str]
) -> None:
    seen = (
        MiniKafkaValidation("real")
        .connection(1)
        .request(codec.encode_request(request_) + tail, 0.0)
    )
    assert {v.requirement for v in seen.violations} == broken, (what, seen.violations)


def test_in_doc_the_padding_breaks_mk_cli_3_naming_its_bytes() -> None:
    payload = codec.encode_request(codec.Consume("ab", 3, 7)) + bytes(10)  # FACTS.md 2.3
    (v,) = MiniKafkaValidation("doc").connection(1).request(payload, 0.0).violations
    assert (v.requirement, v.fields) == ("MK-CLI-3", ("trailing bytes",))
    assert v.message == (
        "CONSUME carries 10 bytes after its last field, all zero: 3N+4 for its topic of N=2 "
        "bytes, as the real client pads (FACTS.md 2.3)"
    )


def test_reading_on_follows_the_replies_of_the_connection() -> None:
    """MK-CLI-12: after messages, the next offset; after an empty read (next offset 1 in
    ``real``), the same offset again; an error reply changes nothing."""
    checker = MiniKafkaValidation("real").connection(1)

    def consume(offset: int, reply: codec.Reply) -> set[str]:
        payload = codec.encode_request(codec.Consume("t", offset, 2))
        seen = checker.request(payload, 0.0)
        checker.reply(codec.encode_reply(reply), payload)
        return {v.requirement for v in seen.violations}

    two = (codec.Consumed(0, b"a"), codec.Consumed(1, b"b"))
    assert consume(0, codec.ConsumeOk(2, two)) == set()
    assert consume(2, codec.ConsumeOk(1)) == set()  # empty: real's next offset 1
    assert consume(2, codec.failure_for(0x01, "unknown topic 't'")) == set()
    assert consume(2, codec.ConsumeOk(3, (codec.Consumed(2, b"c"),))) == set()
    assert consume(1, codec.ConsumeOk(1)) == {"MK-CLI-12"}  # reads 1 and 2 again
    fresh = MiniKafkaValidation("real").connection(2)
    assert fresh.request(codec.encode_request(codec.Consume("t", 7, 1)), 0.0).violations == []


def test_framing_errors_name_the_length_or_the_limit() -> None:
    checker = MiniKafkaValidation("doc").connection(1)
    small = checker.framing("length field 3 is smaller than its own 4 bytes")
    negative = checker.framing("frame length 2147483648 exceeds the limit of 8388608 bytes")
    large = checker.framing("frame length 9437184 exceeds the limit of 8388608 bytes")
    assert (small.requirement, negative.requirement, large.requirement) == (
        "MK-CLI-1",
        "MK-CLI-1",
        "MK-CLI-5",
    )
    assert negative.message == "length field -2147483648 is negative (an int32)"


def test_error_replies_fit_their_request_types_only() -> None:
    validation = MiniKafkaValidation("doc")
    consume = codec.encode_request(codec.Consume("orders", 3, 1))
    produce = codec.encode_request(codec.Produce("orders", b"x"))
    reply = validation.error_reply(consume, "UNKNOWN_TOPIC")
    assert reply is not None
    assert codec.decode_reply(reply) == codec.Failure(0x02, "unknown topic 'orders'")
    assert validation.error_reply(produce, "UNKNOWN_TOPIC") is None
    assert validation.error_reply(b"\x07", "UNKNOWN_TOPIC") is None
    assert codec.decode_reply(validation.error_reply(produce, "LOG_DIRECTORY_FAILED") or b"") == (
        codec.Failure(0x04, "Failed to create log directory: orders")
    )
    assert set(validation.errors) == set(ERRORS)
    assert all(e.requirement == "MK-CLI-16" for e in validation.errors.values())
