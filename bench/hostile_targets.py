"""How long ``run --target-cmd`` takes against hostile targets, and how much memory it holds.

``python -m bench.hostile_targets [--timeout 1] [--protocol P ...] [--behaviour B ...]``

For every protocol and every behaviour of ``tests/support/hostile_target.py`` (a slow drip,
a reset on connect, endless garbage, a close mid-frame, replies to other requests), runs
``conformance run --protocol P --target-cmd ...`` as a user would and prints its exit code,
wall time, peak resident memory (VmHWM, read while it runs), and its verdicts; last, the
same for a run against the embedded reference broker of each protocol, the baseline.  The
README's bounds come from this table.  Every process it starts ends with its run.
"""

from __future__ import annotations

import argparse
import collections
import json
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from tests.support.hostile_target import BEHAVIOURS
from tests.support.rss import watch_peak

HOSTILE = Path(__file__).resolve().parents[1] / "tests" / "support" / "hostile_target.py"
PROTOCOLS = ("cursus", "iggy", "kafka", "minikafka", "v1line")


def run(protocol: str, behaviour: str | None, timeout: float, tmp: Path) -> tuple[str, ...]:
    revision = ["--revision", "apache"] if protocol == "kafka" else []
    reports = tmp / f"{protocol}-{behaviour or 'reference'}"
    cmd = [sys.executable, "-m", "conformance", "run", "--protocol", protocol, *revision, "-q"]
    cmd += ["--reports", str(reports), "--timeout", f"{timeout:g}"]
    if behaviour is not None:
        words = [sys.executable, str(HOSTILE), "--port", "{port}", "--behaviour", behaviour]
        words += ["--protocol", protocol, "--", *revision]
        cmd += ["--target-cmd", shlex.join(words), "--target-start-timeout", "10"]
    began = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp)
    done, peak = threading.Event(), [0.0]
    threading.Thread(target=watch_peak, args=(proc.pid, done, peak), daemon=True).start()
    try:
        proc.communicate(timeout=900)
    finally:
        done.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    took = time.perf_counter() - began
    verdicts: collections.Counter[str] = collections.Counter()
    results = reports / "results.json"
    if results.exists():
        verdicts.update(c["verdict"] for c in json.loads(results.read_text())["cases"])
    said = ", ".join(f"{n} {v}" for v, n in verdicts.most_common()) or "no cases (start refused)"
    return (
        protocol,
        behaviour or "reference",
        str(proc.returncode),
        f"{took:.1f}",
        f"{peak[0]:.0f}",
        said,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timeout", type=float, default=1.0)
    parser.add_argument("--protocol", action="append", choices=PROTOCOLS)
    parser.add_argument("--behaviour", action="append", choices=BEHAVIOURS)
    args = parser.parse_args()
    chosen = args.protocol or list(PROTOCOLS)
    kinds: list[str | None] = [*(args.behaviour or BEHAVIOURS), None]
    print(f"run --target-cmd against hostile targets, --timeout {args.timeout:g}")
    print("| protocol | target | exit | seconds | peak RSS MB | verdicts |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="hostile-") as tmp:
        for protocol in chosen:
            for behaviour in kinds:
                row = run(protocol, behaviour, args.timeout, Path(tmp))
                print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
