"""The Cursus golden vectors (vectors/cursus/*.yaml) against the codec and the reference
broker, and what Cursus's collection must hold.

What every protocol's vectors go through (loading, cited requirements, the deframer
whole, byte by byte and before the next frame, plain data and back, decode and encode)
is in tests/protocols/test_vectors.py.  Request vectors with a ``reply`` are sent to the
reference broker: one broker per vector FILE, started on first use and shared by that
file's vectors, each on a new connection after its own ``setup``.  The vectors of a file
use distinct topic and group names, so any subset runs alone and in any order; replies
are compared on the keys the vector gives (``topics`` as a subset: the file's other
vectors create topics too).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from conformance.protocols.cursus import codec, real_codec
from conformance.protocols.cursus.messages import (
    BATCH_HEADER,
    COMMANDS,
    Batch,
    BatchAck,
    Command,
    ErrorReply,
    Message,
)
from conformance.protocols.cursus.vectors import REPLY_KINDS, from_message
from conformance.vectors import Vector, VectorError, load, mismatches
from tests.support import broker, deframing
from tests.support.cursus_client import CursusTestClient

VECTORS = load("cursus")
FRAMED = [v for v in VECTORS if not v.truncated]
DECODED = [v for v in VECTORS if v.decoded is not None]
WITH_REPLY = [v for v in VECTORS if v.reply is not None]


def ids(v: Vector) -> str:
    return v.id


# ------------------------------------------------------------------ the broker


@pytest.fixture(scope="module")
def broker_for_file() -> Iterator[Callable[[str], broker.Broker]]:
    started: dict[str, broker.Broker] = {}
    with ExitStack() as stack:

        def get(file: str) -> broker.Broker:
            if file not in started:
                revision = "real" if file.startswith("real") else "doc"
                args = ("--compression", "gzip", "--revision", revision)
                started[file] = stack.enter_context(broker.running(*args))
            return started[file]

        yield get


def recv(c: CursusTestClient, v: Vector) -> Any:
    """The next reply, read in the vector's revision."""
    if v.extras.get("revision") != "real":
        return c.recv()
    while not c.frames:
        data = c.sock.recv(1 << 20)
        if not data:
            raise ConnectionError("the broker closed the connection")
        c.frames.extend(c.deframer.feed(data))
    return real_codec.decode_reply(c.frames.pop(0))


def run_setup(c: CursusTestClient, v: Vector) -> None:
    for step in v.setup:
        c.sock.sendall(codec.frame(step.encode()) if isinstance(step, str) else step)
        got = recv(c, v)
        failed = isinstance(got, ErrorReply) or (isinstance(got, BatchAck) and got.status != "OK")
        assert not failed, f"setup step {step!r} of {v.id} failed: {got}"


@pytest.mark.parametrize("v", WITH_REPLY, ids=ids)
def test_broker_reply(v: Vector, broker_for_file: Callable[[str], broker.Broker]) -> None:
    b = broker_for_file(v.file)
    with CursusTestClient(b.host, b.port) as c:
        run_setup(c, v)
        c.sock.sendall(v.frame)
        got = recv(c, v)
        assert v.reply is not None
        problems = mismatches(v.reply, from_message(got), "reply", subset=("topics",))
        assert not problems, f"{v.id}: {'; '.join(problems)}\n  full reply: {got}"
        if v.truncated and v.error:  # a frame-limit error closes the connection
            try:
                rest = c.sock.recv(1)
            except (TimeoutError, ConnectionResetError):  # pragma: no cover - reported below
                rest = b"?"
            assert rest == b"", "the broker kept the connection open after FRAME_TOO_LARGE"


def test_vector_names_do_not_collide_within_a_file() -> None:
    """The broker is shared per file: two vectors must not use the same topic, nor the same
    group on the same topic."""
    owner: dict[tuple[str, ...], str] = {}
    for v in WITH_REPLY:
        if v.extras.get("revision") == "real":
            continue  # revision real: CREATE of a topic that exists is OK; checked below
        texts = [s.encode() for s in v.setup if isinstance(s, str)]
        if v.decoded is not None and v.decoded["kind"] == "command":
            texts.append(v.payload)
        for text in texts:
            cmd = codec.parse_command(text)
            names = dict(zip((a.name for a in cmd.spec.args), cmd.args, strict=True))
            keys = [("topic", str(names["topic"]))] if "topic" in names else []
            if "group" in names:
                keys.append(("group", str(names["group"]), str(names["topic"])))
            for key in keys:
                first = owner.setdefault((v.file, *key), v.id)
                assert first == v.id, f"{v.file}: {key} is used by {first} and {v.id}"


def test_real_vectors_with_a_reply_use_their_own_topics() -> None:
    """Revision real's broker vectors name topics and groups no other vector of the file names."""
    owner: dict[tuple[str, str], str] = {}
    for v in WITH_REPLY:
        if v.extras.get("revision") != "real":
            continue
        texts = [s for s in v.setup if isinstance(s, str)]
        if v.decoded is not None and v.decoded["kind"] == "real_command":
            texts.append(real_codec.parse_command(v.payload[2:].decode()).text())
        for text in texts:
            for key in ("topic", "group"):
                value = real_codec.parse_command(text).get(key)
                if value:
                    first = owner.setdefault((key, value), v.id)
                    assert first == v.id, f"{key} {value} is used by {first} and {v.id}"


def test_the_client_vectors_cover_every_command_it_sends() -> None:
    names = {
        v.decoded["name"]
        for v in DECODED
        if v.decoded and v.decoded["kind"] == "real_command" and v.file == "real_client.yaml"
    }
    assert names >= {
        "CREATE",
        "METADATA",
        "FIND_COORDINATOR",
        "JOIN_GROUP",
        "SYNC_GROUP",
        "FETCH_OFFSET",
        "CONSUME",
        "STREAM",
        "COMMIT_OFFSET",
        "BATCH_COMMIT",
        "HEARTBEAT",
        "LEAVE_GROUP",
    }


# ------------------------------------------------------------- the collection


def test_there_are_enough_vectors() -> None:
    assert len(VECTORS) >= 40
    assert {v.file for v in VECTORS} >= {
        "framing.yaml",
        "commands.yaml",
        "batch.yaml",
        "compression.yaml",
        "replies.yaml",
        "malformed.yaml",
    }


def test_every_command_has_a_vector() -> None:
    named = {v.decoded["name"] for v in DECODED if v.decoded and v.decoded["kind"] == "command"}
    assert set(COMMANDS) - named == set()


def test_every_reply_kind_has_a_vector() -> None:
    kinds = {v.decoded["kind"] for v in DECODED if v.decoded and v.direction == "reply"}
    assert set(REPLY_KINDS) - kinds == set()


def test_every_batch_field_has_a_non_default_value() -> None:
    batches = [m for v in DECODED if isinstance(m := v.message, Batch) and v.direction == "request"]
    implied = ("magic", "message_count")  # fixed, or implied by the messages
    header = [name for name, _ in BATCH_HEADER if name not in implied] + ["messages"]
    default = Batch(topic="")
    missing = {h for h in header if all(getattr(b, h) == getattr(default, h) for b in batches)}
    msgs = [m for b in batches for m in b.messages]
    missing |= {
        f.name for f in fields(Message) if all(getattr(m, f.name) == f.default for m in msgs)
    }
    assert missing == set()


def test_the_frame_limit_vectors_are_there() -> None:
    limits = {(deframing.announced(v), v.error) for v in VECTORS if v.truncated}
    assert (64 * 1024 * 1024, None) in limits
    assert (64 * 1024 * 1024 + 1, "FRAME_TOO_LARGE") in limits


# ----------------------------------------------------------------- the loader

GOOD = """\
- id: cursus/t/list
  requirements: [CUR-TEXT-1]
  direction: request
  description: LIST
  hex: "00000004 4c495354"
  decoded: {kind: command, name: LIST, args: []}
"""


def write(tmp_path: Path, text: str, name: str = "a.yaml") -> Path:
    folder = tmp_path / "cursus"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_loader_accepts_a_good_vector(tmp_path: Path) -> None:
    (v,) = load("cursus", write(tmp_path, GOOD))
    assert v.id == "cursus/t/list" and v.message == Command("LIST") and v.payload == b"LIST"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (GOOD + "  colour: red\n", ["a.yaml", "cursus/t/list", "'colour'", "unknown key"]),
        (GOOD.replace("4c495354", "4c49535"), ["a.yaml", "cursus/t/list", "'hex'", "odd"]),
        (GOOD.replace("4c495354", "4c49535z"), ["'hex'", "'z' is not hex"]),
        (GOOD.replace("00000004", "00000005"), ["'hex'", "length prefix"]),
        (GOOD.replace("kind: command", "kind: cmd"), ["'decoded'", "unknown kind"]),
        (GOOD.replace("args: []", "args: [x]"), ["'decoded'", "LIST takes 0"]),
        (GOOD.replace("direction: request", "direction: up"), ["'direction'", "'up'"]),
        (GOOD.replace("[CUR-TEXT-1]", "[text-1]"), ["'requirements'", "'text-1'"]),
        (GOOD.replace("cursus/t/list", "kafka/t/list"), ["'id'", "cursus/<area>/<name>"]),
        (GOOD.replace("  decoded:", "  error: BAD\n  decoded:"), ["'error'", "not both"]),
        (GOOD + "  compression: gzip\n", ["'encode_exact'", "encode_exact: false"]),
        (GOOD + "  reply: {kind: ok, colour: red}\n", ["'reply'", "'colour'"]),
        (GOOD + "  setup: [{hex: zz}]\n", ["'setup'", "not hex"]),
        (GOOD + GOOD, ["a.yaml", "cursus/t/list", "'id'", "duplicate"]),
        ("id: x\n", ["a.yaml", "list of vectors"]),
    ],
    ids=[
        "unknown-key",
        "odd-hex",
        "non-hex",
        "bad-prefix",
        "bad-kind",
        "bad-arity",
        "bad-direction",
        "bad-requirement",
        "wrong-protocol",
        "error-and-decoded",
        "gzip-exact",
        "bad-reply-key",
        "bad-setup",
        "duplicate-id",
        "not-a-list",
    ],
)
def test_loader_rejects_a_bad_vector(tmp_path: Path, text: str, words: list[str]) -> None:
    with pytest.raises(VectorError) as info:
        load("cursus", write(tmp_path, text))
    for word in words:
        assert word in str(info.value), f"{word!r} not in {info.value}"


def test_loader_rejects_a_duplicate_across_files(tmp_path: Path) -> None:
    write(tmp_path, GOOD, "a.yaml")
    write(tmp_path, GOOD, "b.yaml")
    with pytest.raises(
        VectorError,
        match=r"b\.yaml: vector 'cursus/t/list': key 'id': duplicate \(first in a\.yaml\)",
    ):
        load("cursus", tmp_path)


def test_loader_rejects_an_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "cursus").mkdir()
    with pytest.raises(VectorError, match="no vector files"):
        load("cursus", tmp_path)
