"""A fuzz campaign against a broker that stalls one connection in ten: how long it takes,
how it exits, and when its first HANG reproducer reaches the disk.

``python -m bench.hang_campaign [--cases 20000] [--connections K] [-- FUZZ ARGS...]``

The goal it measures: *a 20,000-case campaign against a broker that stalls one
connection in ten finishes within 10 minutes, exits 1, and has the HANG reproducer on
disk before it ends.*  It starts a Cursus reference broker and, in front of it, the
stalling proxy of :mod:`bench.targets` (``stall --every 10``), then runs::

    python -m conformance fuzz --target 127.0.0.1:PROXYPORT --cases N --seed S \\
        --out OUT --findings OUT/findings [--connections K] [FUZZ ARGS...]

as a subprocess, its stdout and stderr in ``OUT/fuzz.log``.  Every second it looks for
``hang-*.yaml`` under the findings folder and notes when the first appears.  At the end
it prints the wall time, the exit code, when the first HANG reproducer appeared and how
long before the fuzzer exited (one that appeared after the last look takes its file's
modification time, which a rewrite of the file moves on), the proxy's count of accepted
and stalled connections, and the last lines of the fuzzer's output.

Bounded: after ``--timeout`` seconds (default 1200) the fuzzer is stopped by its PID
(SIGTERM, SIGKILL 10 s later) and the report says so.  The proxy and the broker are
stopped by their PIDs at the end, whatever happened.  ``OUT`` (``--out``, default a new
temporary folder) is kept, reproducers and log included.  It is a measurement, not a
test: it exits 0 once it has reported, 2 if the broker or the proxy did not start.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.targets import REPO, spawn, spawn_broker, stop

GOAL_S = 600.0
"""The goal's bound on the campaign's wall time."""
TAIL_LINES = 15


def hang_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("hang-*.yaml"), key=lambda p: p.stat().st_mtime)


def run(args: argparse.Namespace, extra: list[str], out: Path) -> int:
    findings, log_path = out / "findings", out / "fuzz.log"
    broker, broker_address = spawn_broker()
    proxy = None
    try:
        with (out / "proxy.log").open("wb") as proxy_log:
            every = str(args.every)
            proxy, address = spawn(
                "stall", "--upstream", broker_address, "--every", every, "--port", "0",
                stderr=proxy_log,
            )  # fmt: skip
        cmd = [sys.executable, "-m", "conformance", "fuzz", "--target", address]
        cmd += ["--cases", str(args.cases), "--seed", str(args.seed)]
        cmd += ["--out", str(out), "--findings", str(findings)]
        if args.connections is not None:
            cmd += ["--connections", str(args.connections)]
        cmd += extra
        print(f"broker {broker_address}, stalling proxy {address} (one connection in {every})")
        print("running:", " ".join(cmd[2:]), flush=True)
        with log_path.open("wb") as log:
            start_wall, start = time.time(), time.monotonic()
            fuzzer = subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
            try:
                first_seen, timed_out = _watch(fuzzer, findings, start, args)
            finally:  # an interrupted bench leaves no fuzzer behind
                if fuzzer.poll() is None:
                    stop(fuzzer)
            wall = time.monotonic() - start
    finally:
        if proxy is not None:
            stop(proxy)
        stop(broker)
    hangs = hang_files(findings) if findings.is_dir() else []
    _report(args, fuzzer.returncode, wall, timed_out, first_seen, hangs, start_wall)
    every_file = sorted(p.name for p in findings.glob("*.yaml")) if findings.is_dir() else []
    print(f"reproducers on disk ({len(every_file)}): {', '.join(every_file) or 'none'}")
    proxy_said = (out / "proxy.log").read_text(errors="replace").strip()
    print(f"proxy: {proxy_said.splitlines()[-1] if proxy_said else 'no count printed'}")
    lines = log_path.read_text(errors="replace").rstrip().splitlines()
    print(f"last {min(TAIL_LINES, len(lines))} lines of the fuzzer's output ({log_path}):")
    for line in lines[-TAIL_LINES:]:
        print(f"    {line}")
    print(f"outputs kept in {out}")
    return 0


Seen = tuple[float, str]
"""Seconds after the start, and the file name."""


def _watch(
    fuzzer: subprocess.Popen[bytes], findings: Path, start: float, args: argparse.Namespace
) -> tuple[Seen | None, bool]:
    """Wait for the fuzzer, looking for a HANG reproducer every second; stop it by its PID
    after ``args.timeout`` s.  (The first reproducer seen, whether it timed out.)"""
    first_seen: Seen | None = None
    tick = args.progress
    while True:
        try:
            fuzzer.wait(timeout=1.0)
            return first_seen, False
        except subprocess.TimeoutExpired:
            pass
        elapsed = time.monotonic() - start
        if first_seen is None and findings.is_dir() and (hangs := hang_files(findings)):
            first_seen = (elapsed, hangs[0].name)
            print(f"first HANG reproducer seen after {elapsed:.1f} s", flush=True)
        if elapsed >= args.timeout:
            print(f"hard timeout of {args.timeout:g} s: stopping the fuzzer (PID {fuzzer.pid})")
            stop(fuzzer)
            return first_seen, True
        if args.progress and elapsed >= tick:
            tick += args.progress
            print(f"... {elapsed:.0f} s", flush=True)


def _report(
    args: argparse.Namespace,
    code: int | None,
    wall: float,
    timed_out: bool,
    first_seen: Seen | None,
    hangs: list[Path],
    start_wall: float,
) -> None:
    print()
    print(f"wall time: {wall:.1f} s" + (" (stopped at the hard timeout)" if timed_out else ""))
    print(f"exit code: {code}" + (" (killed by this bench)" if timed_out else ""))
    if first_seen is not None:
        at, name = first_seen
        how = "seen by the 1 s poll while the fuzzer ran"
    elif hangs:
        at, name = hangs[0].stat().st_mtime - start_wall, hangs[0].name
        how = "not seen while the fuzzer ran; time from the file"
    if first_seen is not None or hangs:
        print(
            f"first HANG reproducer: {name}, on disk {at:.1f} s after the start, "
            f"{wall - at:.1f} s before the fuzzer ended ({how})"
        )
    else:
        print("first HANG reproducer: none on disk")
    print(
        f"goal ({args.cases} cases): within {GOAL_S / 60:.0f} min: "
        f"{_yes(wall <= GOAL_S and not timed_out)}; exits 1: {_yes(code == 1)}; "
        f"HANG reproducer on disk before the end: {_yes(first_seen is not None)}"
    )


def _yes(ok: bool) -> str:
    return "yes" if ok else "NO"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.hang_campaign",
        description="Unknown options (or those after --) are passed to 'conformance fuzz'.",
    )
    parser.add_argument("--cases", type=int, default=20_000, help="default 20000")
    parser.add_argument("--seed", type=int, default=0, help="default 0")
    parser.add_argument("--every", type=int, default=10, help="stall one connection in N")
    parser.add_argument("--connections", type=int, help="passed to the fuzzer when given")
    parser.add_argument(
        "--timeout", type=float, default=1200.0, help="hard bound in seconds (default 1200)"
    )
    parser.add_argument("--out", help="output folder (default: a new temporary folder)")
    parser.add_argument(
        "--progress", type=int, default=60, metavar="S", help="print a tick every S s (0: none)"
    )
    args, extra = parser.parse_known_args(argv)
    extra = [a for a in extra if a != "--"]
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="hang-campaign-"))
    out.mkdir(parents=True, exist_ok=True)
    try:
        return run(args, extra, out)
    except SystemExit as exc:  # a target that did not start
        print(exc, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
