"""Fuzz throughput: cases/s of our fuzzer and of boofuzz at its best, on two targets.

``python -m bench.fuzz_throughput [--cases N] [--rounds R]`` (bench/README.md says more).
Per target -- the Cursus reference broker and the minimal target of :mod:`bench.targets`,
which shows each fuzzer's own cost -- it runs ours, boofuzz, ours, boofuzz ... R times
each, N cases a run, each run against a fresh target process stopped by its PID after
it; then prints the median cases/s of each, the ratio ours/boofuzz, and the CPU per case
of each side (the fuzzer's process, the target's), read from /proc (Linux only).

* Ours: :func:`conformance.fuzz.campaign.run_range` over cases ``[0, N)`` in this
  process with ``Options(connections=K)``; the fuzz topics are created before the clock
  starts, and one unmeasured run first builds the seed's pool and imports what it needs.
* boofuzz 0.4.2 in a child process, ``Session(**BOOFUZZ_SESSION)``, on a request as rich
  as our pool (:func:`build_request`).  By default (``--boofuzz-order spread``) its N
  cases are every k-th of its ~55,000 single-field mutations, drawn before the clock
  starts and run by the session's own case loop (a private method in 0.4.2): in its own
  order (``natural``, ``Session.fuzz()``), 3,000 cases would fuzz the CREATE frame alone.

``--profile DIR`` adds an unmeasured, profiled run of each fuzzer per target and writes
``DIR/<fuzzer>-<target>.pstats`` and ``.txt`` (top 30 by cumulative time; ours merges
the main thread and the case threads).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import os
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.targets import REPO, spawn, spawn_broker, stop
from conformance.fuzz import protocol
from conformance.fuzz.campaign import Options, run_range, setup
from conformance.fuzz.target import External

SEED = 2024
DEADLINE = Options().deadline
"""Our deadline per case, and boofuzz's send and receive timeouts."""
TICK = os.sysconf("SC_CLK_TCK")
TARGETS: dict[str, Callable[[], tuple[subprocess.Popen[bytes], str]]] = {
    "reference": spawn_broker,
    "minimal": lambda: spawn("minimal", "--port", "0"),
}
BOOFUZZ_SESSION: dict[str, Any] = {
    "fuzz_loggers": [],  # no text logger (the default hex-dumps every byte to stdout)
    "db_filename": ":memory:",  # every Session logs each case to SQLite: in memory
    "fuzz_db_keep_only_n_pass_cases": 1,  # no record of a passing case (0, the default,
    # writes one per case, as our rows: 5-15% more boofuzz CPU per case here)
    "web_port": None,  # no web UI thread
    "keep_web_open": False,  # do not wait for ENTER at the end
    "receive_data_after_fuzz": True,  # one recv() after the fuzzed request (default False)
    "check_data_received_each_request": False,  # default: no reply is no failure
    "reuse_target_connection": False,  # default: a new connection per case, as ours
    "sleep_time": 0.0,  # default
}
REQUEST = "cursus-rich"
TEXT_COMMANDS = (
    ("create", "CREATE", "bench", "4"),
    ("subscribe", "SUBSCRIBE", "bench", "group"),
    ("consume", "CONSUME", "bench", "0", "0"),
    ("commit", "COMMIT", "bench", "group", "0", "0"),
    ("stream", "STREAM", "bench", "3", "0"),  # silent by design: last, as nothing follows
)
"""The request's five text commands (CREATE first: the batch then finds its topic).  No
LIST: every CREATE whose topic is mutated creates a topic, so a LIST reply grows with
each case and the broker's cost per case with it (5-9x the broker CPU in 3,000 cases)."""


@dataclass
class Run:
    fuzzer: str
    target: str
    cases: int
    seconds: float
    fuzzer_cpu: float
    target_cpu: float
    bytes_sent: int
    note: str = ""
    mutations: int = 0
    """boofuzz: single-field mutations its request has."""

    @property
    def rate(self) -> float:
        return self.cases / self.seconds if self.seconds > 0 else 0.0

    def ms(self, seconds: float) -> float:
        return 1000 * seconds / self.cases if self.cases else 0.0


def cpu_of(pid: int) -> float:
    """utime + stime of process ``pid``, all its threads (not its children)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = text[text.rindex(")") + 2 :].split()  # from the 3rd field (state) on
    return (int(fields[11]) + int(fields[12])) / TICK


# ------------------------------------------------------------------------- our fuzzer


def run_ours(kind: str, cases: int, connections: int, profile: Path | None = None) -> Run:
    proto = protocol("cursus")
    options = Options(connections=connections)
    proc, address = TARGETS[kind]()
    try:
        target = External.parse(address)
        setup(proto, target, options.deadline)
        cpu0, target0, t0 = cpu_of(os.getpid()), cpu_of(proc.pid), time.perf_counter()
        with profiled(profile / f"ours-{kind}" if profile else None):
            rows = run_range(proto, target, SEED, 0, cases, options)
        seconds = time.perf_counter() - t0
        cpu, target_cpu = cpu_of(os.getpid()) - cpu0, cpu_of(proc.pid) - target0
    finally:
        stop(proc)
    found, lost = sum(bool(r.finding) for r in rows), sum(r.canary == "lost" for r in rows)
    note = f"{found} findings, {lost} canary checks lost" if found or lost else ""
    sent = sum(len(r.sent) for r in rows)
    return Run("ours", kind, len(rows), seconds, cpu, target_cpu, sent, note)


@contextlib.contextmanager
def profiled(stem: Path | None) -> Iterator[None]:
    """cProfile this thread and every thread started meanwhile (their stats merged), then
    write ``stem.pstats`` and the top 30 by cumulative time in ``stem.txt``."""
    if stem is None:
        yield
        return
    main, threads = cProfile.Profile(), []

    def start_in_thread(*_: object) -> None:
        threads.append(cProfile.Profile())
        threads[-1].enable()  # from now on the thread's profile function, not this hook

    threading.setprofile(start_in_thread)
    main.enable()
    try:
        yield
    finally:
        main.disable()
        threading.setprofile(None)
        stats = pstats.Stats(main)
        for prof in threads:
            stats.add(prof)
        stem.parent.mkdir(parents=True, exist_ok=True)
        stats.dump_stats(f"{stem}.pstats")
        with open(f"{stem}.txt", "w") as out:
            pstats.Stats(f"{stem}.pstats", stream=out).sort_stats("cumulative").print_stats(30)


# ----------------------------------------------------------------------------- boofuzz


def build_request() -> None:
    """The boofuzz request: a Cursus batch of one message, every length an ``s_size`` over
    its block, and the text commands, each frame behind a 4-byte big-endian ``s_size``."""
    import boofuzz as bf

    def sized(name: str, length: int) -> Any:
        bf.s_size(name, length=length, endian=">", name=f"{name}_len")
        return bf.s_block(name)

    def str16(name: str, value: str) -> None:
        with sized(name, 2):
            bf.s_string(value, encoding="utf-8", name=f"{name}_text")

    def command(name: str, verb: str, *args: str) -> None:
        with sized(name, 4):
            bf.s_string(verb, encoding="utf-8", name=f"{name}_verb")
            for i, arg in enumerate(args):
                bf.s_delim(" ", name=f"{name}_sp{i}")
                bf.s_string(arg, encoding="utf-8", name=f"{name}_arg{i}")

    bf.s_initialize(REQUEST)
    command(*TEXT_COMMANDS[0])
    with sized("batch", 4):
        bf.s_word(0xBA7C, endian=">", fuzzable=False, name="magic")
        for name, value in (("topic", "bench"), ("partition", "0"), ("acks", "1")):
            str16(name, value)
        bf.s_byte(0, name="idempotent")
        for name in ("seq_start", "seq_end"):
            bf.s_qword(0, endian=">", name=name)
        bf.s_dword(1, endian=">", name="message_count")
        bf.s_qword(0, endian=">", name="offset")
        bf.s_qword(1, endian=">", name="seq_num")
        str16("producer_id", "bench-producer")
        str16("key", "key")
        bf.s_qword(0, endian=">", name="epoch")
        with sized("payload", 4):
            bf.s_bytes(b"hello cursus", name="payload_bytes")
        str16("event_type", "created")
        bf.s_dword(1, endian=">", name="schema_version")
        bf.s_qword(1, endian=">", name="aggregate_version")
        str16("metadata", "{}")
    for cmd in TEXT_COMMANDS[1:]:
        command(*cmd)


def boofuzz_child(params: dict[str, Any]) -> None:
    """In the child process: one boofuzz session, then its figures as JSON."""
    from boofuzz import Session, Target, TCPSocketConnection, s_get
    from boofuzz.mutation_context import MutationContext

    build_request()
    timeout, cases = params["timeout"], params["cases"]
    conn = TCPSocketConnection("127.0.0.1", params["port"], timeout, timeout)
    seen = {"sent": 0, "waited": 0}
    send, recv = conn.send, conn.recv

    def counted_send(data: bytes) -> int:
        seen["sent"] += len(data)
        return int(send(data))

    def timed_recv(max_bytes: int) -> bytes:
        t0 = time.perf_counter()
        data: bytes = recv(max_bytes)
        seen["waited"] += not data and time.perf_counter() - t0 >= 0.9 * timeout
        return data

    conn.send, conn.recv = counted_send, timed_recv
    natural = params["order"] == "natural"
    limit = {"index_end": cases} if natural else {}
    session = Session(target=Target(connection=conn), **BOOFUZZ_SESSION, **limit)
    session.connect(s_get(REQUEST))
    total = session.num_mutations(max_depth=1)
    work: Callable[[], object]
    if natural:
        work = lambda: session.fuzz(max_depth=1)  # noqa: E731
    else:
        stride = max(total // cases, 1)
        picked = [
            MutationContext(message_path=list(m.message_path), mutations=m.mutations)
            for i, m in enumerate(session._generate_mutations_indefinitely(max_depth=1))
            if i % stride == 0
        ][:cases]
        session.total_num_mutations = total  # as fuzz() sets it; total_mutant_index is past 1
        work = lambda: session._main_fuzz_loop(iter(picked))  # noqa: E731
    usage0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    with profiled(Path(params["profile"]) if params["profile"] else None):
        work()
    seconds = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    figures = {
        "cases": session.num_cases_actually_fuzzed,
        "seconds": seconds,
        "cpu": usage.ru_utime + usage.ru_stime - usage0.ru_utime - usage0.ru_stime,
        "mutations": total,
        **seen,
    }
    Path(params["result"]).write_text(json.dumps(figures))


def run_boofuzz(kind: str, cases: int, order: str, timeout: float, profile: Path | None) -> Run:
    with tempfile.TemporaryDirectory(prefix="boofuzz-bench-") as folder:
        result, err = Path(folder) / "result.json", Path(folder) / "stderr.log"
        proc, address = TARGETS[kind]()
        params = {
            "port": int(address.rpartition(":")[2]), "cases": cases, "order": order,
            "timeout": timeout, "result": str(result),
            "profile": str(profile / f"boofuzz-{kind}") if profile else "",
        }  # fmt: skip
        cmd = [sys.executable, "-m", "bench.fuzz_throughput", "--boofuzz-child", json.dumps(params)]
        path = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
        target0 = cpu_of(proc.pid)
        try:
            with err.open("wb") as log:
                child = subprocess.run(
                    cmd, cwd=folder, env={**os.environ, "PYTHONPATH": path},
                    stdout=subprocess.DEVNULL, stderr=log, check=False,
                )  # fmt: skip
        finally:
            target_cpu = cpu_of(proc.pid) - target0
            stop(proc)
        if not result.exists():
            tail = err.read_text(errors="replace")[-2000:]
            raise SystemExit(f"boofuzz exited {child.returncode} without figures:\n{tail}")
        got = json.loads(result.read_text())
    note = f"{got['waited']} recv waits of {timeout:g} s" if got["waited"] else ""
    return Run(
        "boofuzz", kind, got["cases"], got["seconds"], got["cpu"], target_cpu, got["sent"],
        note, got["mutations"],
    )  # fmt: skip


# ---------------------------------------------------------------------------- report


def report(runs: list[Run], args: argparse.Namespace) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=130)
    ratios: dict[str, float] = {}
    for kind in args.targets:
        table = Table(title=f"{kind} target: {args.cases} cases a run, {args.rounds} round(s)")
        for column in ("run", "cases/s", "wall ms/case", "CPU ms/case fuzzer | target"):
            table.add_column(column, justify="left" if column == "run" else "right")
        for column in ("CPU % of wall fuzzer | target", "bytes/case", "note"):
            table.add_column(column, justify="left" if column == "note" else "right")
        medians: dict[str, float] = {}
        for fuzzer in ("ours", "boofuzz"):
            mine = [r for r in runs if r.target == kind and r.fuzzer == fuzzer]
            for i, r in enumerate(mine, 1):
                table.add_row(
                    f"{fuzzer} #{i}", f"{r.rate:.0f}", f"{r.ms(r.seconds):.2f}",
                    f"{r.ms(r.fuzzer_cpu):.2f} | {r.ms(r.target_cpu):.2f}",
                    f"{r.fuzzer_cpu / r.seconds:.0%} | {r.target_cpu / r.seconds:.0%}",
                    f"{r.bytes_sent / max(r.cases, 1):.0f}", r.note,
                )  # fmt: skip
            medians[fuzzer] = statistics.median(r.rate for r in mine)
            cpu = [
                statistics.median(r.ms(getattr(r, f"{side}_cpu")) for r in mine)
                for side in ("fuzzer", "target")
            ]
            table.add_row(
                f"[bold]{fuzzer}, median", f"[bold]{medians[fuzzer]:.0f}",
                f"{1000 / medians[fuzzer]:.2f}", f"{cpu[0]:.2f} | {cpu[1]:.2f}",
            )  # fmt: skip
        console.print(table)
        ratios[kind] = medians["ours"] / medians["boofuzz"]
        console.print(
            f"{kind}: ours {medians['ours']:.0f} cases/s, boofuzz {medians['boofuzz']:.0f} "
            f"cases/s: ours/boofuzz = {ratios[kind]:.2f}x\n"
        )
    said = "; ".join(
        f"against the {k} target ours runs {v:.2f}x boofuzz's cases/s" for k, v in ratios.items()
    )
    console.print(
        f"In plain words: {said} (median of {args.rounds} interleaved run(s) each, {args.cases} "
        f"cases a run, our connections={args.connections}, {os.cpu_count()} CPUs, load "
        f"average {args.load:.2f} before and {os.getloadavg()[0]:.2f} after)."
    )
    mutations = next(r.mutations for r in runs if r.fuzzer == "boofuzz")
    order = (
        "in its own order from the first"
        if args.boofuzz_order == "natural"
        else f"every {max(mutations // args.cases, 1)}th, spread over all of them"
    )
    settings = ", ".join(f"{k}={v!r}" for k, v in BOOFUZZ_SESSION.items())
    console.print(
        f"boofuzz 0.4.2 settings: Session({settings}); TCPSocketConnection(send_timeout="
        f"{args.recv_timeout:g}, recv_timeout={args.recv_timeout:g}); Target(max_recv_bytes=10000) "
        f"(default); request {REQUEST!r}: CREATE, a batch of one message (every length an "
        f"s_size), {', '.join(c[1] for c in TEXT_COMMANDS[1:])}, each frame behind a 4-byte "
        f"big-endian s_size: {mutations} single-field mutations, the cases {order}."
    )  # fmt: skip


# ------------------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fuzz_throughput")
    add = parser.add_argument
    add("--cases", type=int, default=5000, help="cases a run (default 5000)")
    add("--rounds", type=int, default=3, help="runs of each fuzzer per target (default 3)")
    add("--connections", type=int, default=1, help="our cases in flight at once (default 1)")
    add("--targets", default="reference,minimal", help="comma-separated: reference, minimal")
    add("--boofuzz-order", choices=("spread", "natural"), default="spread")
    add("--recv-timeout", type=float, default=DEADLINE, help="boofuzz's send/recv timeouts")
    add("--profile", metavar="DIR", help="also write a profile per fuzzer and target")
    parser.add_argument("--boofuzz-child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.boofuzz_child:
        boofuzz_child(json.loads(args.boofuzz_child))
        return 0
    args.targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    unknown = [t for t in args.targets if t not in TARGETS]
    if unknown or args.cases < 1 or args.rounds < 1 or args.connections < 1:
        parser.error(f"unknown target(s) {unknown}" if unknown else "counts must be >= 1")
    fuzzers: dict[str, Callable[[str, Path | None], Run]] = {
        "ours": lambda kind, to: run_ours(kind, args.cases, args.connections, to),
        "boofuzz": lambda kind, to: run_boofuzz(
            kind, args.cases, args.boofuzz_order, args.recv_timeout, to
        ),
    }
    args.load, t0 = os.getloadavg()[0], time.perf_counter()
    run_ours("minimal", min(args.cases, 300), args.connections)  # warm-up: pool, imports
    print(f"warm-up (not measured): {time.perf_counter() - t0:.1f} s", flush=True)
    runs: list[Run] = []
    for kind in args.targets:
        for round_ in range(1, args.rounds + 1):
            for name, fuzz in fuzzers.items():
                runs.append(run := fuzz(kind, None))
                print(f"{kind} #{round_}: {name} {run.cases} cases, {run.rate:.0f}/s", flush=True)
        for fuzz in fuzzers.values() if args.profile else ():
            fuzz(kind, Path(args.profile))
    report(runs, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
