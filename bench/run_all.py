"""Where the time of ``conformance run --all`` goes, against the embedded broker.

``python -m bench.run_all [--rounds 1] [--revision kafka=apache ...] [--slow-s 0.25]``
(bench/README.md).  Each round runs, in this order:

1. ``conformance run --all -q`` (one ``serve --all`` broker, every suite at once, the
   cross-protocol matrix after them): its wall time as a user sees it, and each
   protocol's from ``results-all.json``;
2. the baseline, in the same round: the same suites one after another, each
   ``conformance run --protocol P -q`` with its own embedded broker, as a broker's CI
   would have run them before ``--all``: the sum of their wall times.

Then, per protocol (from the ``--all`` run's results): cases, the suite's own run time
(``duration_s``: collection and cases) against its child's wall time (the difference is
process start and imports), the time of the *waiting* cases (at least ``--slow-s`` each:
they wait on timers, a join delay, a session timeout, a silence window, not on the CPU)
against the rest (the mean per case of those is the CPU-bound cost), and the slowest
cases by name.  Last, the ratio of the ``--all`` run to the baseline and whether the goal
(all five under 10 s on this machine) is met.  Nothing here is a pass/fail test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script, python bench/run_all.py: find the package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.targets import REPO

GOAL_S = 10.0


def _run(cmd: list[str], cwd: str) -> tuple[float, int]:
    begun = time.monotonic()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, check=False)
    if proc.returncode not in (0, 1):
        sys.stderr.write(proc.stderr.decode(errors="replace"))
    return time.monotonic() - begun, proc.returncode


def _conformance(*args: str) -> list[str]:
    return [sys.executable, "-m", "conformance", *args]


def one_round(revisions: list[str], slow_s: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-run-all-") as tmp:
        flags = [a for r in revisions for a in ("--revision", r)]
        wall, code = _run(_conformance("run", "--all", "-q", "--reports", "all", *flags), tmp)
        summary = json.loads((Path(tmp) / "all" / "results-all.json").read_text())
        protocols = []
        for entry in summary["protocols"]:
            name = entry["protocol"]
            results = json.loads((Path(tmp) / "all" / name / "results.json").read_text())
            durations = sorted(
                ((c["duration_s"], c["case_id"]) for c in results["cases"]), reverse=True
            )
            waiting = [d for d, _ in durations if d >= slow_s]
            rest = [d for d, _ in durations if d < slow_s]
            protocols.append(
                {
                    "name": name,
                    "revision": entry["revision"],
                    "cases": len(durations),
                    "wall_s": entry["wall_s"],
                    "suite_s": results["duration_s"],
                    "waiting": (len(waiting), sum(waiting)),
                    "rest": (len(rest), sum(rest)),
                    "slowest": durations[:3],
                }
            )
        sequential = 0.0
        singles: dict[str, float] = {}
        for entry in summary["protocols"]:
            name = entry["protocol"]
            own = [r.split("=", 1)[1] for r in revisions if r.startswith(name + "=")]
            extra = ["--revision", own[0]] if own else []
            took, _ = _run(
                _conformance("run", "--protocol", name, "-q", "--reports", f"one-{name}", *extra),
                tmp,
            )
            singles[name] = took
            sequential += took
        return {
            "wall_s": wall,
            "exit_code": code,
            "cross_s": (summary.get("cross") or {}).get("wall_s", 0.0),
            "protocols": protocols,
            "sequential_s": sequential,
            "singles": singles,
        }


def report(rounds: list[dict[str, Any]], slow_s: float) -> None:
    last = rounds[-1]
    walls = [r["wall_s"] for r in rounds]
    seqs = [r["sequential_s"] for r in rounds]
    print(f"conformance run --all against the embedded broker, {len(rounds)} round(s)")
    print(f"load average before: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores\n")
    print(
        f"{'protocol':<10} {'revision':<9} {'cases':>5} {'wall s':>7} {'suite s':>8} "
        f"{'start s':>7} {'waiting':>16} {'rest':>18}  slowest"
    )
    for p in last["protocols"]:
        n_wait, t_wait = p["waiting"]
        n_rest, t_rest = p["rest"]
        mean = 1000 * t_rest / n_rest if n_rest else 0.0
        slowest = ", ".join(f"{cid} {d:.2f}" for d, cid in p["slowest"])
        print(
            f"{p['name']:<10} {p['revision']:<9} {p['cases']:>5} {p['wall_s']:>7.2f} "
            f"{p['suite_s']:>8.2f} {p['wall_s'] - p['suite_s']:>7.2f} "
            f"{n_wait:>4} in {t_wait:>6.2f} s {n_rest:>4} in {t_rest:>5.2f} s "
            f"({mean:.1f} ms)  {slowest}"
        )
    print(
        f"\n'waiting': cases of {slow_s} s or more (timers: join delays, session timeouts, "
        "silence windows); 'rest': the others, their mean per case; 'start': process start, "
        "imports and the embedded broker's answer to the first request."
    )
    print(f"cross-protocol matrix: {last['cross_s']:.2f} s")
    median_all, median_seq = statistics.median(walls), statistics.median(seqs)
    print(
        f"\nrun --all: {median_all:.1f} s (median of {len(walls)}: "
        f"{', '.join(f'{w:.1f}' for w in walls)}); the same suites one after another, "
        f"each with its own broker: {median_seq:.1f} s "
        f"({', '.join(f'{k} {v:.1f}' for k, v in last['singles'].items())})"
    )
    print(
        f"ratio run --all / one after another: {median_all / median_seq:.2f}; goal "
        f"{GOAL_S:.0f} s: {'met' if median_all < GOAL_S else 'NOT met'} "
        f"({median_all:.1f} s)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--revision",
        action="append",
        default=[],
        metavar="PROTO=REV",
        help="a protocol's revision (repeatable), e.g. kafka=apache",
    )
    parser.add_argument("--slow-s", type=float, default=0.25)
    args = parser.parse_args(argv)
    rounds = [one_round(args.revision, args.slow_s) for _ in range(max(1, args.rounds))]
    report(rounds, args.slow_s)
    return 0


if __name__ == "__main__":
    os.chdir(REPO)
    sys.exit(main())
