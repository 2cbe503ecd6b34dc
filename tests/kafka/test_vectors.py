"""The Kafka golden vectors (vectors/kafka/*.yaml) against the codec and the reference
broker, and what Kafka's collection must hold.

What every protocol's vectors go through (loading, cited requirements, unique IDs, the
deframer whole, byte by byte and before the next frame, plain data and back, decode and
encode) is in tests/protocols/test_vectors.py.  Here: ``decoded`` is written as the
codec writes it.  (A request may carry bytes after its body: Apache Kafka and librdkafka
ignore them, so the codec counts them in ``Request.trailing``, checked here; bytes after the
*frame* are the deframer's business, checked with every protocol's.)  Request vectors
with a ``reply`` are sent to the reference broker: one broker per vector FILE and
revision, started on first use and shared by that file's vectors, each on a new
connection after its own ``setup``.
The vectors of a file use distinct topic and group names, so any subset runs alone and in
any order; replies are compared on the keys the vector gives.  captured.yaml holds
frames captured from real clients (tests/support/kafka_capture.py).
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from conformance.protocols.kafka import codec
from conformance.protocols.kafka.apis import APIS
from conformance.protocols.kafka.codec import Request
from conformance.protocols.kafka.compression import NAMES as CODECS
from conformance.protocols.kafka.vectors import (
    REPLY_META,
    SCHEMA,
    Response,
    canonical,
    decode_reply,
    errors_in,
    setup_request,
)
from conformance.vectors import Vector, VectorError, load
from conformance.wire.schema import Bytes, Field, Type, walk
from tests.support import broker, deframing

VECTORS = load("kafka")
FRAMED = [v for v in VECTORS if not v.truncated]
DECODED = [v for v in VECTORS if v.decoded is not None]
WITH_REPLY = [v for v in VECTORS if v.reply is not None]
CAPTURED = [v for v in VECTORS if v.file == "captured.yaml"]
PROBE_CORRELATION = 0x7EC0
BROKER_BUGS: dict[str, str] = {}
"""Vector id -> the bug in the reference broker that fails its reply test.  None known."""


def ids(v: Vector) -> str:
    return v.id


def marked(vectors: list[Vector], bugs: Mapping[str, str], group: bool = False) -> list[Any]:
    """The vectors as parameters, a known bug's vector marked xfail (strict); with
    ``group``, each in the xdist group of its file (its broker is started once)."""
    out = []
    for v in vectors:
        marks: list[Any] = [pytest.mark.xdist_group(f"kafka-vectors-{v.file}")] if group else []
        if v.id in bugs:
            marks.append(pytest.mark.xfail(reason=bugs[v.id], strict=True))
        out.append(pytest.param(v, id=v.id, marks=marks))
    return out


def found(plain: Any, key: str) -> Iterator[Any]:
    """Every value of ``key`` anywhere in a plain form."""
    if isinstance(plain, Mapping):
        if key in plain:
            yield plain[key]
        for x in plain.values():
            yield from found(x, key)
    elif isinstance(plain, list):
        for x in plain:
            yield from found(x, key)


def without_spaces(plain: Any) -> Any:
    """A plain form with the whitespace inside its ``{hex}`` values taken out."""
    if isinstance(plain, Mapping):
        if list(plain) == ["hex"] and isinstance(plain["hex"], str):
            return {"hex": "".join(plain["hex"].split())}
        return {k: without_spaces(x) for k, x in plain.items()}
    if isinstance(plain, list):
        return [without_spaces(x) for x in plain]
    return plain


# ------------------------------------------------------------------- the codec


@pytest.mark.parametrize("v", DECODED, ids=ids)
def test_decoded_is_written_as_from_message_writes_it(v: Vector) -> None:
    """Every field given, records as batches where they can be: whitespace in hex aside."""
    assert v.decoded is not None
    assert without_spaces(v.decoded) == canonical(v.decoded)


@pytest.mark.parametrize("v", [v for v in DECODED if v.direction == "request"], ids=ids)
def test_a_request_needs_no_trailing_bytes_unless_it_says_so(v: Vector) -> None:
    request = codec.decode_request(v.payload)
    assert request.trailing == (v.decoded or {}).get("trailing", 0)


# ------------------------------------------------------------------ the broker


@pytest.fixture(scope="module")
def broker_for() -> Iterator[Callable[[str, str], broker.Broker]]:
    started: dict[tuple[str, str], broker.Broker] = {}
    with ExitStack() as stack:

        def get(file: str, revision: str) -> broker.Broker:
            if (file, revision) not in started:
                served = broker.running("--revision", revision, protocol="kafka")
                started[file, revision] = stack.enter_context(served)
            return started[file, revision]

        yield get


def read_frame(sock: socket.socket) -> bytes | None:
    """One response payload, or None if the broker closed the connection first."""
    deframer = codec.new_deframer()
    while True:
        try:
            data = sock.recv(65536)
        except ConnectionResetError:
            return None
        if not data:
            return None
        frames = deframer.feed(data)
        if frames:
            return frames[0]


def run_setup(sock: socket.socket, v: Vector) -> None:
    for i, step in enumerate(v.setup):
        frame = codec.frame(setup_request(step, 0x5E70 + i)) if isinstance(step, str) else step
        sock.sendall(frame)
        payload = read_frame(sock)
        assert payload is not None, f"setup step {step!r} of {v.id}: the broker closed"
        key, version, _ = codec.peek(frame[4:])
        failed = errors_in(decode_reply(payload, key, version).body)
        assert not failed, f"setup step {step!r} of {v.id} failed: {failed}"


def probe(sock: socket.socket) -> bytes | None:
    sock.sendall(codec.frame(codec.encode_request(18, 0, {}, correlation_id=PROBE_CORRELATION)))
    return read_frame(sock)


@pytest.mark.parametrize("v", marked(WITH_REPLY, BROKER_BUGS, group=True))
def test_broker_reply(v: Vector, broker_for: Callable[[str, str], broker.Broker]) -> None:
    b = broker_for(v.file, v.extras["revision"])
    assert v.reply is not None
    with socket.create_connection((b.host, b.port), timeout=10) as sock:
        run_setup(sock, v)
        sock.sendall(v.frame)
        if v.reply.get("no_response"):
            got = probe(sock)
            assert got is not None and codec.correlation_of(got) == PROBE_CORRELATION, (
                f"{v.id}: expected no response, then the probe's; got {got!r}"
            )
            return
        payload = read_frame(sock)
        if v.reply.get("closed"):
            assert payload is None, f"{v.id}: expected the connection closed, got {payload!r}"
            return
        assert payload is not None, f"{v.id}: the broker closed the connection"
        problems = SCHEMA.reply_mismatch(v.reply, payload, v.payload)
        assert problems is None, f"{v.id}: {problems}\n  full reply: {payload.hex()}"
        if v.error is None:  # the connection is still good
            assert probe(sock) is not None


def test_vector_names_do_not_collide_within_a_file() -> None:
    """The broker is shared per file and revision: two vectors must not create the same
    topic, nor use the same group."""
    owner: dict[tuple[str, ...], str] = {}
    for v in WITH_REPLY:
        names = [
            ("topic", s.split()[1]) for s in v.setup if isinstance(s, str) and s[:6] == "create"
        ]
        names += [("group", g) for g in found((v.decoded or {}).get("body"), "group_id")]
        for name in names:
            key = (v.file, v.extras["revision"], *name)
            first = owner.setdefault(key, v.id)
            assert first == v.id, f"{v.file}: {name} is used by {first} and {v.id}"


# ------------------------------------------------------------- the collection


def _requests() -> list[tuple[int, int]]:
    return [
        (v.decoded["api_key"], v.decoded["api_version"])
        for v in DECODED
        if v.direction == "request" and v.decoded is not None
    ]


def _batches() -> list[Mapping[str, Any]]:
    return [
        b
        for v in DECODED
        if v.decoded is not None
        for batches in found(canonical(v.decoded), "batches")
        for b in batches
    ]


def test_there_are_enough_vectors() -> None:
    assert len(VECTORS) >= 60
    assert {v.file for v in VECTORS} >= {
        "framing.yaml",
        "headers.yaml",
        "api_versions.yaml",
        "metadata.yaml",
        "produce.yaml",
        "fetch.yaml",
        "records.yaml",
        "groups.yaml",
        "offsets.yaml",
        "admin.yaml",
        "malformed.yaml",
        "captured.yaml",
    }


def test_every_api_has_requests_at_its_lowest_and_highest_version() -> None:
    have = set(_requests())
    missing = [
        (api.name, version)
        for api in APIS.values()
        for version in (api.low, api.high)
        if (api.key, version) not in have
    ]
    assert missing == []


def test_every_api_has_a_response_vector() -> None:
    answered = {v.extras["api_key"] for v in VECTORS if v.direction == "reply"}
    assert set(APIS) - answered == set()


def test_every_codec_has_a_produced_batch() -> None:
    produced = {
        b["compression"]
        for v in DECODED
        if v.direction == "request" and v.decoded is not None
        for batches in found(canonical(v.decoded), "batches")
        for b in batches
    }
    assert set(CODECS) - produced == set()


def test_there_are_captured_frames_of_every_client_both_ways() -> None:
    assert len(CAPTURED) >= 15
    assert {v.direction for v in CAPTURED} == {"request", "reply"}
    for client in ("kafka-python", "aiokafka", "librdkafka", "kcat"):
        assert any(client in v.description for v in CAPTURED), client
    assert sum(v.encode_exact for v in CAPTURED) > len(CAPTURED) // 2


def test_batches_cover_headers_control_idempotent_and_transactional() -> None:
    batches = _batches()
    assert any(b.get("control") for b in batches)
    assert any(b.get("transactional") for b in batches)
    assert any(b.get("log_append_time") for b in batches)
    assert any(b["producer_id"] >= 0 and b["base_sequence"] >= 0 for b in batches)
    assert any(r["headers"] for b in batches for r in b["records"])
    assert any(r["key"] is None or r["value"] is None for b in batches for r in b["records"])


def test_records_fields_are_named_records_and_no_field_is_a_reply_key() -> None:
    """The plain form finds a records field by its name, and a reply's own keys
    (closed, api_version...) by theirs: both rules hold for every body."""
    bad: list[str] = []

    def visit(fl: Field, _: Type) -> None:
        is_records = isinstance(fl.type, Bytes) and fl.type.name == "records"
        if is_records != (fl.name == "records"):
            bad.append(f"{fl.name}: records naming")
        if fl.name in REPLY_META and fl.name != "correlation_id":
            bad.append(f"{fl.name}: a reply key")

    for api in APIS.values():
        walk(api.request.body, visit)
        walk(api.response.body, visit)
    assert bad == []


def test_the_frame_limit_vectors_are_there() -> None:
    limits = {(deframing.announced(v), v.error) for v in VECTORS if v.truncated}
    assert (codec.MAX_FRAME, None) in limits
    assert (codec.MAX_FRAME + 1, "FRAME_TOO_LARGE") in limits
    assert (0xFFFFFFFF, "FRAME_TOO_LARGE") in limits


# ---------------------------------------------------------------- the schema


def test_reply_mismatch_compares_on_the_keys_given() -> None:
    request = codec.encode_request(12, 0, {"group_id": "g"}, correlation_id=5)
    reply = codec.encode_response(12, 0, 5, {"error_code": 25})
    assert SCHEMA.reply_mismatch({"error_code": 25}, reply, request) is None
    assert "expected 0, got 25" in (SCHEMA.reply_mismatch({"error_code": 0}, reply, request) or "")
    wrong = codec.encode_response(12, 0, 6, {"error_code": 25})
    assert "correlation_id" in (SCHEMA.reply_mismatch({}, wrong, request) or "")
    assert SCHEMA.reply_mismatch({"closed": True}, reply, request) is not None
    bare = struct.pack(">ih", 5, 35)
    unknown = struct.pack(">hhi", 99, 0, 5) + b"\xff\xff"
    assert SCHEMA.reply_mismatch({"bare_error_code": 35}, bare, unknown) is None
    assert SCHEMA.reply_mismatch({"bare_error_code": 35}, bare + b"x", unknown) is not None


def test_reply_mismatch_decodes_an_unsupported_api_versions_at_v0() -> None:
    request = struct.pack(">hhih", 18, 99, 3, -1) + b"\x00"
    reply = codec.encode_response(18, 0, 3, {"error_code": 35, "api_keys": []})
    assert SCHEMA.reply_mismatch({"error_code": 35}, reply, request) is None


# ----------------------------------------------------------------- the loader

GOOD = """\
- id: kafka/t/api-versions
  requirements: [KAF-VER-1]
  direction: request
  description: ApiVersions v0
  hex: "00000015 0012 0000 00000001 000b 636f6e666f726d616e6365"
  decoded: {api_key: 18, api_version: 0, correlation_id: 1, client_id: conformance, body: {}}
"""
REPLY = """\
- id: kafka/t/heartbeat-response
  requirements: [KAF-GROUP-5]
  direction: reply
  description: Heartbeat v0 response
  api_key: 12
  api_version: 0
  hex: "00000006 00000005 0019"
  decoded: {correlation_id: 5, body: {error_code: 25}}
"""


def write(tmp_path: Path, text: str, name: str = "a.yaml") -> Path:
    folder = tmp_path / "kafka"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_loader_accepts_good_vectors(tmp_path: Path) -> None:
    v, r = load("kafka", write(tmp_path, GOOD + REPLY))
    assert isinstance(v.message, Request) and v.message.client_id == "conformance"
    assert v.extras == {"revision": "apache"}
    assert r.message == Response(5, {"error_code": 25})
    assert r.extras == {"api_key": 12, "api_version": 0}


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (GOOD + "  colour: red\n", ["a.yaml", "kafka/t/api-versions", "'colour'", "unknown key"]),
        (GOOD.replace("api_key: 18", "api_key: 1000"), ["'decoded'", "unknown API key 1000"]),
        (GOOD.replace("api_version: 0,", "api_version: 9,"), ["'decoded'", "no version 9"]),
        (GOOD.replace("body: {}", "body: {x: 1}"), ["'decoded'", "not a field"]),
        (GOOD.replace(", client_id: conformance", ""), ["'decoded'", "client_id"]),
        (REPLY.replace("body: {error_code: 25}", "body: {}"), ["'decoded'", "error_code"]),
        (REPLY.replace("  api_key: 12\n", ""), ["'api_key'", "integers"]),
        (REPLY.replace("api_version: 0", "api_version: 7"), ["'api_version'", "no version 7"]),
        (REPLY + "  header_version: 2\n", ["'header_version'", "0 or 1"]),
        (REPLY + "  revision: doc\n", ["'revision'", "only request"]),
        (GOOD + "  api_key: 18\n", ["'api_key'", "only reply vectors"]),
        (GOOD + "  reply: {colour: red}\n", ["'reply'", "unknown key 'colour'"]),
        (GOOD + "  reply: {closed: true, error_code: 0}\n", ["'reply'", "alone"]),
        (GOOD + "  reply: {error_code: 0}\n  revision: pgcdc\n", ["'revision'", "'pgcdc'"]),
        (GOOD + "  revision: doc\n", ["'revision'", "only a vector with a reply"]),
        (GOOD + "  setup: [make t 1]\n", ["'setup'", "the commands are"]),
        (
            REPLY.replace("api_key: 12", "api_key: 14").replace(
                "body: {error_code: 25}", "body: {error_code: 25, assignment: 00}"
            ),
            ["'decoded'", "bytes as {hex: ..}", "assignment"],
        ),
        (GOOD.replace("00000015", "00000016"), ["'hex'", "length prefix"]),
        (GOOD + GOOD, ["a.yaml", "kafka/t/api-versions", "'id'", "duplicate"]),
    ],
    ids=[
        "unknown-key",
        "unknown-api",
        "unknown-version",
        "unknown-body-field",
        "no-client-id",
        "missing-body-field",
        "reply-without-api",
        "reply-bad-version",
        "bad-header-version",
        "revision-on-reply",
        "api-key-on-request",
        "bad-reply-key",
        "closed-not-alone",
        "bad-revision",
        "revision-without-reply",
        "bad-setup",
        "bytes-not-hex",
        "bad-prefix",
        "duplicate-id",
    ],
)
def test_loader_rejects_a_bad_vector(tmp_path: Path, text: str, words: list[str]) -> None:
    with pytest.raises(VectorError) as info:
        load("kafka", write(tmp_path, text))
    for word in words:
        assert word in str(info.value), f"{word!r} not in {info.value}"
