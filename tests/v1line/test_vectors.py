"""The V1 line golden vectors (vectors/v1line/*.yaml).

They load through the generic loader (conformance/vectors.py) with the registered plug-in's
framing (:data:`.codec.FRAMING`) and vector schema, and go through
the checks tests/protocols/test_vectors.py gives every registered protocol: the deframer
whole, one byte at a time and followed by the next frame; plain data and back; each
payload decoded to its ``decoded`` message (in its revision, or alike in both) or refused
with its error, and encoded back to its bytes.  Beyond that: a refused request's
``reply`` is the reply line the codec's error answers with (correlation id 0 for an
envelope error, the request's own otherwise); every requirement cited is in SPEC.md;
every command has a request and a reply vector; the areas and counts the brief names.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance import protocols
from conformance.errors import FrameTooLarge, ProtocolError
from conformance.plugin import Plugin
from conformance.protocols.v1line import codec
from conformance.protocols.v1line.commands import COMMANDS, REVISIONS
from conformance.protocols.v1line.errors import V1LineError
from conformance.protocols.v1line.vectors import SCHEMA, from_message
from conformance.spec import parse
from conformance.vectors import VECTOR_ROOT, Vector, load

NAME = "v1line"
SPEC = Path(codec.__file__).with_name("SPEC.md")
AREAS = ("envelope", "produce", "consume", "replication", "groups", "offsets", "ping", "errors")


@pytest.fixture(scope="module")
def plugin() -> Plugin:
    return protocols.get(NAME)


@pytest.fixture(scope="module")
def vectors(plugin: Plugin) -> list[Vector]:
    return load(NAME)


def _revisions(v: Vector) -> tuple[str, ...]:
    rev = v.extras.get("revision")
    return (rev,) if rev else REVISIONS


# ----------------------------------------------------------------- the collection


def test_the_vectors_load_by_area(vectors: list[Vector]) -> None:
    assert {v.file for v in vectors} == {f"{a}.yaml" for a in AREAS}
    assert sorted(p.name for p in (VECTOR_ROOT / NAME).iterdir()) == sorted(
        f"{a}.yaml" for a in AREAS
    )
    assert len(vectors) >= 50
    assert len({v.id for v in vectors}) == len(vectors)
    assert all(v.id.startswith(f"{NAME}/") for v in vectors)


def test_every_vector_cites_requirements_of_spec_md(vectors: list[Vector]) -> None:
    known = parse(SPEC.read_text(encoding="utf-8"))
    unknown = {(v.id, r) for v in vectors for r in v.requirements if r not in known}
    assert unknown == set()
    for v in vectors:  # a revision-bound vector cites requirements of its revision
        rev = v.extras.get("revision")
        if rev and v.direction == "request":
            assert any(rev in known[r].revisions for r in v.requirements), v.id


def test_every_vector_says_where_its_bytes_come_from(vectors: list[Vector]) -> None:
    sources = ("seed l.", "FACTS.md", "SPEC", "DESIGN")
    assert all(any(s in v.description for s in sources) for v in vectors)


def test_every_command_has_a_request_and_a_reply(vectors: list[Vector]) -> None:
    requests = {v.decoded["command"] for v in vectors if v.direction == "request" and v.decoded}
    replies = {v.extras.get("command") for v in vectors if v.direction == "reply"}
    assert set(COMMANDS) <= requests
    assert set(COMMANDS) <= replies


def test_what_the_brief_names_is_there(vectors: list[Vector]) -> None:
    errors = {v.error for v in vectors}
    assert {"BAD_REQUEST", "UNKNOWN_COMMAND", "BAD_REPLY", "FRAME_TOO_LARGE"} <= errors
    assert {v.extras.get("revision") for v in vectors} == {None, "doc", "real"}
    codes = {v.decoded.get("code") for v in vectors if v.direction == "reply" and v.decoded}
    assert set(codes) >= {
        "BAD_REQUEST",
        "UNKNOWN_COMMAND",
        "REPLICATION_TIMEOUT",
        "NOT_LEADER",
        "GENERATION_MISMATCH",
    }
    corrs = {v.reply["correlation_id"] for v in vectors if v.reply and v.error == "BAD_REQUEST"}
    assert "0" in corrs and len(corrs) > 1  # envelope errors and argument errors
    assert any(v.truncated and not v.error for v in vectors)


# ----------------------------------------------------------------- the deframer


def test_deframe_whole_and_byte_by_byte(plugin: Plugin, vectors: list[Vector]) -> None:
    for v in vectors:
        whole = plugin.framing.deframer(v.direction)
        if v.truncated and v.error:
            with pytest.raises(FrameTooLarge):
                whole.feed(v.frame)
            with pytest.raises(ProtocolError):  # poisoned
                whole.feed(b"")
        elif v.truncated:
            assert whole.feed(v.frame) == [] and whole.error is None, v.id
        else:
            assert whole.feed(v.frame) == [v.payload], v.id
            assert whole.buffered == 0, v.id
        d = plugin.framing.deframer(v.direction)
        got: list[bytes] = []
        last = len(v.frame) - 1
        for i in range(len(v.frame)):
            byte = v.frame[i : i + 1]
            if v.truncated and v.error and i == last:
                with pytest.raises(ProtocolError):
                    d.feed(byte)
                break
            got += d.feed(byte)
            assert i == last or got == [], f"{v.id}: a line came out after {i + 1} bytes"
        else:
            assert got == ([] if v.truncated else [v.payload]), v.id


def test_deframe_followed_by_the_next_frame(plugin: Plugin, vectors: list[Vector]) -> None:
    for v in vectors:
        if v.truncated:
            continue
        d = plugin.framing.deframer(v.direction)
        half = len(v.frame) // 2
        assert d.feed(v.frame + v.frame[:half]) == [v.payload], v.id
        assert d.feed(v.frame[half:]) == [v.payload], v.id
        assert d.buffered == 0, v.id


# ---------------------------------------------------------------------- the codec


def test_plain_data_round_trip(vectors: list[Vector]) -> None:
    for v in vectors:
        if v.decoded is not None:
            plain = from_message(v.message)
            assert from_message(SCHEMA.to_message(plain)) == plain, v.id


def test_decode(vectors: list[Vector]) -> None:
    """Each line decodes to ``decoded`` (or is refused with its error) in its revision, or
    alike in both; the schema's own decode agrees."""
    for v in vectors:
        if v.truncated:
            continue
        if v.error is not None:
            with pytest.raises(ProtocolError) as info:
                SCHEMA.decode(v.payload, v.direction, v.extras)
            assert SCHEMA.error_name(info.value) == v.error, f"{v.id}: {info.value}"
            continue
        assert v.decoded is not None, v.id
        got = SCHEMA.decode(v.payload, v.direction, v.extras)
        assert from_message(got) == from_message(v.message), v.id
        if v.direction == "request":
            for rev in _revisions(v):
                parsed = codec.parse_request(v.payload, revision=rev)  # type: ignore[arg-type]
                assert parsed == v.message, f"{v.id} in {rev}"


def test_a_refused_request_is_answered_with_its_reply(vectors: list[Vector]) -> None:
    """The reply a refused request names is the codec's reply line for it, in every
    revision the vector holds in."""
    refused = [v for v in vectors if v.direction == "request" and v.error and not v.truncated]
    assert len(refused) >= 20
    for v in refused:
        assert v.reply is not None, f"{v.id}: a refused request names its reply"
        for rev in _revisions(v):
            with pytest.raises(V1LineError) as info:
                codec.parse_request(v.payload, revision=rev)  # type: ignore[arg-type]
            line = info.value.reply_line()
            assert line.endswith(b"\n"), v.id
            got = SCHEMA.decode(line[:-1], "reply", {})
            assert got == dict(v.reply), f"{v.id} in {rev}"
            assert SCHEMA.reply_mismatch(v.reply, line[:-1], v.payload) is None, v.id


def test_encode(plugin: Plugin, vectors: list[Vector]) -> None:
    for v in vectors:
        if v.decoded is None:
            continue
        payload = SCHEMA.encode(v.message, v.direction, v.extras)
        if v.encode_exact:
            assert plugin.framing.frame(payload, v.direction) == v.frame, v.id
        else:
            again = SCHEMA.decode(payload, v.direction, v.extras)
            assert from_message(again) == from_message(v.message), v.id


def test_codec_encoders_write_the_same_lines(vectors: list[Vector]) -> None:
    """The codec's own encoders (not through the schema) give the hand-written bytes."""
    for v in vectors:
        if v.decoded is None or not v.encode_exact:
            continue
        if v.direction == "request":
            if b"|" in v.payload.split(b"|", 3)[3]:
                continue  # real only: codec.encode refuses a | in a value, as it should
            assert codec.encode(v.message) == v.frame, v.id
        else:
            assert codec.encode_reply(codec.parse_reply(v.payload)) == v.frame, v.id
