"""The Iggy annotator over the real client's frames (``tests/iggy/captured``) and the
hand-checked replies: every field inside the payload, none overlapping, each named by
its path in the decoded body (the suite names its evidence by those paths), and a
malformed payload followed as far as it goes."""

from __future__ import annotations

import re
import struct
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.evidence import fields_named
from conformance.plugin import FieldSpan
from conformance.protocols.iggy import codec
from conformance.protocols.iggy.annotate import annotate
from conformance.protocols.iggy.messages import CODES
from tests.iggy.test_codec import HAND

CAPTURED = sorted((Path(__file__).parent / "captured").glob("*.yaml"))
FRAMES = [bytes.fromhex(yaml.safe_load(p.read_text())["hex"])[4:] for p in CAPTURED]
IDS = [p.stem for p in CAPTURED]
STRUCTURAL = re.compile(r"^index\[\d+\]\.(zero|position|reserved)$|^metadata size$")
"""Names of bytes the decoded body has no key for (SEND_MESSAGES' index and metadata size)."""


def _resolve(body: Any, name: str) -> bool:
    """Whether ``name`` (a length, size or count named after its field) is a path in
    ``body``; a path that reaches bytes may go on into them (a user-header block)."""
    if STRUCTURAL.match(name):
        return True
    for suffix in (" length", " size", " count"):
        name = name.removesuffix(suffix)
    value = body
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", name):
        if isinstance(value, bytes):
            return True
        if part.startswith("["):
            index = int(part[1:-1])
            if not isinstance(value, list) or index >= len(value):
                return False
            value = value[index]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            return False
    return True


def _check_spans(fields: list[FieldSpan], size: int) -> None:
    end = 0
    for span in fields:
        assert 0 <= span.start <= span.end <= size, span
        assert span.start >= end, f"{span.name} overlaps the field before it"
        end = span.end


@pytest.mark.parametrize("frame", FRAMES, ids=IDS)
def test_a_captured_request_is_annotated_by_its_decoded_paths(frame: bytes) -> None:
    name, body = codec.decode_request(frame)
    got = annotate(frame, "request", [])
    assert got.summary.startswith(name.upper())
    assert got.fields[0] == FieldSpan("code", 0, 4, CODES[name], order="little")
    _check_spans(got.fields, len(frame))
    for span in got.fields[1:]:
        assert _resolve(body, span.name), span.name
    covered = sum(s.end - s.start for s in got.fields)
    assert covered == len(frame), "every byte of a well-formed request is some field's"


@pytest.mark.parametrize(("name", "value", "wire", "recorded"), HAND, ids=[h[0] for h in HAND])
def test_a_reply_is_annotated_from_the_request_before_it(
    name: str, value: Any, wire: bytes, recorded: Any
) -> None:
    payload = struct.pack("<I", 0) + wire
    got = annotate(payload, "reply", [struct.pack("<I", CODES[name])])
    assert got.summary.startswith(f"status 0 (OK) {name.upper()} reply:"), got.summary
    assert got.fields[0] == FieldSpan("status", 0, 4, 0, order="little")
    _check_spans(got.fields, len(payload))
    for span in got.fields[1:]:
        assert _resolve(value, span.name), span.name
    assert sum(s.end - s.start for s in got.fields) == len(payload)


def test_the_summaries() -> None:
    get_stream = struct.pack("<I", CODES["get_stream"]) + bytes.fromhex("01 04 01000000")
    assert annotate(get_stream, "request").summary == "GET_STREAM stream=1"
    reply = codec.encode_reply(
        "get_stream",
        {"id": 0, "name": "s", "topics_count": 2, "topics": []},
    )
    got = annotate(b"\0\0\0\0" + reply, "reply", [get_stream])
    assert got.summary == 'status 0 (OK) GET_STREAM reply: stream 0 "s" 2 topics'
    assert annotate(b"\0\0\0\0", "reply", [get_stream]).summary == (
        "status 0 (OK) GET_STREAM reply: empty (not found)"
    )
    error = annotate(struct.pack("<I", 1009), "reply", [get_stream])
    assert error.summary == "status 1009 STREAM_ID_NOT_FOUND"
    assert [s.name for s in error.fields] == ["status"]
    assert annotate(struct.pack("<I", 9999), "request").summary == "unknown command 9999"
    assert annotate(b"\x01\0", "request").fields == [FieldSpan("code", 0, 2, b"\x01\0")]


def test_the_evidence_names_find_the_fields() -> None:
    frame = next(f for f, i in zip(FRAMES, IDS, strict=True) if "send_messages" in i)
    listed = [s.name for s in annotate(frame, "request").fields]
    assert fields_named("stream.value", listed) == ["stream.value"]
    assert fields_named("messages", listed) == ["messages count"]
    assert "messages[1].id" in fields_named("messages[1]", listed)
    assert "messages[0].payload length" in listed


def test_a_malformed_request_is_followed_as_far_as_it_goes() -> None:
    frame = next(f for f, i in zip(FRAMES, IDS, strict=True) if "send_messages" in i)
    for end in range(4, len(frame)):
        got = annotate(frame[:end], "request")
        assert "malformed" in got.summary
        _check_spans(got.fields, end)
    cut = annotate(frame[: len(frame) - 3], "request")
    names = [s.name for s in cut.fields]
    # the payload's length runs past the data: the rest is the payload's, the walk stops
    assert "messages[1].payload length" in names and names[-1] == "messages[1].payload"
    assert cut.fields[-1].end == len(frame) - 3
    # a string identifier whose length runs past the data: the rest is its value
    short = struct.pack("<I", CODES["get_stream"]) + bytes.fromhex("02 09 6162")
    fields = annotate(short, "request").fields
    assert [(s.name, s.start, s.end) for s in fields][-2:] == [
        ("stream.value length", 5, 6),
        ("stream.value", 6, 8),
    ]


def test_a_reply_without_its_request_or_with_an_error_payload() -> None:
    got = annotate(b"\0\0\0\0\x07\0\0\0", "reply", [])
    assert [s.name for s in got.fields] == ["status", "payload"]
    quirk = annotate(struct.pack("<I", 3) + b"bad", "reply", [b"\x01\0\0\0"])
    assert [s.name for s in quirk.fields] == ["status", "payload"]
