"""A campaign: cases ``[start, stop)`` of a seed, run against a target, one row each.

:func:`run_range` is the unit of work everywhere: in this process for a local campaign,
and in each Spark task for a distributed one (a range per task).  It returns plain rows
(:class:`Row`); everything else -- findings, their windows, triage -- is derived from
rows and the generator, because a case is a pure function of (seed, index).

A campaign is cut into fixed ranges (:func:`seed_ranges`) whether it runs here or on
Spark.  Every ``canary_every`` cases and after the last one the range runs a canary round trip
(see :mod:`harness`) and, for the embedded broker, reads its resident memory.  After a
CRASH an embedded broker is restarted and the range goes on; any other target ends the
range there (its remaining cases get no row).
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from conformance import panics
from conformance.errors import ProtocolError
from conformance.fuzz import harness
from conformance.fuzz.case import FuzzCase, FuzzProtocol, Pool
from conformance.fuzz.mutators import generate
from conformance.fuzz.target import Target, TargetLost
from conformance.plugin import SessionRefused

LEAK_BOUND_MB = 256.0
REFUSED_LOOKBACK = 3
"""A case whose connection is refused suspects this many cases before it of the crash."""


RANGE_CASES = 1000


@dataclass(frozen=True)
class Options:
    deadline: float = 2.0
    canary_every: int = 250
    leak_bound_mb: float = LEAK_BOUND_MB
    range_cases: int = RANGE_CASES
    """Cases per seed range (rounded down to a multiple of ``canary_every``)."""
    connections: int = 1
    """Cases in flight at once, each on its own connection (``--connections``)."""


def seed_ranges(cases: int, options: Options) -> list[tuple[int, int]]:
    """``[0, cases)`` in ranges of a fixed size, whoever runs them.

    The size is a multiple of ``canary_every`` and does not depend on cores or masters,
    so a campaign run in this process (range after range) and on any Spark master (a
    task per range) gives the same rows, canary checks and ``task`` column included."""
    every = options.canary_every
    size = max(every, options.range_cases // every * every)
    return [(start, min(start + size, cases)) for start in range(0, cases, size)]


@dataclass(frozen=True)
class Row:
    """One case as it ran.  Every field but ``latency_ms`` and ``rss_mb`` is deterministic
    against a deterministic target."""

    index: int
    task: int
    """First index of the range that ran it (a CORRUPTION window never crosses ranges)."""
    mutator: str
    mode: str
    sent: bytes
    writes: int
    outcome: str
    replies: int
    finding: str
    """HANG, DROPPED, CRASH or BAD_REPLY from the case itself; '' for none."""
    requirement: str
    canary: str
    """'' not run after this case, 'ok', or 'lost' (a CORRUPTION)."""
    leak: bool
    latency_ms: float
    rss_mb: float
    panic: str = ""
    """The signature of a panic the target printed (``finding`` PANIC) while this case, or
    one in flight with it, ran; '' for none."""

    def as_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in fields(cls)]


def setup(proto: FuzzProtocol, target: Target, deadline: float) -> None:
    """Send the protocol's set-up requests (their replies are not judged); once more on a
    fresh connection if the first fails on the way (a target may stall one connection)."""
    payloads = list(proto.setup_payloads())
    try:
        harness.exchange(proto, target.host, target.port, payloads, deadline)
    except (OSError, TimeoutError):
        harness.exchange(proto, target.host, target.port, payloads, deadline)


class _Flight:
    """Cases in flight over ``connections`` worker threads; results come back as they end.

    Plain threads and two queues: a futures pool with ``wait(FIRST_COMPLETED)`` costs a
    waiter on every case in flight at each call, which showed in the fuzzer's CPU per case."""

    def __init__(self, connections: int) -> None:
        self.size = connections
        self.running = 0
        self.jobs: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
        self.done: queue.SimpleQueue[tuple[FuzzCase, harness.Result | BaseException]] = (
            queue.SimpleQueue()
        )
        self.workers = [
            threading.Thread(target=self._work, name=f"fuzz-case-{i}", daemon=True)
            for i in range(connections)
        ]
        for w in self.workers:
            w.start()

    def _work(self) -> None:
        while (job := self.jobs.get()) is not None:
            proto, case, host, port, deadline, looks = job
            try:
                result: harness.Result | BaseException = harness.execute(
                    proto, case, host, port, deadline, looks
                )
            except BaseException as exc:  # handed to the campaign's thread, raised there
                result = exc
            self.done.put((case, result))

    def __enter__(self) -> _Flight:
        return self

    def __exit__(self, *exc: object) -> None:
        for _ in self.workers:
            self.jobs.put(None)
        for w in self.workers:
            w.join()

    @property
    def full(self) -> bool:
        return self.running >= self.size

    def start(self, proto: FuzzProtocol, case: FuzzCase, target: Target, deadline: float) -> None:
        self.jobs.put((proto, case, target.host, target.port, deadline, target.looks))
        self.running += 1

    def ended(self) -> list[tuple[FuzzCase, harness.Result]]:
        """Wait for at least one case in flight to end; all that have ended, by index."""
        got = [self.done.get()]
        with contextlib.suppress(queue.Empty):
            while True:
                got.append(self.done.get_nowait())
        self.running -= len(got)
        out = []
        for case, result in got:
            if isinstance(result, BaseException):
                raise result
            out.append((case, result))
        return sorted(out, key=lambda pair: pair[0].index)


def run_range(
    proto: FuzzProtocol,
    target: Target,
    seed: int,
    start: int,
    stop: int,
    options: Options,
    on_rows: Callable[[list[Row]], None] | None = None,
    until: float | None = None,
    on_ended: Callable[[int], None] | None = None,
) -> list[Row]:
    """Rows of cases ``[start, stop)``, sorted by index.

    Up to ``options.connections`` cases are in flight at once; which cases a seed makes
    does not depend on it.  A canary check runs with no case in flight, after the case
    whose position in the range is a multiple of ``canary_every`` and after the last.
    When a case shows the target down (CRASH, STOPPED), no case is started until those
    in flight have ended (the ones that saw the same thing are ABORTED rows); then a
    restartable target is restarted and the range goes on, any other ends the range.
    No case is started once ``time.monotonic()`` passes ``until``.  ``on_rows`` gets the
    rows at each pause (a canary check, the target down), before any restart; a restart
    that fails ends the range with ``target.lost`` saying why.  ``on_ended`` gets the
    number of cases that just ended, as they end (for progress between pauses)."""
    rows: list[Row] = []
    held: list[Row] = []
    pool = proto.pool(seed)
    canary = harness.Canary(proto, target.host, target.port, f"{seed}:{start}", options.deadline)
    base_rss = _rss_mb(target)
    leaked = False
    out_mark = target.output_mark()
    index = start
    checkpoint = _checkpoint(index, start, stop, options)
    with _Flight(max(options.connections, 1)) as flight:
        while flight.running or (index < stop and not _late(until)):
            while not flight.full and index < checkpoint and not _late(until):
                flight.start(proto, generate(proto, pool, seed, index), target, options.deadline)
                index += 1
            ended = flight.ended() if flight.running else []  # [] : time ran out first
            down = any(r.outcome in harness.DOWN for _, r in ended)
            seen, panic = out_mark, None
            if ended and not down:  # a panic while it lives on: a finding of its own
                seen, panic = target.panic_since(out_mark, settle=False)
            while (down or panic) and flight.running:  # nothing new starts until they
                ended += flight.ended()  # have ended (those in flight are suspects too)
                down = any(r.outcome in harness.DOWN for _, r in ended)
            if on_ended is not None and ended:
                on_ended(len(ended))
            held += _rows(proto, ended, start, down)
            if panic is not None and not down:  # read all of it (a dying target's is a
                seen, panic = target.panic_since(out_mark)  # CRASH's)
                if not harness.serves(
                    proto, target.host, target.port, options.deadline, target.looks
                ):
                    panic = None  # the case that shows it down files the finding
                if panic is not None:
                    held = _panicked(proto, pool, seed, held, ended, panic)
            if ended and not down:
                out_mark = seen
            if flight.running or not (down or index == checkpoint or _late(until)):
                continue
            if not held:
                continue
            # a pause with no case in flight: a canary check, or the target went down
            held.sort(key=lambda r: r.index)
            lost = False
            if not down:
                problem = canary.check()
                rss = _rss_mb(target)
                leak = base_rss >= 0 and rss - base_rss > options.leak_bound_mb and not leaked
                leaked, lost = leaked or leak, bool(problem)
                held[-1] = replace(held[-1], canary="lost" if lost else "ok", leak=leak, rss_mb=rss)
            if down:
                target.down_output = target.output()  # before any restart: the crash's
            if down and target.restartable and _suspects(held, options):
                try:
                    _restart(proto, target, options)
                    held = _blame(proto, target, pool, seed, held, options)
                    target.down_output = target.output() or target.down_output
                except TargetLost as exc:
                    target.lost = str(exc)
            rows += held
            if on_rows is not None:
                on_rows(held)
            last, held = held[-1].index, []
            checkpoint = _checkpoint(index, start, stop, options)
            if target.lost or (down and not target.restartable):
                break
            if not (down or lost) or not target.restartable:
                continue
            try:
                _restart(proto, target, options)
            except TargetLost as exc:
                target.lost = str(exc)
                break
            canary = harness.Canary(
                proto, target.host, target.port, f"{seed}:{start}:{last}", options.deadline
            )
            base_rss = _rss_mb(target)
            out_mark = target.output_mark()
    return sorted(rows, key=lambda r: r.index)


def _panicked(
    proto: FuzzProtocol,
    pool: Pool,
    seed: int,
    held: list[Row],
    ended: list[tuple[FuzzCase, harness.Result]],
    panic: panics.Panic,
) -> list[Row]:
    """``held`` with a PANIC on the last case of ``ended`` that has no finding of its own
    (the panic was read after a case ended, and every case then in flight, any of which
    may have caused it, was let end first: so the last case is the last started; its
    window, :func:`.events.events`, holds the cases before it that were in flight with
    them, and minimization finds the culprit among them)."""
    last = max((c.index for c, r in ended if not harness.FINDING_OF.get(r.outcome)), default=None)
    if last is None:
        return held  # every case that ended has a finding of its own: they are reported
    row = next(r for r in held if r.index == last)
    case = generate(proto, pool, seed, last)
    panicked = replace(
        row,
        finding="PANIC",
        requirement=proto.requirement("PANIC", case, row.replies),
        panic=panic.signature,
    )
    return [panicked if r is row else r for r in held]


def _restart(proto: FuzzProtocol, target: Target, options: Options) -> None:
    """Restart ``target`` and send the set-up requests; TargetLost if it does not come back."""
    try:
        target.bring_back(proto, 0.0, options.deadline)
        setup(proto, target, options.deadline)
    except (OSError, TimeoutError, ProtocolError, SessionRefused) as exc:
        raise TargetLost(f"{target.describe()} did not come back: {exc}") from None


def _blame(
    proto: FuzzProtocol,
    target: Target,
    pool: Pool,
    seed: int,
    held: list[Row],
    options: Options,
) -> list[Row]:
    """``held`` with the finding moved to the case that brought the target down.

    The case that first showed the target down was one of several in flight.  It is
    replayed alone on the restarted target first: if it shows the finding again, it keeps
    it.  If not, the suspects (the cases in flight with it, and the few before it)
    are replayed one at a time in the order they ran, each followed by a look at the
    target, until it is down; the case just replayed (or, if the target took a moment
    to die, the one before it) is then checked alone on a restarted target.  If it shows
    the finding, it takes it and the case that first showed it becomes ABORTED; if not,
    the rows stay as they are.  The target is left down after a culprit is found (its
    output is the crash's)."""
    shown = next(r for r in held if r.outcome in harness.DOWN)
    suspects = _suspects(held, options)
    host, deadline = target.host, options.deadline
    case = generate(proto, pool, seed, shown.index)
    if harness.shows(proto, case, shown.finding, host, target.port, deadline, target.looks)[0]:
        return held  # the case that showed it does it alone: the usual culprit, tried first
    _restart_if_down(proto, target, options)

    def brings_down(row: Row) -> bool:
        case = generate(proto, pool, seed, row.index)
        result = harness.execute(proto, case, host, target.port, deadline, target.looks)
        return result.outcome in harness.DOWN or not harness.serves(
            proto, host, target.port, deadline, target.looks
        )

    pos = next((i for i, row in enumerate(suspects) if brings_down(row)), None)
    if pos is None:
        return _unconfirmed(target, held, shown, options)  # none of them brought it down
    for n, row in enumerate((suspects[pos], *suspects[max(pos - 1, 0) : pos])):
        _restart_if_down(proto, target, options, known=n == 0)  # (the sweep left it down)
        case = generate(proto, pool, seed, row.index)
        shown_again = harness.shows(
            proto, case, shown.finding, host, target.port, deadline, target.looks
        )
        if not shown_again[0]:
            continue
        if row is shown:
            return held
        culprit = replace(
            row,
            outcome=shown.outcome if shown.outcome != harness.REFUSED else harness.CRASH,
            finding=shown.finding,
            requirement=proto.requirement(shown.finding, case, row.replies),
        )
        aborted = replace(shown, outcome=harness.ABORTED, finding="", requirement="")
        return [culprit if r is row else aborted if r is shown else r for r in held]
    return _unconfirmed(target, held, shown, options)


def _unconfirmed(target: Target, held: list[Row], shown: Row, options: Options) -> list[Row]:
    """``held`` after a culprit search that found none.  A CRASH stays (a process that
    exited crashed, reproducible or not); a STOPPED judged in a short look (a target the
    fuzzer restarts, :class:`harness.Looks`) that no replay shows again was a slow target,
    not a stopped one: the row becomes SLOW, no finding, and the target's looks wait longer
    from now on (:meth:`Target.looked_too_soon`)."""
    short = target.looks.timeout is not None and target.looks.timeout < options.deadline
    if shown.outcome != harness.STOPPED or not short:
        return held
    target.looked_too_soon()
    slow = replace(shown, outcome=harness.SLOW, finding="", requirement="")
    return [slow if r is shown else r for r in held]


def _suspects(held: list[Row], options: Options) -> list[Row]:
    """The rows that may have brought the target down ([] when only the case that showed
    it can have: its own connection closed, then refusal, with nothing else in flight)."""
    shown = next(r for r in held if r.outcome in harness.DOWN)
    if options.connections <= 1 and shown.outcome == harness.CRASH:
        return []
    low = shown.index - options.connections - REFUSED_LOOKBACK
    return [r for r in held if r.index >= low]


def _restart_if_down(
    proto: FuzzProtocol, target: Target, options: Options, known: bool = False
) -> None:
    if known or not harness.serves(proto, target.host, target.port, options.deadline, target.looks):
        _restart(proto, target, options)


def _late(until: float | None) -> bool:
    return until is not None and time.monotonic() >= until


def _checkpoint(index: int, start: int, stop: int, options: Options) -> int:
    """The index after the next canary check: cases up to it may be in flight together."""
    every = options.canary_every
    return min(start + ((index - start) // every + 1) * every, stop)


def _rows(
    proto: FuzzProtocol, ended: list[tuple[FuzzCase, harness.Result]], task: int, went_down: bool
) -> list[Row]:
    """Rows of cases that ended, by index.  When the target went down, the first case that
    showed it (lowest index) keeps its finding; the others that saw the target down, or
    closed or hung with it, are ABORTED."""
    ended = sorted(ended, key=lambda pair: pair[0].index)
    shown = False
    out = []
    for case, result in ended:
        outcome = result.outcome
        if went_down and outcome in (*harness.DOWN, harness.CLOSED, harness.HANG, harness.DROPPED):
            if outcome in harness.DOWN and not shown:
                shown = True
            else:
                outcome = harness.ABORTED
        finding = harness.FINDING_OF.get(outcome, "")
        out.append(
            Row(
                index=case.index,
                task=task,
                mutator=case.mutator,
                mode=case.mode,
                sent=case.sent,
                writes=len(case.writes),
                outcome=outcome,
                replies=result.replies,
                finding=finding,
                requirement=proto.requirement(finding, case, result.replies) if finding else "",
                canary="",
                leak=False,
                latency_ms=round(result.latency_s * 1000, 3),
                rss_mb=-1.0,
            )
        )
    return out


def _rss_mb(target: Target) -> float:
    rss = target.rss_bytes()
    return -1.0 if rss is None else round(rss / 2**20, 1)
