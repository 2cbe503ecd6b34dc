"""A target whose replies cannot be framed, for every protocol: the first case that meets
one FAILs the protocol's reply-framing requirement (the plug-in's ``reply_framing``, decided
by one generic rule), the target is found unusable (the probe's answer does not frame
either), and every later case ends at once, an ERROR that says so, never one FAIL or one
deadline per case.  The target is ``tests/support/garbage_target.py``."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from conformance import protocols
from tests.support.cli import conformance

GARBAGE = Path(__file__).resolve().parents[1] / "support" / "garbage_target.py"
REPLIES = {
    "cursus": ("--reply", "ffffffff"),  # a length of 4 GiB, past the 64 MiB limit
    "kafka": ("--reply", "ffffffff"),  # a negative size
    "iggy": ("--reply", "00000000ffffffff"),  # status 0, a length of 4 GiB
    "minikafka": ("--reply", "00000002"),  # a length below its own 4 bytes
    "v1line": ("--line-bytes", "70000"),  # a line past the 64 KiB limit, never ended
}


@pytest.mark.parametrize("protocol", sorted(REPLIES))
def test_one_fail_of_the_framing_requirement_then_the_target_is_unusable(
    tmp_path: Path, protocol: str
) -> None:
    command = shlex.join([sys.executable, str(GARBAGE), "--port", "{port}", *REPLIES[protocol]])
    reports = tmp_path / "reports"
    done = conformance(
        tmp_path, "run", "--protocol", protocol, "--target-cmd", command, "--reports", str(reports)
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    results = json.loads((reports / "results.json").read_text())
    fails = [c for c in results["cases"] if c["verdict"] == "FAIL"]
    assert len(fails) == 1, [c["message"] for c in fails]
    assert fails[0]["violated"] == protocols.get(protocol).reply_framing
    assert fails[0]["evidence"], fails[0]
    rest = [c for c in results["cases"] if c is not fails[0]]
    assert rest and all(c["verdict"] == "ERROR" and c.get("lost") for c in rest)
    assert all("is unusable: its replies cannot be framed" in c["message"] for c in rest)
    assert not results["target_events"]  # it never crashed, stopped or panicked
    assert "is unusable: its replies cannot be framed" in done.stdout
    assert "Traceback" not in done.stderr
