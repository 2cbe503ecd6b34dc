"""``conformance fuzz`` and ``replay`` against a broker nobody here wrote, end to end.

The faulty Cursus broker (tests/support/faulty_cursus.py) is fuzzed the two ways a
platform team would: started and restarted by the fuzzer (``--target-cmd``), and started
by someone else (``--target HOST:PORT``: the fuzzer can neither restart nor read it).
Every command runs as a subprocess in ``tmp_path``; every broker this file starts itself
is stopped by its PID.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import select
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pyarrow.parquet as pq
import pytest
import yaml

from tests.support.cli import conformance

FAULTY = Path(__file__).resolve().parents[1] / "support" / "faulty_cursus.py"
PYTHON = shlex.quote(sys.executable)
BROKER = f"{PYTHON} {shlex.quote(str(FAULTY))} --port {{port}}"
EXIT_FAULT = f"{BROKER} --exit-on-batch-field"
FATAL = "fatal: batch field message_count=-1"
SERVING = re.compile(r"serving cursus on 127\.0\.0\.1:(\d+)")
PROGRESS = re.compile(r"^fuzz: (\d+)/(\d+) cases, \d+ cases/s")
CASES = 2000
FORCE_TERMINAL = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")
"""Variables that make the console take a pipe for a terminal."""


# ------------------------------------------------------------------------ helpers


def fuzz(tmp_path: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """A campaign with its rows under tmp_path/out and its reproducers under tmp_path/findings
    (relative paths: the lines that quote them stay short enough not to be wrapped)."""
    return conformance(
        tmp_path,
        "fuzz",
        "-q",
        "--deadline",
        "0.3",
        "--out",
        "out",
        "--findings",
        "findings",
        *args,
        timeout=timeout,
    )


def flat(text: str) -> str:
    """``text`` with every run of whitespace made one space (the console wraps at 80)."""
    return " ".join(text.split())


def rows(tmp_path: Path) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = pq.read_table(tmp_path / "out" / "cases.parquet").to_pylist()
    return got


def reproducers(tmp_path: Path) -> dict[Path, dict[str, Any]]:
    return {
        p: yaml.safe_load(p.read_text()) for p in sorted((tmp_path / "findings").glob("*.yaml"))
    }


def only(found: dict[Path, dict[str, Any]], finding: str) -> tuple[Path, dict[str, Any]]:
    """The one reproducer of ``finding``: exactly one signature of it was saved."""
    ours = {p: d for p, d in found.items() if d["finding"] == finding}
    assert len({d["signature"] for d in ours.values()}) == 1, found
    assert len(ours) == 1, list(ours)
    return next(iter(ours.items()))


class Faulty:
    """The faulty broker on ``port`` (0: a free one), started by this test; its stderr is
    appended to ``log``."""

    def __init__(self, port: int, flags: tuple[str, ...], log: Path, start_s: float = 15) -> None:
        with log.open("a") as err:
            self.proc = subprocess.Popen(
                [sys.executable, str(FAULTY), "--port", str(port), *flags],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
            )
        self.port = self._serving(start_s)

    def _serving(self, start_s: float) -> int:
        """The port of its serving line, read within ``start_s`` seconds."""
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], start_s)
        line = self.proc.stdout.readline() if ready else ""
        m = SERVING.fullmatch(line.strip())
        if m is None:
            self.stop()
            raise RuntimeError(f"no serving line within {start_s} s: {line!r}")
        return int(m.group(1))

    def stop(self) -> None:
        """SIGTERM by PID, then SIGKILL if it lingers."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


RESTART_DELAY_S = 0.5
"""The supervisor waits this long before a restart, as service managers do (systemd's
RestartSec, a container's back-off): a target back within milliseconds of a crash can
be back before anyone looks, and its crash then looks like a close."""


class Supervisor:
    """Restarts the faulty broker on the same port whenever it exits (at most
    ``max_starts`` starts, :data:`RESTART_DELAY_S` after the exit), as a service manager
    would."""

    def __init__(self, port: int, flags: tuple[str, ...], log: Path, max_starts: int = 100):
        self.port, self.flags, self.log, self.max_starts = port, flags, log, max_starts
        self.starts = 0
        self.failed: list[str] = []
        """Starts that did not serve (a port that could not be bound again, say)."""
        self.current: Faulty | None = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.done.is_set() and self.starts < self.max_starts:
            if self.current is None or self.current.proc.poll() is not None:
                if self.current is not None:
                    self.current.stop()
                    self.current = None
                    self.done.wait(RESTART_DELAY_S)
                self.starts += 1
                try:
                    self.current = Faulty(self.port, self.flags, self.log)
                except RuntimeError as exc:
                    self.failed.append(str(exc))
            self.done.wait(0.02)

    def close(self) -> None:
        self.done.set()
        self.thread.join(30)
        if self.current is not None:
            self.current.stop()


@contextlib.contextmanager
def supervised(port: int, flags: tuple[str, ...], log: Path) -> Iterator[Supervisor]:
    sup = Supervisor(port, flags, log)
    try:
        yield sup
    finally:
        sup.close()
    assert not sup.thread.is_alive()


def lines_of(stream: IO[str], into: queue.Queue[tuple[float, str | None]]) -> None:
    """Each line of ``stream`` with the time it arrived; None at its end."""
    for line in stream:
        into.put((time.monotonic(), line.rstrip("\n")))
    into.put((time.monotonic(), None))


# ------------------------------------------------------------------------- tests


def test_target_cmd_crash_is_minimized_and_the_campaign_runs_to_its_last_case(
    tmp_path: Path,
) -> None:
    """--target-cmd: the crash is restarted past, minimized, and replays on a new start."""
    proc = fuzz(tmp_path, "--cases", str(CASES), "--seed", "0", "--target-cmd", EXIT_FAULT)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    err = flat(proc.stderr)
    assert "CRASH:" in err
    assert f"{CASES} cases in" in err and "not run" not in err, err
    assert "minimizing 1 finding signature(s)" in err
    path, repro = only(reproducers(tmp_path), "CRASH")
    assert repro["minimized"] is True, repro.get("note")
    assert "note" not in repro
    assert len(repro["cases"]) == 1
    assert repro["size"]["writes"] == 1
    assert repro["size"]["bytes"] <= 64
    assert repro["size"]["bytes"] * 4 <= repro["original"]["bytes"], repro["original"]
    assert FATAL in repro["target_output"][-3:], repro["target_output"]
    assert FATAL in (tmp_path / "out" / "target.log").read_text()
    got = rows(tmp_path)
    assert sorted(r["index"] for r in got) == list(range(CASES))
    down = [r["index"] for r in got if r["outcome"] in ("crash", "refused")]
    assert down and min(down) < CASES - 100, down  # it went on well past the crash

    replay = conformance(tmp_path, "replay", str(path), "--target-cmd", EXIT_FAULT)
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert "Traceback" not in replay.stderr
    assert f"{repro['signature']} ({path})" in replay.stdout
    assert "REPRODUCES" in replay.stdout


def test_target_by_address_stops_at_the_crash_and_is_minimized_once_it_is_back(
    tmp_path: Path,
) -> None:
    """--target: the campaign ends at the crash with one unminimized reproducer that says
    how to minimize it; replay --minimize does it once a supervisor restarts the broker."""
    log = tmp_path / "broker.err"
    broker = Faulty(0, ("--exit-on-batch-field",), log)
    try:
        address = f"127.0.0.1:{broker.port}"
        start = time.monotonic()
        proc = fuzz(tmp_path, "--cases", str(CASES), "--seed", "0", "--target", address)
        took = time.monotonic() - start
        assert broker.proc.wait(5) == 70
    finally:
        broker.stop()
    assert FATAL in log.read_text()
    assert proc.returncode == 1, proc.stderr
    assert took < 30, took
    assert "Traceback" not in proc.stderr
    err = flat(proc.stderr)
    found = reproducers(tmp_path)
    assert len(found) == 1, list(found)
    path, repro = only(found, "CRASH")
    rel = path.relative_to(tmp_path)
    assert repro["minimized"] is False
    assert "not minimized" in repro["note"]
    assert f"conformance replay --minimize {rel}" in flat(repro["note"])
    assert len(repro["cases"]) > 1
    assert "the campaign stopped" in err and "the fuzzer cannot restart" in err
    assert f"saved unminimized: {rel}" in err
    assert f"conformance replay --minimize {rel} --target {address}" in err
    assert "not run (the target went down)" in err
    assert len(rows(tmp_path)) < CASES

    with supervised(broker.port, ("--exit-on-batch-field",), log) as sup:
        mini = conformance(tmp_path, "replay", "--minimize", str(rel), "--target", address)
    assert sup.failed == [], sup.failed  # the port could be bound again at once
    assert sup.starts > 1  # it crashed during the minimization and came back
    assert mini.returncode == 1, mini.stdout + mini.stderr
    assert "Traceback" not in mini.stderr
    out = flat(mini.stdout)
    m = re.search(r": (\d+) case\(s\), (\d+) bytes -> 1 case\(s\), (\d+) bytes; minimized;", out)
    assert m, out
    assert int(m.group(1)) == len(repro["cases"])
    assert int(m.group(3)) < int(m.group(2))
    assert f"saved over {rel}" in out
    after = yaml.safe_load(path.read_text())
    assert after["minimized"] is True, after.get("note")
    assert len(after["cases"]) == 1
    assert after["size"]["bytes"] < repro["size"]["bytes"]


def test_target_cmd_stop_is_a_stopped_finding_minimized_to_one_case(tmp_path: Path) -> None:
    """--target-cmd: a broker that stops serving is one STOPPED signature, minimized."""
    cases = 500  # seed 0 sends its first 'list' frame at case 411
    proc = fuzz(
        tmp_path, "--cases", str(cases), "--seed", "0", "--target-cmd", f"{BROKER} --stop-on"
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "STOPPED:" in proc.stderr
    path, repro = only(reproducers(tmp_path), "STOPPED")
    assert repro["minimized"] is True, (path.name, repro.get("note"), repro["detail"])
    assert len(repro["cases"]) == 1
    sent = bytes.fromhex("".join(repro["cases"][0]["writes"]))
    assert sent[4:].startswith(b"list"), sent
    assert "stopped serving after list" in repro["target_output"], repro["target_output"]
    assert sorted(r["index"] for r in rows(tmp_path)) == list(range(cases))


def test_target_by_address_keeps_a_culprit_that_started_long_after_a_stalled_case(
    tmp_path: Path,
) -> None:
    """--target: a crash first seen by a long-stalled case still saves a reproducer that
    holds the culprit (it replays on a fresh broker)."""
    log = tmp_path / "broker.err"
    stalling = Faulty(0, ("--exit-on-batch-field", "--stall-every", "40"), log)
    try:
        address = f"127.0.0.1:{stalling.port}"
        proc = conformance(
            tmp_path,
            *("fuzz", "-q", "--deadline", "2", "--cases", "1000", "--seed", "0"),
            *("--out", "out", "--findings", "findings", "--target", address),
        )
        assert stalling.proc.wait(5) == 70
    finally:
        stalling.stop()
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    path, repro = only(reproducers(tmp_path), "CRASH")
    assert repro["minimized"] is False
    fresh = Faulty(0, ("--exit-on-batch-field",), log)
    try:
        replay = conformance(tmp_path, "replay", str(path), "--target", f"127.0.0.1:{fresh.port}")
    finally:
        fresh.stop()
    window = f"cases {repro['cases'][0]['index']}..{repro['cases'][-1]['index']}"
    assert replay.returncode == 1, (window, replay.stdout + replay.stderr)
    assert "REPRODUCES" in replay.stdout


@pytest.mark.parametrize(
    ("args", "message", "max_lines"),
    [
        (("--target-cmd", f"{PYTHON} {shlex.quote(str(FAULTY))} --port 9999"), "has no {port}", 1),
        (
            ("--target-cmd", f"{PYTHON} -c \"import sys; print('boom {{port}}'); sys.exit(3)\""),
            "--target-cmd exited with code 3 before serving on port",
            2,
        ),
        (
            (
                "--target-cmd",
                f"{PYTHON} -c \"import time; print('up {{port}}', flush=True); time.sleep(60)\"",
                "--target-start-timeout",
                "1",
            ),
            "did not serve on port",
            2,
        ),
        (("--target-cmd", "no-such-broker-binary --port {port}"), "cannot run --target-cmd", 1),
        (
            ("--target", "127.0.0.1:1", "--target-cmd", EXIT_FAULT),
            "argument --target-cmd: not allowed with argument --target",
            None,
        ),
        (
            ("--target-cmd", EXIT_FAULT, "--spark-master", "spark://example:7077"),
            "--target-cmd is for campaigns in this process",
            1,
        ),
        (("--connections", "0"), "--connections must be from 1 to 512", 1),
        (("--max-time", "0"), "--max-time must be a positive number of seconds", 1),
    ],
    ids=[
        "no-port",
        "exits-at-once",
        "never-serves",
        "not-found",
        "target-and-target-cmd",
        "remote-spark",
        "connections-0",
        "max-time-0",
    ],
)
def test_target_usage_errors_are_short_and_exit_2(
    tmp_path: Path, args: tuple[str, ...], message: str, max_lines: int | None
) -> None:
    """Each bad --target-cmd / option combination is exit 2, a short message, no traceback."""
    start = time.monotonic()
    proc = fuzz(tmp_path, "--cases", "10", *args, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert time.monotonic() - start < 20
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    if max_lines is None:  # argparse: its usage, then the error on the last line
        assert message in lines[-1], proc.stderr
    else:
        assert len(lines) <= max_lines, proc.stderr
        assert lines[0].startswith("conformance fuzz: ") and message in lines[0], proc.stderr
    if "code 3" in message:
        assert lines[-1].strip().startswith("| boom "), proc.stderr
    if "did not serve" in message:
        assert "within --target-start-timeout 1 s" in lines[0]
        assert lines[-1].strip().startswith("| up "), proc.stderr
    assert not (tmp_path / "findings").exists()


def test_max_time_ends_a_huge_campaign_early_with_what_it_has(tmp_path: Path) -> None:
    """--max-time 1 ends a million-case campaign on the embedded broker in seconds, exit 0."""
    start = time.monotonic()
    proc = fuzz(tmp_path, "--cases", "1000000", "--max-time", "1", timeout=60)
    took = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    assert took < 15, took
    assert "Traceback" not in proc.stderr
    err = flat(proc.stderr)
    assert "no finding" in err
    m = re.search(
        r"(\d+) cases in [\d.]+ s .*; (\d+) cases not run \(the --max-time was reached\)", err
    )
    assert m, err
    ran, not_run = int(m.group(1)), int(m.group(2))
    assert ran > 0 and ran + not_run == 1_000_000
    assert sorted(r["index"] for r in rows(tmp_path)) == list(range(ran))


def test_without_a_terminal_a_long_campaign_prints_progress_while_it_runs(
    tmp_path: Path,
) -> None:
    """Without a terminal, a campaign over 10 s prints a 'fuzz: N/M cases' line while it runs."""
    cmd = [
        *("fuzz", "--cases", str(CASES), "--connections", "1", "--deadline", "1"),
        *("--max-time", "12", "--out", "out", "--findings", "findings"),
        *("--target-cmd", f"{BROKER} --stall-every 3"),
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "conformance", *cmd],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k not in FORCE_TERMINAL},
    )
    got: queue.Queue[tuple[float, str | None]] = queue.Queue()
    assert proc.stderr is not None
    reader = threading.Thread(target=lines_of, args=(proc.stderr, got), daemon=True)
    reader.start()
    lines: list[str] = []
    interrupted = False
    end = time.monotonic() + 90
    try:
        while time.monotonic() < end:
            try:
                _, line = got.get(timeout=max(end - time.monotonic(), 0.01))
            except queue.Empty:
                break
            if line is None:
                break
            lines.append(line)
            if line.startswith("minimizing "):
                # the campaign is over, its rows and reproducers written: minimizing a
                # broker that stalls every third connection takes a minute, so end it
                proc.send_signal(signal.SIGINT)
                interrupted = True
        code = proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        reader.join(10)
        proc.stderr.close()
    text = "\n".join(lines)
    assert "Traceback" not in text, text
    assert interrupted, text
    assert code == 130, text  # Ctrl-C in the minimization: stopped cleanly
    ran = len(rows(tmp_path))
    assert 0 < ran < CASES
    progress = [m for m in map(PROGRESS.match, lines) if m]
    assert progress, text
    assert all(int(m.group(2)) == CASES for m in progress)
    # a line printed while cases were still running, not only once they had all ended
    assert min(int(m.group(1)) for m in progress) < ran, text
    hangs = [d for d in reproducers(tmp_path).values() if d["finding"] == "HANG"]
    assert hangs, text


def test_sigterm_stops_the_campaign_and_the_broker_it_started(tmp_path: Path) -> None:
    """A cancelled CI job (SIGTERM) ends the campaign like Ctrl-C: exit 130, no traceback,
    and the --target-cmd broker's process group is gone."""
    cmd = [sys.executable, "-m", "conformance", "fuzz", "--cases", "1000000", "--max-time", "60"]
    cmd += ["--out", "out", "--findings", "findings", "--target-cmd", BROKER]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        ready, _, _ = select.select([proc.stderr], [], [], 30)  # printed once it serves
        header = proc.stderr.readline() if ready else ""
        found = re.search(r"\(pid (\d+)\)", header)
        assert found is not None, f"no header line within 30 s: {header!r}"
        pid = int(found.group(1))
        time.sleep(1.0)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(30)
        rest = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        if proc.stderr is not None:
            proc.stderr.close()
    assert code == 130, rest
    assert "Traceback" not in rest
    assert not _running(pid), f"the broker (pid {pid}) was left running"


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
