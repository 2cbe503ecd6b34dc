"""``run --target-cmd`` against a hostile target, for every protocol and every way its
replies have been seen to go wrong (``tests/support/hostile_target.py``: a slow drip, a
reset on connect, endless garbage, a close in the middle of a frame, a well-framed reply
to another request).  For each: the run ends by itself with an exit code CI can trust and
one clear line, never a traceback; its memory stays far below what the target sends (the
frame limit holds); what it says fits the behaviour; and no process it started is left.

How long each run takes is measured by ``bench/hostile_targets.py`` (README's figures);
here a generous subprocess timeout only guards against a run that never ends.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conformance import protocols
from tests.support.hostile_target import BEHAVIOURS
from tests.support.rss import watch_peak

HOSTILE = Path(__file__).resolve().parents[1] / "support" / "hostile_target.py"
PROTOCOLS = ("cursus", "iggy", "kafka", "minikafka", "v1line")
PEAK_RSS_MB = 1024
"""Far below what the endless-garbage target sends in a run (gigabytes at loopback speed);
a run against the reference broker peaks at about 450 MB (Cursus: its cases build frames
near the 64 MiB limit, and the reports hold every case's wire log)."""
ONE_READ = 1 << 20
"""The most one read of the client takes (a frame's limit is checked on what was read)."""
HANG_GUARD_S = 400


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in _state(pid)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split("\n")[0].lower()
    except (OSError, IndexError):
        return "zombie"


@pytest.mark.slow
@pytest.mark.parametrize("behaviour", BEHAVIOURS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_hostile_target_ends_the_run_cleanly(
    tmp_path: Path, protocol: str, behaviour: str
) -> None:
    pids = tmp_path / "pids"
    revision = ("--revision", "apache") if protocol == "kafka" else ()
    words = [sys.executable, str(HOSTILE), "--port", "{port}", "--behaviour", behaviour]
    words += ["--protocol", protocol, "--pid-file", str(pids), "--", *revision]
    reports = tmp_path / "reports"
    cmd = [sys.executable, "-m", "conformance", "run", "--protocol", protocol, *revision, "-q"]
    cmd += ["--target-cmd", shlex.join(words), "--reports", str(reports)]
    cmd += ["--timeout", "1", "--target-start-timeout", "10"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    done, rss = threading.Event(), [0.0]
    watcher = threading.Thread(target=watch_peak, args=(proc.pid, done, rss), daemon=True)
    watcher.start()
    try:
        out, err = proc.communicate(timeout=HANG_GUARD_S)
    finally:
        done.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stdout, stderr = out.decode(errors="replace"), err.decode(errors="replace")
    said = stdout[-2000:] + stderr[-2000:]
    assert "Traceback" not in stderr, said
    assert rss[0] < PEAK_RSS_MB, (rss[0], said)
    started = [int(p) for p in pids.read_text().split()] if pids.exists() else []
    assert started, "the hostile target never started"
    left = [p for p in started if alive(p)]
    assert not left, f"processes left behind: {left}"
    if behaviour in ("reset", "midframe") or proc.returncode == 2:
        # it accepts, then never answers the start's probe whole (a drip may, in time)
        assert proc.returncode == 2, said
        assert len(stderr.strip().splitlines()) == 1, stderr
        assert "it accepts connections, but the protocol's probe got" in stderr, stderr
        if behaviour == "drip":
            assert "a reply began, but was not whole" in stderr, stderr
        return
    assert proc.returncode == 1, said
    cases = json.loads((reports / "results.json").read_text())["cases"]
    assert "FAIL" in {c["verdict"] for c in cases}, said
    limit = protocols.get(protocol).framing.limit
    for case in cases:  # what one connection read: never far past one frame's limit
        read: dict[object, int] = {}
        for entry in case["wire_log"]:
            if entry.get("dir") == "recv":
                read[entry["conn"]] = read.get(entry["conn"], 0) + entry.get("len", 0)
        assert max(read.values(), default=0) <= limit + ONE_READ, (case["case_id"], read)
    if behaviour == "garbage" and protocol != "v1line":  # (random bytes hold line ends:
        assert any("is unusable" in c["message"] for c in cases), said  # V1 line frames them)
    if behaviour == "drip":
        assert any("replies come too slowly" in c["message"] for c in cases), said
