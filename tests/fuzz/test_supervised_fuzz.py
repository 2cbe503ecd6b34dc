"""``conformance fuzz --target-cmd`` against a broker that crashes, stops or panics on one
kind of input, for every protocol: the fault is found as its class (CRASH, STOPPED, PANIC),
minimized to the input that does it, filed against the requirement that input breaks, and
``conformance replay`` reproduces it.

The broker is ``tests/support/faulty_proxy.py`` in front of a reference broker: it breaks
when a client's bytes match a trigger that the fuzzer's cases of seed 1 send early and its
set-up requests and canary never send (four 0xff bytes for most binary protocols, the
largest int32 for Kafka, a negative CONSUME offset for V1 line).  Every command
runs as a subprocess in ``tmp_path``; the brokers are started and stopped by the tool.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from conformance import fuzz
from conformance.fuzz.case import FuzzCase
from tests.support.cli import conformance

PROXY = Path(__file__).resolve().parents[1] / "support" / "faulty_proxy.py"
BINARY = r"\xff\xff\xff\xff"
TRIGGER = {
    "cursus": (BINARY, 10),
    "kafka": (r"\x7f\xff\xff\xff", 14),  # (the set-up's Produce holds four 0xff bytes)
    "iggy": (BINARY, 20),
    "minikafka": (BINARY, 12),
    "v1line": (r"\|CONSUME\|[^\n]* -\d", 76),
}
"""The trigger, and enough cases of seed 1 to send it (the first hit is a few cases before)."""
FINDING = {"crash": "CRASH", "stop": "STOPPED", "panic": "PANIC"}


@pytest.mark.slow
@pytest.mark.parametrize("fault", sorted(FINDING))
@pytest.mark.parametrize("protocol", sorted(TRIGGER))
def test_each_fault_is_found_minimized_and_replayed(
    tmp_path: Path, protocol: str, fault: str
) -> None:
    found_minimized_replayed(tmp_path, protocol, fault)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("protocol", "fault"), [("v1line", "crash"), ("minikafka", "stop"), ("iggy", "panic")]
)
def test_with_three_copies_and_spares_each_fault_is_found_the_same(
    tmp_path: Path, protocol: str, fault: str
) -> None:
    """``--instances 3 --spare``: the cases are shared by three copies, each with a spare;
    the finding, its minimization and its replay are as with one copy, and each copy
    kept its own log."""
    found_minimized_replayed(tmp_path, protocol, fault, "--instances", "3", "--spare")
    logs = sorted(p.name for p in (tmp_path / "reports" / "fuzz").glob("target*.log"))
    assert logs == ["target.2.log", "target.3.log", "target.log"], logs


def found_minimized_replayed(
    tmp_path: Path, protocol: str, fault: str, *extra: str, wrap: tuple[str, ...] = ()
) -> None:
    """``extra``: more fuzz options; ``wrap``: a command that runs the broker's command given
    after it.  What the fuzz command said is left in said.txt."""
    trigger, cases = TRIGGER[protocol]
    revision = ("--revision", "apache") if protocol == "kafka" else ()
    words = [sys.executable, str(PROXY), "--port", "{port}", "--trigger", trigger]
    words = [*wrap, *words]
    command = shlex.join([*words, "--fault", fault, "--", "--protocol", protocol, *revision])
    target = ("--target-cmd", command)
    done = conformance(
        tmp_path, "fuzz", "--protocol", protocol, *revision, *target, "--cases", str(cases),
        "--seed", "1", "--connections", "4", "--deadline", "0.5", *extra, timeout=600,
    )  # fmt: skip
    said = done.stdout[-3000:] + done.stderr[-2000:]
    (tmp_path / "said.txt").write_text(done.stdout + done.stderr)
    assert done.returncode == 1, said
    finding = FINDING[fault]
    files = sorted((tmp_path / "fuzz" / "findings").glob("*.yaml"))
    ours = [yaml.safe_load(f.read_text()) for f in files]
    ours = [(f, r) for f, r in zip(files, ours, strict=True) if r["finding"] == finding]
    assert len(ours) == 1, [f.name for f in files]
    path, repro = ours[0]
    assert repro["minimized"], (repro.get("note"), repro.get("detail"))
    (case,) = repro["cases"]
    own = FuzzCase.from_dict(case)
    streams = [b"".join(own.writes), *own.abandon]  # one per connection it opens
    assert any(re.search(trigger.encode(), s) for s in streams), [s.hex() for s in streams]
    proto = fuzz.protocol(protocol, {}, repro["revision"] or None)
    assert repro["requirement"] == proto.requirement(finding, own)
    if fault == "panic":
        assert repro["panic"] == "Rust panic at src/handler/produce.rs:211"
        assert any("panicked at" in line for line in repro["target_output"])
    replay = conformance(tmp_path, "replay", str(path), *target, timeout=300)
    assert replay.returncode == 1 and "REPRODUCES" in replay.stdout, replay.stdout + replay.stderr


ONCE = """
import fcntl, os, sys
held = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY)
try:
    fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
except OSError:
    print("another copy holds", sys.argv[1], flush=True)
    sys.exit(4)
os.set_inheritable(held, True)
os.execv(sys.argv[2], sys.argv[2:])
"""
"""Runs a command only while no other copy runs (a broker that locks its data folder)."""


@pytest.mark.slow
def test_a_broker_that_cannot_run_twice_gives_spare_up_and_is_fuzzed_all_the_same(
    tmp_path: Path,
) -> None:
    """``--spare`` with a command that exits when another copy of it runs: the spare is given
    up (said once, with why), each restart waits for a start instead, and the crash is found,
    minimized and replayed as without ``--spare``."""
    once = tmp_path / "once.py"
    once.write_text(ONCE)
    lock = (sys.executable, str(once), str(tmp_path / "data.lock"))
    found_minimized_replayed(tmp_path, "minikafka", "crash", "--spare", wrap=lock)
    said = (tmp_path / "said.txt").read_text()
    assert "--spare was given up (the spare copy exited with code 4" in said, said


@pytest.mark.slow
def test_a_broker_that_is_slow_for_a_moment_is_not_taken_for_stopped(tmp_path: Path) -> None:
    """A --target-cmd broker whose replies all come 0.4 s late for a moment (a loaded machine)
    is silent for longer than the short look the fuzzer gives a target it restarts; the
    case that met it is replayed alone on a fresh start, where nothing is slow, so it is a
    SLOW row, not a STOPPED finding: no finding, exit 0."""
    trigger, cases = TRIGGER["minikafka"]
    proxy = [sys.executable, str(PROXY), "--port", "{port}", "--trigger", trigger, "--fault"]
    once = ("--once", str(tmp_path / "slowed"))
    command = shlex.join([*proxy, "slow", *once, "--", "--protocol", "minikafka"])
    done = conformance(
        tmp_path, "fuzz", "--protocol", "minikafka", "--target-cmd", command,
        "--cases", str(cases), "--seed", "1", "--connections", "4", timeout=600,
    )  # fmt: skip
    said = done.stdout[-3000:] + done.stderr[-2000:]
    assert (tmp_path / "slowed").exists(), f"the trigger was never sent: {said}"
    outcomes = pq.read_table(tmp_path / "reports" / "fuzz" / "cases.parquet")["outcome"]
    assert "slow" in outcomes.to_pylist(), (outcomes.to_pylist(), said)
    assert "stopped" not in outcomes.to_pylist(), said
    assert done.returncode == 0 and "no finding" in said, said
