"""The mini-Kafka golden vectors (vectors/minikafka/*.yaml) against the reference broker, and
what mini-Kafka's collection must hold.

What every protocol's vectors go through (loading, cited requirements, the deframer whole,
byte by byte and before the next frame, plain data and back, decode and encode) is in
tests/protocols/test_vectors.py.  Here: request vectors with a ``reply`` are sent to the
reference broker of their revision (both, for a vector without one): one broker per vector
FILE and revision, started on first use, each vector on a new connection after its own
``setup``.  A vector's reply is compared on the keys it gives, or the connection must close
with nothing written; a connection that was answered must go on serving (a FLUSH after it is
answered ``000000060601``).  The vectors of a file use distinct topics, so any subset runs
alone and in any order.  Then the collection (every type both ways, success and error, the
FACTS.md bytes) and the schema's own checks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from conformance.protocols.minikafka import codec
from conformance.protocols.minikafka import messages as m
from conformance.protocols.minikafka.vectors import (
    ERROR_NAMES,
    REVISIONS,
    SCHEMA,
    decode_request,
    setup_request,
)
from conformance.spec import requirements
from conformance.vectors import Vector, VectorError, load
from tests.support import broker
from tests.support.minikafka_wire import Closed, Conn

NAME = "minikafka"
VECTORS = load(NAME)
WITH_REPLY = [
    (v, rev)
    for v in VECTORS
    if v.reply is not None
    for rev in ((v.extras["revision"],) if "revision" in v.extras else REVISIONS)
]
FLUSH_FRAME = bytes.fromhex("0000000505")
FLUSH_REPLY = bytes.fromhex("000000060601")


def case_id(case: tuple[Vector, str]) -> str:
    return f"{case[0].id}@{case[1]}"


# ------------------------------------------------------------------ the broker


@pytest.fixture(scope="module")
def broker_for() -> Iterator[Callable[[str, str], broker.Broker]]:
    started: dict[tuple[str, str], broker.Broker] = {}
    with ExitStack() as stack:

        def get(file: str, revision: str) -> broker.Broker:
            if (file, revision) not in started:
                served = broker.running("--revision", revision, protocol=NAME)
                started[file, revision] = stack.enter_context(served)
            return started[file, revision]

        yield get


def run_setup(conn: Conn, v: Vector) -> None:
    for step in v.setup:
        conn.send(codec.frame(setup_request(step)) if isinstance(step, str) else step)
        got = conn.reply()
        assert not isinstance(got, codec.Failure), f"setup step {step!r} of {v.id} failed: {got}"


@pytest.mark.parametrize("case", WITH_REPLY, ids=case_id)
def test_broker_reply(case: tuple[Vector, str], broker_for: Callable[[str, str], Any]) -> None:
    v, revision = case
    b = broker_for(v.file, revision)
    assert v.reply is not None
    with Conn(b.host, b.port) as conn:
        run_setup(conn, v)
        conn.send(v.frame)
        if v.reply.get("closed"):
            assert conn.closed_within(5.0), f"{v.id}: expected the connection closed"
            assert conn.buf == b"", f"{v.id}: expected nothing written, got {conn.buf.hex()}"
            return
        try:
            payload = conn.read_frame()
        except Closed as exc:
            pytest.fail(f"{v.id}: the broker closed the connection ({exc})")
        problems = SCHEMA.reply_mismatch(v.reply, payload, v.payload)
        assert problems is None, f"{v.id} in {revision}: {problems}\n  full reply: {payload.hex()}"
        conn.send(FLUSH_FRAME)  # the connection goes on serving (MK-ERR-2, MK-FRAME-3)
        assert conn.read_exactly(len(FLUSH_REPLY)) == FLUSH_REPLY, v.id


def _topics(payloads: list[bytes], revision: str) -> list[str]:
    out = []
    for p in payloads:
        try:
            request = decode_request(p, revision).message
        except codec.MiniKafkaError:
            continue
        if isinstance(request, codec.Consume | codec.Produce):
            out.append(str(request.topic))
    return out


def test_vector_topics_do_not_collide_within_a_file() -> None:
    """A broker is shared per file and revision: two vectors must not use the same topic
    (topics that are not UTF-8 read as the revision reads them: U+FFFD in real)."""
    owner: dict[tuple[str, str, str], str] = {}
    for v, revision in WITH_REPLY:
        payloads = [
            setup_request(s) if isinstance(s, str) else codec.new_deframer().feed(s)[0]
            for s in v.setup
        ]
        for topic in set(_topics([*payloads, v.payload], revision)):
            first = owner.setdefault((v.file, revision, topic), v.id)
            assert first == v.id, f"{v.file}: topic {topic!r} is used by {first} and {v.id}"


# ------------------------------------------------------------- the collection


def test_there_are_enough_vectors_by_area() -> None:
    assert len(VECTORS) >= 30
    assert {v.file for v in VECTORS} == {
        f"{a}.yaml" for a in ("framing", "produce", "consume", "flush", "errors")
    }
    assert sum(v.direction == "request" for v in VECTORS) >= 20
    assert sum(v.direction == "reply" for v in VECTORS) >= 10
    assert sum(v.reply is not None for v in VECTORS) >= 25


def test_every_type_has_vectors_both_ways_on_both_paths() -> None:
    requests = {v.decoded["type"] for v in VECTORS if v.direction == "request" and v.decoded}
    assert requests == {"consume", "produce", "flush"}
    replies = {
        (v.decoded["type"], v.decoded["success"])
        for v in VECTORS
        if v.direction == "reply" and v.decoded
    }
    assert replies == {(t, ok) for t in requests for ok in (True, False)}
    answered = {(v.reply.get("type"), v.reply.get("success")) for v in VECTORS if v.reply}
    assert {
        ("consume", True),
        ("consume", False),
        ("produce", True),
        ("produce", False),
    } <= answered
    assert ("flush", True) in answered and (None, None) in answered  # closed


def test_every_error_code_and_revision_is_used() -> None:
    assert {v.error for v in VECTORS if v.error} == set(ERROR_NAMES)
    assert {v.extras.get("revision") for v in VECTORS} == {None, "doc", "real"}
    assert any(v.truncated and not v.error for v in VECTORS)


def test_every_vector_says_where_its_bytes_come_from() -> None:
    sources = ("seed l.", "FACTS.md", "SPEC.md", "DESIGN.md")
    assert [v.id for v in VECTORS if not any(s in v.description for s in sources)] == []


def test_a_revision_bound_request_cites_a_requirement_of_its_revision() -> None:
    known = requirements(NAME)
    for v in VECTORS:
        rev = v.extras.get("revision")
        if rev and v.direction == "request":
            assert any(rev in known[r].revisions for r in v.requirements), v.id


@pytest.mark.parametrize(
    ("direction", "frame"),
    [
        ("request", "0000000505"),  # DESIGN.md, FACTS.md 1.3
        ("reply", "000000060601"),
        ("request", "00000021 01 00000002 6162 0000000000000003 00000007" + "00" * 10),  # 2.3
        (
            "reply",  # FACTS.md 2.8
            "0000002c 02 01 0000000000000002 00000002 00000002 0000000000000000 6869"
            " 00000000 0000000000000001",
        ),
        ("reply", "00000012 02 01 0000000000000001 00000000"),  # 2.11, unknown topic in real
        ("reply", "0000000e 04 01 0000000000000000"),  # 2.6
        ("reply", "0000000d 02 00 00000003 657272"),  # 2.9
        ("request", "00000004"),
        ("request", "00000003"),
        ("request", "00000000"),
    ],
)
def test_the_facts_are_vectors_byte_for_byte(direction: str, frame: str) -> None:
    want = bytes.fromhex(frame.replace(" ", ""))
    assert any(v.frame == want and v.direction == direction for v in VECTORS), frame


def test_a_refused_request_is_answered_by_its_type_or_closed() -> None:
    """A BAD_REQUEST names the error reply of its own type; a frame with no type byte or
    an unknown one names a closed connection."""
    for v in VECTORS:
        if v.direction != "request" or v.error is None:
            continue
        assert v.reply is not None, f"{v.id}: a refused request names its reply"
        if v.error == "BAD_REQUEST":
            with pytest.raises(codec.MiniKafkaError) as info:
                SCHEMA.decode(v.payload, "request", v.extras)
            assert info.value.type is not None
            assert v.reply["type"] == {1: "consume", 3: "produce", 5: "flush"}[info.value.type]
            assert v.reply["success"] is False, v.id
        else:
            assert v.reply == {"closed": True}, v.id


# ------------------------------------------------------------------ the schema


def test_reply_mismatch_compares_on_the_keys_given() -> None:
    ok = codec.encode_reply(codec.ConsumeOk(4, (codec.Consumed(3, b"m3"),)))
    consume = codec.encode_request(codec.Consume("ab", 3, 7))
    assert SCHEMA.reply_mismatch({"type": "consume", "success": True}, ok, consume) is None
    full = {"type": "consume", "success": True, "next_offset": 4}
    full["messages"] = [{"offset": 3, "data": {"hex": "6d33"}}]  # hex of printable: normalised
    assert SCHEMA.reply_mismatch(full, ok, consume) is None
    wrong = SCHEMA.reply_mismatch({**full, "next_offset": 5}, ok, consume)
    assert wrong is not None and "next_offset: expected 5, got 4" in wrong
    produce = codec.encode_request(codec.Produce("t", b""))
    answered = SCHEMA.reply_mismatch({"type": "consume", "success": True}, ok, produce)
    assert answered is not None and "does not answer 0x03" in answered
    closed = SCHEMA.reply_mismatch({"closed": True}, ok, consume)
    assert closed is not None and "expected the connection closed" in closed
    broken = SCHEMA.reply_mismatch({"type": "flush", "success": True}, b"\x06", FLUSH_FRAME[4:])
    assert broken is not None and "does not decode" in broken


def test_setup_steps() -> None:
    assert setup_request("flush") == bytes([m.FLUSH_REQUEST])
    assert setup_request("produce t hi") == codec.encode_request(codec.Produce("t", b"hi"))
    assert setup_request("produce t") == codec.encode_request(codec.Produce("t", b""))
    for bad in ("produce", "produce  x", "consume t 0 1", "flush now", "produce t a b"):
        with pytest.raises(ValueError, match="neither"):
            setup_request(bad)


GOOD = """\
- id: minikafka/t/flush
  requirements: [MK-FLUSH-1]
  direction: request
  description: FLUSH
  hex: 00000005 05
  decoded: {type: flush}
  reply: {type: flush, success: true}
"""


def write(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / NAME
    folder.mkdir(exist_ok=True)
    (folder / "a.yaml").write_text(text, encoding="utf-8")
    return tmp_path


def test_loader_accepts_a_good_vector(tmp_path: Path) -> None:
    (v,) = load(NAME, write(tmp_path, GOOD))
    assert v.payload == b"\x05" and SCHEMA.from_message(v.message) == {"type": "flush"}


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (GOOD.replace("type: flush}\n  reply", "type: fetch}\n  reply"), ["'decoded'", "fetch"]),
        (GOOD.replace("{type: flush}", "{type: flush, topic: t}"), ["'decoded'", "'topic'"]),
        (GOOD.replace("{type: flush}", "{type: flush, success: true}"), ["'decoded'", "reply"]),
        (GOOD.replace("{type: flush}", "{type: flush, trailing: -1}"), ["'decoded'", "count"]),
        (GOOD + "  revision: spec\n", ["'revision'", "'spec'"]),
        (GOOD + "  setup: [consume t]\n", ["'setup'", "neither"]),
        (GOOD.replace("success: true}", "success: 1}"), ["'reply'", "true or false"]),
        (GOOD.replace("success: true}", "success: true, offset: 1}"), ["'reply'", "'offset'"]),
        (GOOD.replace("reply: {", "reply: {closed: true, "), ["'reply'", "alone"]),
        (GOOD.replace("  decoded: {type: flush}\n", "  error: NOPE\n"), ["'error'", "'NOPE'"]),
    ],
    ids=[
        "unknown-type",
        "flush-topic",
        "request-as-reply",
        "negative-trailing",
        "bad-revision",
        "bad-setup",
        "bad-success",
        "flush-offset",
        "closed-not-alone",
        "bad-error-code",
    ],
)
def test_loader_rejects_a_bad_vector(tmp_path: Path, text: str, words: list[str]) -> None:
    with pytest.raises(VectorError) as info:
        load(NAME, write(tmp_path, text))
    for word in words:
        assert word in str(info.value), f"{word!r} not in {info.value}"
