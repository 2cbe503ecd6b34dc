"""The bytes the real ``apache-iggy==0.8.0`` client sends, captured again and held against the
captures committed in ``tests/iggy/captured/`` (written by ``python -m
tests.support.iggy_capture --out tests/iggy/captured``).

Every captured request repeats byte for byte from run to run except SEND_MESSAGES, whose
messages each carry the client's clock (``origin_timestamp``, microseconds); those are compared
by layout: same length, same code, every byte outside the timestamps equal, and each timestamp
a time within this test's run.  Message ids are 0 in every capture (the binding's
``SendMessage`` leaves them to the server), so they are compared exactly.

The client sends a heartbeat PING on its own every 5 s; one that lands during a slow run is
left out of the comparison (a PING sent while a call other than ``ping()`` or ``connect()`` is
under way).

Without ``apache_iggy`` the test is skipped, except under ``CI``, where it fails: CI installs
it with the ``dev`` extras."""

from __future__ import annotations

import os
import struct
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import iggy_capture

CAPTURED = Path(__file__).parent / "captured"
VERSION = "0.8.0"


def _client_or_skip() -> None:
    try:
        import apache_iggy  # noqa: F401
    except ImportError as exc:
        reason = (
            f"apache_iggy is not importable ({exc}); pip install -e '.[dev]' installs "
            f"apache-iggy=={VERSION}"
        )
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    found = iggy_capture.client_version()
    if found != VERSION:
        reason = f"apache-iggy {found} is installed; the captures are of {VERSION}"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)


def _heartbeat(command: str, call: str) -> bool:
    return command == "ping" and call not in ("ping()", "connect()")


def _committed() -> list[dict[str, Any]]:
    docs = [yaml.safe_load(p.read_text()) for p in sorted(CAPTURED.glob("*.yaml"))]
    return [d for d in docs if not _heartbeat(d["command"], d["call"])]


@pytest.fixture(scope="module")
def session() -> tuple[list[iggy_capture.Request], list[iggy_capture.Step], float, float]:
    _client_or_skip()
    start = time.time()
    requests, steps, errors = iggy_capture.capture()
    end = time.time()
    assert not errors, errors
    return requests, steps, start, end


def test_committed_captures_are_of_the_pinned_client() -> None:
    docs = _committed()
    assert len(docs) >= 40
    assert {d["client"] for d in docs} == {f"apache-iggy=={VERSION}"}
    for needed in ("ping", "login_user", "create_stream", "send_messages", "poll_messages"):
        assert needed in {d["command"] for d in docs}
    for doc in docs:
        frame = bytes.fromhex(doc["hex"])
        length, code = struct.unpack_from("<II", frame)
        assert (length + 4, code) == (len(frame), doc["code"]), doc["call"]


def test_every_client_call_got_the_answer_it_expects(session: Any) -> None:
    _, steps, _, _ = session
    wrong = [f"{s.call} -> {s.result}" for s in steps if not s.ok]
    assert not wrong, "\n".join(wrong)
    calls = [s.call for s in steps]
    for needed in ("connect()", "ping()", 'login_user("iggy", "iggy")', 'create_stream("'):
        assert any(c.startswith(needed) for c in calls), needed


def test_the_client_sends_the_committed_bytes(session: Any) -> None:
    requests, _, start, end = session
    fresh = [r for r in requests if not _heartbeat(r.command, r.call)]
    committed = _committed()
    assert [(r.command, r.call) for r in fresh] == [(d["command"], d["call"]) for d in committed]
    for req, doc in zip(fresh, committed, strict=True):
        want = bytes.fromhex(doc["hex"])
        ranges = iggy_capture.volatile(req)
        assert doc["deterministic"] == (not ranges), doc["call"]
        if not ranges:
            assert req.frame == want, f"{doc['call']}: {req.frame.hex()} != {doc['hex']}"
            continue
        # By layout: length, code, every fixed byte; each timestamp within this run.
        assert len(req.frame) == len(want), doc["call"]
        assert [f"{a}..{b}" for a, b, _ in ranges] == [v["bytes"] for v in doc["volatile"]]
        got, expected = bytearray(req.frame), bytearray(want)
        for a, b, _ in ranges:
            (stamp,) = struct.unpack_from("<Q", got, a)
            assert start - 1 <= stamp / 1e6 <= end + 1, f"{doc['call']}: origin_timestamp {stamp}"
            got[a:b] = expected[a:b] = bytes(b - a)
        assert got == expected, f"{doc['call']}: {bytes(got).hex()} != {bytes(expected).hex()}"
