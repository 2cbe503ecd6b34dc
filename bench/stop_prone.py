"""Fuzzing a stop-prone broker: cases per second, and where the time goes.

``python -m bench.stop_prone [--cases 200] [--seed 0] [--deadline 0.5] [--connections 4]
[--instances 4]``

The target is the Java-style Mini-Kafka server of the tests
(``tests/support/javastyle_minikafka/``, written from FACTS.md): like the real phase-2
server it stops serving everyone after a request it cannot handle (an unknown type byte, a
length below 5, a field cut short), while its port still accepts.  Fuzzed with seed 0, a
large share of the cases stop it.  The bench compiles it with Java 17's javac, then runs
the same campaign four times, as ``fuzz --target-cmd`` does (``conformance.fuzz.copies``
over :class:`~conformance.fuzz.owned.Owned` targets, restarted after each CRASH or
STOPPED), and minimizes every finding as the command does: one copy of the target (the
baseline), one copy with ``--spare``, ``--instances N`` copies, and N copies with
``--spare``.  It prints, for each:

* cases/s over the campaign, against the baseline of the same run and the goal (20);
* the cases that showed it down, and the starts of the target (a spare counts when taken);
* where the time went: looking at the target (``harness.probe``, the spares' start-up
  looks included), restarting it, finding the culprit among the cases in flight
  (``campaign._blame``), minimizing; the rest is running cases.

The timers wrap those functions for the bench only (no timer is in the fuzzer).  Every
process the bench starts is stopped by its PID before it exits.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import shlex
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance import fuzz
from conformance.fuzz import campaign, harness, minimize
from conformance.fuzz import owned as owned_module
from conformance.fuzz.campaign import Options
from conformance.fuzz.copies import run_copies
from conformance.fuzz.events import events
from conformance.fuzz.minimize import draft
from conformance.fuzz.mutators import generate
from conformance.supervisor import Supervisor
from tests.support import javastyle_minikafka

GOAL = 20.0
"""Cases per second the issue sets as the goal against such a server."""


class Clock:
    """Seconds spent in each wrapped function (outermost calls of each thread, per name;
    with several copies at once, threads overlap: the sums are thread-seconds)."""

    def __init__(self) -> None:
        self.spent: collections.defaultdict[str, float] = collections.defaultdict(float)
        self.calls: collections.Counter[str] = collections.Counter()
        self._local = threading.local()
        self._lock = threading.Lock()

    def reset(self) -> None:
        self.spent.clear()
        self.calls.clear()

    def wrap(self, owner: Any, attr: str, name: str) -> None:
        original: Callable[..., Any] = getattr(owner, attr)

        def timed(*args: Any, **kwargs: Any) -> Any:
            inside: set[str] = self._local.__dict__.setdefault("inside", set())
            if name in inside:
                return original(*args, **kwargs)
            inside.add(name)
            began = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                with self._lock:
                    self.spent[name] += time.perf_counter() - began
                    self.calls[name] += 1
                inside.discard(name)

        setattr(owner, attr, timed)


@dataclass
class Measured:
    label: str
    rows: int
    ran: float
    down: int
    starts: int
    signatures: int
    minimizing: float
    spent: list[tuple[str, float, int]]

    @property
    def rate(self) -> float:
        return self.rows / self.ran


@contextlib.contextmanager
def copies(
    classes: Path, deadline: float, folder: Path, count: int, spare: bool
) -> Iterator[list[owned_module.Owned]]:
    proto = fuzz.protocol("minikafka", {}, "real")
    command = shlex.join(javastyle_minikafka.broker_command(classes, "{port}"))
    made: list[owned_module.Owned] = []
    try:
        for n in range(count):
            log = folder / f"target.{n + 1}.log"
            made.append(owned_module.Owned(command, proto, 30.0, deadline, log, spare=spare))
        yield made
    finally:
        for one in made:
            one.close()


def measure(
    args: argparse.Namespace, classes: Path, folder: Path, count: int, spare: bool, clock: Clock
) -> Measured:
    proto = fuzz.protocol("minikafka", {}, "real")
    options = Options(deadline=args.deadline, connections=args.connections)
    clock.reset()
    with copies(classes, args.deadline, folder, count, spare) as targets:
        for one in targets:
            campaign.setup(proto, one, args.deadline)
        began = time.perf_counter()
        rows = run_copies(
            proto, targets, args.seed, args.cases, options, lambda *_: None, None, lambda _: None
        )
        ran = time.perf_counter() - began
        first: dict[str, Any] = {}
        for event in events(proto, rows, args.connections):
            first.setdefault(event.signature, event)
        pool = proto.pool(args.seed)
        began_min = time.perf_counter()
        for event in first.values():
            cases = {i: generate(proto, pool, args.seed, i) for i in event.window}
            repro = draft(proto, event, cases, args.seed, args.deadline, [], {}, "real")
            minimize.minimize(proto, targets[0], repro, 30.0)
        minimizing = time.perf_counter() - began_min
        starts = sum(one.starts for one in targets)
    label = f"{count} cop{'y' if count == 1 else 'ies'}" + (", --spare" if spare else "")
    down = sum(1 for r in rows if r.outcome in harness.DOWN)
    most = sorted(clock.spent.items(), key=lambda kv: -kv[1])
    spent = [(name, s, clock.calls[name]) for name, s in most]
    return Measured(label, len(rows), ran, down, starts, len(first), minimizing, spent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--deadline", type=float, default=0.5)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--instances", type=int, default=4)
    args = parser.parse_args()
    clock = Clock()
    clock.wrap(harness, "probe", "look at the target (probe)")
    clock.wrap(Supervisor, "restart", "restart")
    clock.wrap(campaign, "_blame", "culprit among cases in flight")
    clock.wrap(minimize, "minimize", "minimize")
    configs = [(1, False), (1, True), (args.instances, False), (args.instances, True)]
    with tempfile.TemporaryDirectory(prefix="stop-prone-") as tmp:
        classes = javastyle_minikafka.compile_into(Path(tmp))
        done = [measure(args, classes, Path(tmp), n, spare, clock) for n, spare in configs]
    print(
        f"stop-prone Mini-Kafka (Java-style server), seed {args.seed}, {args.cases} cases, "
        f"--deadline {args.deadline:g}, --connections {args.connections} per copy"
    )
    base = done[0].rate
    for m in done:
        print(
            f"  {m.label:18} {m.rate:6.2f} cases/s  {m.rate / base:5.2f}x the first row  "
            f"{m.rate / GOAL:5.2f}x the goal ({GOAL:g})  down {m.down:3}  starts {m.starts:3}  "
            f"findings {m.signatures}, minimized in {m.minimizing:.1f} s"
        )
    for m in done:
        print(f"  where the time went, {m.label} (thread-seconds, outermost calls):")
        for name, spent, calls in m.spent:
            print(f"    {name:32} {spent:7.1f} s  {calls} calls")


if __name__ == "__main__":
    main()
