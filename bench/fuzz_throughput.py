"""Fuzz throughput: cases/s of our fuzzer and of boofuzz against one reference broker.

Run with ``python -m bench.fuzz_throughput [--cases N]``.  One clean Cursus reference
broker is started (``conformance serve --port 0``, stopped by its PID at the end) and,
in this order, against it:

1. our fuzzer in this process: :func:`conformance.fuzz.campaign.run_range` over cases
   ``[0, N)`` (after one unmeasured pass over the same cases, so that every measured
   phase meets a broker already holding what those cases create);
2. our fuzzer on Spark ``local[1]``, then ``local[2]``:
   :func:`conformance.fuzz.spark.run_campaign` over the same N cases, each after three small
   warm-up campaigns (JVM, SparkContext and Python workers started: not measured);
3. boofuzz 0.4.2 in a child process, with its default ``Session`` settings except
   ``keep_web_open=False`` (the default waits for ENTER when the run ends) and
   ``index_end`` (its case limit), fuzzing a Cursus ``CREATE`` command behind a 4-byte
   big-endian ``s_size``.  Its default loggers stay on: the SQLite results database
   (written in a temporary folder) and the text logger, which prints every case to
   stdout (sent to /dev/null here).  It stops at ``--boofuzz-cases`` cases or after
   ``--boofuzz-seconds`` seconds, whichever comes first.

A case is one input sent and its outcome judged: ours read the replies owed and judge
them by the oracle; boofuzz's default session sends and does not read after a fuzzed
request (``receive_data_after_fuzz=False``).

Printed: cases, seconds, cases/s, and the CPU seconds of the fuzzer side (this process
and its children -- the Spark JVM and Python workers included -- or the boofuzz process)
and of the broker process, read from /proc; then the ratios and, per run, the likely
bottleneck.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from conformance.fuzz import protocol, spark
from conformance.fuzz.campaign import Options, run_range, setup
from conformance.fuzz.target import External
from conformance.runner import parse_target, stop_process, wait_serving

SEED = 2024
WARMUP_CASES = 300
WARMUP_ROUNDS = 3
"""Warm-up campaigns per Spark master: the first jobs of a JVM are slow (JIT)."""
TICK = os.sysconf("SC_CLK_TCK")
BUSY = 0.85
"""A side counts as saturated at this share of the CPU it can use."""
REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Run:
    name: str
    cases: int
    seconds: float
    fuzzer_cpu: float
    broker_cpu: float
    fuzzer_cores: int
    """How many CPUs the fuzzer side can use at once (its processes or Spark cores)."""
    parts: dict[str, float] | None = None
    """The fuzzer side's CPU by process kind (driver, jvm, workers), when it has several."""

    @property
    def rate(self) -> float:
        return self.cases / self.seconds if self.seconds > 0 else 0.0

    def per_case_ms(self, cpu: float) -> float:
        return 1000 * cpu / self.cases if self.cases else 0.0

    def bottleneck(self) -> str:
        cpus = os.cpu_count() or 1
        broker = self.broker_cpu / self.seconds
        fuzzer = self.fuzzer_cpu / self.seconds
        cores = min(self.fuzzer_cores, cpus)
        ceilings = (
            f"; ceilings from CPU per case: broker {self.cases / self.broker_cpu:.0f} cases/s "
            f"on its one core, fuzzer {cores * self.cases / self.fuzzer_cpu:.0f} cases/s "
            f"on {cores} core(s)"
        )
        if broker >= BUSY:
            verdict = f"target (the broker uses {broker:.0%} of its one core)"
        elif broker + fuzzer >= BUSY * cpus:
            verdict = f"machine ({broker + fuzzer:.0%} of {cpus} CPUs busy)"
        elif fuzzer >= BUSY * cores:
            verdict = f"fuzzer ({fuzzer:.0%} of {cores} core(s))"
        else:
            larger = "fuzzer" if self.fuzzer_cpu > self.broker_cpu else "target"
            verdict = (
                f"no side saturated (fuzzer {fuzzer:.0%}, broker {broker:.0%} of the wall "
                f"time): cases wait on round trips; per case the {larger} spends more CPU"
            )
        return verdict + ceilings


# -------------------------------------------------------------------- CPU from /proc


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()  # fields from the 3rd (state) on


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` and of its children it has reaped."""
    fields = _stat(pid)
    if fields is None:
        return 0.0
    return sum(int(v) for v in fields[11:15]) / TICK


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) is not None:
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def fuzzer_side_cpu(broker_pid: int) -> dict[str, float]:
    """CPU of this process and of its descendants but the broker, by kind: this
    process, Java (the Spark JVM), other processes (Spark's Python workers)."""
    skip = set(descendants(broker_pid))
    out = {"driver": cpu_seconds(os.getpid()), "jvm": 0.0, "workers": 0.0}
    for pid in descendants(os.getpid())[1:]:
        if pid in skip:
            continue
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        out["jvm" if comm == "java" else "workers"] += cpu_seconds(pid)
    return out


def measure(name: str, cases: int, cores: int, broker_pid: int, work: Callable[[], int]) -> Run:
    fuzzer0, broker0 = fuzzer_side_cpu(broker_pid), cpu_seconds(broker_pid)
    t0 = time.perf_counter()
    done = work()
    seconds = time.perf_counter() - t0
    broker = cpu_seconds(broker_pid) - broker0
    fuzzer = {k: v - fuzzer0[k] for k, v in fuzzer_side_cpu(broker_pid).items()}
    if done != cases:
        raise RuntimeError(f"{name}: {done} rows for {cases} cases")
    return Run(name, done, seconds, sum(fuzzer.values()), broker, cores, fuzzer)


# ------------------------------------------------------------------------ our fuzzer


def ours(address: str, cases: int, broker_pid: int, out: Path) -> list[Run]:
    proto = protocol("cursus")
    target = External.parse(address)
    options = Options()
    setup(proto, target, options.deadline)
    run_range(proto, target, SEED, 0, cases, options)  # the broker's warm-up pass
    runs = [
        measure(
            "ours, in one process",
            cases,
            1,
            broker_pid,
            lambda: len(run_range(proto, target, SEED, 0, cases, options)),
        )
    ]
    for cores in (1, 2):
        master = f"local[{cores}]"
        t0 = time.perf_counter()
        for _ in range(WARMUP_ROUNDS):
            spark.run_campaign(master, "cursus", address, SEED, WARMUP_CASES, options, out / "w")
        print(f"{master}: session and workers up in {time.perf_counter() - t0:.1f} s (excluded)")
        runs.append(
            measure(
                f"ours, Spark {master}",
                cases,
                cores,
                broker_pid,
                lambda m=master: len(
                    spark.run_campaign(m, "cursus", address, SEED, cases, options, out / m)
                ),
            )
        )
    spark.stop()
    return runs


# --------------------------------------------------------------------------- boofuzz


def boofuzz_child(port: int, max_cases: int, seconds: float, result: Path) -> None:
    """Runs in the child process: one boofuzz session, then its figures as JSON."""
    from boofuzz import (
        Session,
        Target,
        TCPSocketConnection,
        s_block,
        s_delim,
        s_get,
        s_initialize,
        s_size,
        s_string,
    )

    s_initialize("cursus-create")
    s_size("command", length=4, endian=">")
    with s_block("command"):
        s_string("CREATE")
        s_delim(" ")
        s_string("bench")
        s_delim(" ")
        s_string("4")
    session = Session(
        target=Target(connection=TCPSocketConnection("127.0.0.1", port)),
        index_end=max_cases,
        keep_web_open=False,
    )
    session.connect(s_get("cursus-create"))

    def out_of_time(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGALRM, out_of_time)
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    signal.setitimer(signal.ITIMER_REAL, seconds)
    stopped = "case limit"
    try:
        session.fuzz()
    except KeyboardInterrupt:
        stopped = "time limit"
    signal.setitimer(signal.ITIMER_REAL, 0)
    elapsed = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime - usage0.ru_utime - usage0.ru_stime
    figures = {
        "cases": session.num_cases_actually_fuzzed,
        "seconds": elapsed,
        "cpu": cpu,
        "mutations": session.num_mutations(max_depth=1),
        "stopped": stopped,
    }
    result.write_text(json.dumps(figures))


def boofuzz(
    port: int, max_cases: int, seconds: float, broker_pid: int
) -> tuple[Run, dict[str, object]]:
    with tempfile.TemporaryDirectory(prefix="boofuzz-bench-") as tmp:
        result = Path(tmp) / "result.json"
        cmd = [sys.executable, "-m", "bench.fuzz_throughput", "--boofuzz-child"]
        cmd += [str(port), str(max_cases), str(seconds), str(result)]
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        }
        broker0 = cpu_seconds(broker_pid)
        with (Path(tmp) / "stderr.log").open("wb") as err:
            child = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=err)
            try:
                child.wait(seconds + 120)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait(10)
        broker = cpu_seconds(broker_pid) - broker0
        if not result.exists():
            log = (Path(tmp) / "stderr.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"boofuzz exited {child.returncode} without figures:\n{log}")
        figures: dict[str, object] = json.loads(result.read_text())
    run = Run(
        "boofuzz 0.4.2, default session",
        int(str(figures["cases"])),
        float(str(figures["seconds"])),
        float(str(figures["cpu"])),
        broker,
        1,
    )
    return run, figures


# ------------------------------------------------------------------------- printing


def report(runs: list[Run], figures: dict[str, object], cases: int) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=120)
    table = Table(title=f"Fuzz throughput against one Cursus reference broker ({cases} cases)")
    for column in ("fuzzer", "cases", "seconds", "cases/s", "fuzzer CPU s", "broker CPU s"):
        table.add_column(column, justify="left" if column == "fuzzer" else "right")
    table.add_column("CPU ms/case fuzzer | broker", justify="right")
    for r in runs:
        table.add_row(
            r.name,
            str(r.cases),
            f"{r.seconds:.2f}",
            f"{r.rate:.1f}",
            f"{r.fuzzer_cpu:.2f} ({r.fuzzer_cpu / r.seconds:.0%})",
            f"{r.broker_cpu:.2f} ({r.broker_cpu / r.seconds:.0%})",
            f"{r.per_case_ms(r.fuzzer_cpu):.2f} | {r.per_case_ms(r.broker_cpu):.2f}",
        )
    console.print(table)
    inproc, l1, l2, boo = runs
    for r in (l1, l2):
        if r.parts:
            split = ", ".join(f"{k} {v:.2f} s" for k, v in r.parts.items())
            console.print(f"{r.name}: fuzzer CPU by process: {split}")
    console.print(
        f"boofuzz: {figures['cases']} cases (its request has {figures['mutations']} "
        f"single-field mutations), stopped by its {figures['stopped']}"
    )
    console.print(f"ratio ours (one process) / boofuzz: {inproc.rate / boo.rate:.2f}x")
    console.print(f"ratio ours (Spark local[2]) / boofuzz: {l2.rate / boo.rate:.2f}x")
    console.print(f"ratio Spark local[2] / local[1]: {l2.rate / l1.rate:.2f}x")
    console.print(f"ratio Spark local[1] / one process: {l1.rate / inproc.rate:.2f}x")
    console.print(f"machine: {os.cpu_count()} CPUs")
    for r in runs:
        console.print(f"bottleneck, {r.name}: {r.bottleneck()}")


# ----------------------------------------------------------------------------- main


def start_broker() -> tuple[subprocess.Popen[bytes], str]:
    cmd = [sys.executable, "-m", "conformance", "serve", "--protocol", "cursus", "--port", "0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    address = wait_serving(proc)
    if address is None:
        stop_process(proc)
        raise SystemExit("the reference broker did not start")
    return proc, address


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fuzz_throughput")
    parser.add_argument("--cases", type=int, default=5000, help="cases per run of ours")
    parser.add_argument("--boofuzz-cases", type=int, default=5000, help="boofuzz case limit")
    parser.add_argument("--boofuzz-seconds", type=float, default=60.0, help="boofuzz time limit")
    parser.add_argument("--boofuzz-child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.boofuzz_child:
        port, limit, seconds, result = args.boofuzz_child
        boofuzz_child(int(port), int(limit), float(seconds), Path(result))
        return 0
    proc, address = start_broker()
    try:
        with tempfile.TemporaryDirectory(prefix="fuzz-bench-") as tmp:
            runs = ours(address, args.cases, proc.pid, Path(tmp))
        run, figures = boofuzz(
            parse_target(address)[1], args.boofuzz_cases, args.boofuzz_seconds, proc.pid
        )
        runs.append(run)
    finally:
        stop_process(proc)
    report(runs, figures, args.cases)
    return 0


if __name__ == "__main__":
    sys.exit(main())
