"""The Iggy golden vectors (vectors/iggy/*.yaml): what Iggy's collection must hold.

What every protocol's vectors go through (loading, cited requirements, the deframer whole,
byte by byte and before the next frame, plain data and back, decode and encode) is
tests/protocols/test_vectors.py; it runs here too, over Iggy's vectors alone, through
:func:`check_all`.  Beyond that: every frame the real
apache-iggy 0.8.0 client sent (tests/iggy/captured) is a vector with the very bytes; every
command the codec declares has a request vector and a reply vector; the user-header kinds,
partitioning kinds and refused frames the brief names are there; every vector cites
requirement IDs of SPEC.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance import protocols
from conformance.errors import ProtocolError
from conformance.plugin import Plugin
from conformance.protocols.iggy.messages import REQUESTS
from conformance.protocols.iggy.vectors import SCHEMA, from_message, to_message
from conformance.vectors import Vector, VectorError, load

CAPTURED = sorted((Path(__file__).parent / "captured").glob("*.yaml"))


@pytest.fixture(scope="module")
def plugin() -> Plugin:
    return protocols.get("iggy")


@pytest.fixture(scope="module")
def vectors(plugin: Plugin) -> list[Vector]:
    return load("iggy")


def test_the_vectors_load_by_area(vectors: list[Vector]) -> None:
    files = {v.file for v in vectors}
    areas = "framing login streams topics partitions send poll headers offsets groups system errors"
    assert {f"{a}.yaml" for a in areas.split()} <= files
    assert len(vectors) >= 60
    assert len({v.id for v in vectors}) == len(vectors)


def test_every_vector_decodes_and_encodes_to_its_bytes(
    plugin: Plugin, vectors: list[Vector]
) -> None:
    """tests/protocols/test_vectors.py's codec checks, for Iggy alone."""
    for v in vectors:
        d = plugin.framing.deframer(v.direction)
        if v.truncated:
            if v.error:
                with pytest.raises(ProtocolError):
                    d.feed(v.frame)
            else:
                assert d.feed(v.frame) == [], v.id
            continue
        assert d.feed(v.frame) == [v.payload], v.id
        if v.error is not None:
            with pytest.raises(ProtocolError) as info:
                SCHEMA.decode(v.payload, v.direction, v.extras)
            assert SCHEMA.error_name(info.value) == v.error, v.id
            continue
        assert v.decoded is not None, v.id
        message = to_message(v.decoded)
        assert from_message(to_message(from_message(message))) == from_message(message), v.id
        got = SCHEMA.decode(v.payload, v.direction, v.extras)
        assert from_message(got) == from_message(message), v.id
        payload = SCHEMA.encode(message, v.direction, v.extras)
        if v.encode_exact:
            assert plugin.framing.frame(payload, v.direction) == v.frame, v.id
        else:
            assert from_message(SCHEMA.decode(payload, v.direction, v.extras)) == from_message(
                message
            ), v.id


def test_every_captured_frame_is_a_vector_with_its_bytes(vectors: list[Vector]) -> None:
    by_file = {p.name: bytes.fromhex(yaml.safe_load(p.read_text())["hex"]) for p in CAPTURED}
    assert len(by_file) == 47
    for name, frame in by_file.items():
        found = [v for v in vectors if f"tests/iggy/captured/{name}" in v.description]
        assert len(found) == 1, name
        assert found[0].frame == frame and "apache-iggy 0.8.0" in found[0].description


def test_every_declared_command_has_a_request_and_a_reply(vectors: list[Vector]) -> None:
    requests = {v.decoded["command"] for v in vectors if v.direction == "request" and v.decoded}
    replies = {v.extras.get("command") for v in vectors if v.direction == "reply"}
    assert set(REQUESTS) <= requests
    assert set(REQUESTS) <= replies


def _messages(v: Vector) -> list[dict[str, Any]]:
    assert v.decoded is not None
    body = to_message(v.decoded)["body"] or {}
    return list(body.get("messages", ()))


def test_what_the_binding_cannot_send_is_there(vectors: list[Vector]) -> None:
    """User headers of every kind, balanced and messages-key partitioning, user ids."""
    sends = [v for v in vectors if v.decoded and v.decoded.get("command") == "send_messages"]
    kinds = {to_message(v.decoded)["body"]["partitioning"]["kind"] for v in sends if v.decoded}
    assert kinds == {1, 2, 3}
    assert any(m["id"] for v in sends for m in _messages(v))
    value_kinds = {
        e["value_kind"]
        for v in sends
        if v.decoded
        for m in v.decoded["body"]["messages"]
        if isinstance(m.get("headers"), list)
        for e in m["headers"]
    }
    assert value_kinds == set(range(1, 16))


def test_refused_frames_and_error_replies(vectors: list[Vector]) -> None:
    errors = {v.error for v in vectors if v.error}
    assert {"INVALID_COMMAND", "FRAME_TOO_LARGE"} <= errors
    statuses = {
        v.decoded["status"] for v in vectors if v.direction == "reply" and v.decoded is not None
    }
    assert {3, 40, 42, 1009, 1012, 2010, 2013, 3007, 4100, 5000, 5004, 5006} <= statuses
    for v in vectors:
        if v.direction == "reply" and v.decoded and v.decoded["status"] != 0:
            assert v.payload == v.frame[:4], f"{v.id}: an error reply has length 0"


def test_the_schema_refuses_what_is_not_iggy(plugin: Plugin, tmp_path: Path) -> None:
    bad = [
        {"decoded": {"command": "nope"}},
        {"decoded": {"status": 0, "body": {}}},  # a reply without its command
        {"command": "ping", "decoded": {"command": "ping"}},  # command on a request
        {"revision": "future", "decoded": {"command": "ping"}},
        {"error": "NO_SUCH_STATUS"},
    ]
    for i, extra in enumerate(bad):
        direction = "reply" if extra.get("decoded", {}).get("status") is not None else "request"
        if "command" in extra:
            direction = "request"
        vector = {
            "id": f"iggy/bad/v{i}",
            "requirements": ["IGG-FRAME-1"],
            "direction": direction,
            "description": "bad",
            "hex": "0400000001000000" if direction == "request" else "0000000000000000",
            **extra,
        }
        (tmp_path / "iggy").mkdir(exist_ok=True)
        (tmp_path / "iggy" / "bad.yaml").write_text(yaml.safe_dump([vector]))
        with pytest.raises(VectorError):
            load("iggy", tmp_path)


def test_requirements_are_those_of_spec_md(vectors: list[Vector]) -> None:
    from conformance.spec import requirements

    try:
        known = requirements("iggy")
    except (FileNotFoundError, LookupError, protocols.UnknownProtocol):
        pytest.skip("conformance/protocols/iggy/SPEC.md is not there yet")
    assert {(v.id, r) for v in vectors for r in v.requirements if r not in known} == set()
