"""Fuzzing a stop-prone broker: cases per second, and where the time goes.

``python -m bench.stop_prone [--cases 200] [--seed 0] [--deadline 0.5] [--connections 4]``

The target is the Java-style Mini-Kafka server of the tests
(``tests/support/javastyle_minikafka/``, written from FACTS.md): like the real phase-2
server it stops serving everyone after a request it cannot handle (an unknown type byte, a
length below 5, a field cut short), while its port still accepts.  Fuzzed with seed 0, a
large share of the cases stop it.  The bench compiles it with Java 17's javac, then runs
``conformance.fuzz.campaign.run_range`` against it as ``fuzz --target-cmd`` does (an
:class:`~conformance.fuzz.owned.Owned` target, restarted after each CRASH or STOPPED) and
minimizes every finding as the command does, and prints:

* cases/s over the campaign, and the goal (20 cases/s);
* the stops and restarts, and how long a start takes to serve (the JVM's start);
* where the wall time went: looking at the target after a case (``harness.probe``),
  restarting it, finding the culprit among the cases in flight (``campaign._blame``),
  minimizing; the rest is running cases.

The timers wrap those functions for the bench only (no timer is in the fuzzer).  Every
process the bench starts is stopped by its PID before it exits.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import shlex
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from conformance import fuzz
from conformance.fuzz import campaign, harness, minimize
from conformance.fuzz import owned as owned_module
from conformance.fuzz.campaign import Options, run_range
from conformance.fuzz.events import events
from conformance.fuzz.minimize import draft
from conformance.fuzz.mutators import generate
from conformance.supervisor import Supervisor
from tests.support import javastyle_minikafka

GOAL = 20.0
"""Cases per second the issue sets as the goal against such a server."""


class Clock:
    """Seconds spent in each wrapped function (outermost calls only, per name)."""

    def __init__(self) -> None:
        self.spent: collections.Counter[str] = collections.Counter()
        self.calls: collections.Counter[str] = collections.Counter()
        self._inside: set[str] = set()

    def wrap(self, owner: Any, attr: str, name: str) -> None:
        original: Callable[..., Any] = getattr(owner, attr)

        def timed(*args: Any, **kwargs: Any) -> Any:
            if name in self._inside:
                return original(*args, **kwargs)
            self._inside.add(name)
            began = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.spent[name] += time.perf_counter() - began
                self.calls[name] += 1
                self._inside.discard(name)

        setattr(owner, attr, timed)


@contextlib.contextmanager
def target(
    classes: Path, deadline: float, log: Path, spare: bool
) -> Iterator[owned_module.Owned]:
    proto = fuzz.protocol("minikafka", {}, "real")
    command = shlex.join(javastyle_minikafka.broker_command(classes, "{port}"))
    owned = owned_module.Owned(command, proto, 30.0, deadline, log, spare=spare)
    try:
        yield owned
    finally:
        owned.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--deadline", type=float, default=0.5)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--spare", action="store_true")
    args = parser.parse_args()
    clock = Clock()
    clock.wrap(harness, "probe", "look after a case (probe)")
    clock.wrap(Supervisor, "restart", "restart")
    clock.wrap(Supervisor, "start", "start (first and restarts)")
    clock.wrap(campaign, "_blame", "culprit among cases in flight")
    clock.wrap(minimize, "minimize", "minimize")
    proto = fuzz.protocol("minikafka", {}, "real")
    with tempfile.TemporaryDirectory(prefix="stop-prone-") as tmp:
        classes = javastyle_minikafka.compile_into(Path(tmp))
        with target(classes, args.deadline, Path(tmp) / "target.log", args.spare) as owned:
            options = Options(deadline=args.deadline, connections=args.connections)
            campaign.setup(proto, owned, args.deadline)
            began = time.perf_counter()
            rows = run_range(proto, owned, args.seed, 0, args.cases, options)
            ran = time.perf_counter() - began
            found = events(proto, rows, args.connections)
            first: dict[str, Any] = {}
            for event in found:
                first.setdefault(event.signature, event)
            pool = proto.pool(args.seed)
            began_min = time.perf_counter()
            for event in first.values():
                cases = {i: generate(proto, pool, args.seed, i) for i in event.window}
                repro = draft(proto, event, cases, args.seed, args.deadline, [], {}, "real")
                minimize.minimize(proto, owned, repro, 30.0)
            minimizing = time.perf_counter() - began_min
            starts = owned.starts
            start_s = owned.supervisor.start_s
    down = sum(1 for r in rows if r.outcome in harness.DOWN)
    print(f"stop-prone Mini-Kafka (Java-style server), seed {args.seed}, {args.cases} cases, "
          f"--deadline {args.deadline:g}, --connections {args.connections}")  # fmt: skip
    print(f"  campaign: {len(rows)} rows in {ran:.1f} s: {len(rows) / ran:.2f} cases/s "
          f"(goal {GOAL:g}: {len(rows) / ran / GOAL:.2f}x of it)")  # fmt: skip
    print(f"  cases that showed it down: {down}; starts of the target: {starts}; "
          f"the last start served after {start_s:.2f} s")  # fmt: skip
    print(f"  findings: {len(first)} signature(s), minimized in {minimizing:.1f} s")
    total = ran + minimizing
    print(f"  where the {total:.1f} s went (outermost calls; one may hold another):")
    for name, spent in clock.spent.most_common():
        share = 100 * spent / total
        print(f"    {name:34} {spent:7.1f} s  {share:5.1f}%  {clock.calls[name]} calls")


if __name__ == "__main__":
    main()
