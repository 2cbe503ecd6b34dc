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

from collections.abc import Callable
from dataclasses import asdict, dataclass, fields

from conformance.fuzz import harness
from conformance.fuzz.case import FuzzCase, FuzzProtocol
from conformance.fuzz.mutators import generate
from conformance.fuzz.target import Target

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
    """HANG, CRASH or BAD_REPLY from the case itself; '' for none."""
    requirement: str
    canary: str
    """'' not run after this case, 'ok', or 'lost' (a CORRUPTION)."""
    leak: bool
    latency_ms: float
    rss_mb: float

    def as_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in fields(cls)]


def setup(proto: FuzzProtocol, target: Target, deadline: float) -> None:
    """Send the protocol's set-up requests (their replies are not judged)."""
    harness.exchange(proto, target.host, target.port, list(proto.setup_payloads()), deadline)


def run_range(
    proto: FuzzProtocol,
    target: Target,
    seed: int,
    start: int,
    stop: int,
    options: Options,
    on_row: Callable[[Row], None] | None = None,
) -> list[Row]:
    rows: list[Row] = []
    pool = proto.pool(seed)
    canary = harness.Canary(proto, target.host, target.port, f"{seed}:{start}", options.deadline)
    base_rss = _rss_mb(target)
    leaked = False
    for index in range(start, stop):
        case = generate(proto, pool, seed, index)
        result = harness.execute(proto, case, target.host, target.port, options.deadline)
        finding = result.finding
        outcome = result.outcome
        ended = outcome in (harness.CRASH, harness.REFUSED)
        canary_state, leak, rss = "", False, -1.0
        last = index == stop - 1
        if not ended and (last or (index - start + 1) % options.canary_every == 0):
            problem = canary.check()
            canary_state = "lost" if problem else "ok"
            rss = _rss_mb(target)
            if base_rss >= 0 and rss - base_rss > options.leak_bound_mb and not leaked:
                leak = leaked = True
        row = Row(
            index=index,
            task=start,
            mutator=case.mutator,
            mode=case.mode,
            sent=case.sent,
            writes=len(case.writes),
            outcome=outcome,
            replies=result.replies,
            finding=finding,
            requirement=proto.requirement(finding, case, result.replies) if finding else "",
            canary=canary_state,
            leak=leak,
            latency_ms=round(result.latency_s * 1000, 3),
            rss_mb=rss,
        )
        rows.append(row)
        if on_row is not None:
            on_row(row)
        if ended or canary_state == "lost":
            if not target.restartable:
                if ended:
                    return rows
                continue
            target.restart()
            setup(proto, target, options.deadline)
            canary = harness.Canary(
                proto, target.host, target.port, f"{seed}:{start}:{index}", options.deadline
            )
            base_rss = _rss_mb(target)
    return rows


def _rss_mb(target: Target) -> float:
    rss = target.rss_bytes()
    return -1.0 if rss is None else round(rss / 2**20, 1)


# ---------------------------------------------------------------- findings from rows


@dataclass(frozen=True)
class Event:
    """A finding as the rows show it, before minimization."""

    finding: str
    requirement: str
    index: int
    mutator: str
    window: tuple[int, ...]
    """The case indices that may have caused it (CORRUPTION, LEAK: since the last check)."""

    @property
    def signature(self) -> str:
        return f"{self.finding}:{self.requirement}"


def events(proto: FuzzProtocol, rows: list[Row]) -> list[Event]:
    """Every finding in ``rows`` (ordered by index), with its window of suspect cases."""
    out: list[Event] = []
    by_task: dict[int, list[Row]] = {}
    for row in sorted(rows, key=lambda r: r.index):
        by_task.setdefault(row.task, []).append(row)
    for task_rows in by_task.values():
        since = 0
        for pos, row in enumerate(task_rows):
            if row.outcome == harness.REFUSED:  # died after an earlier case: suspects
                before = task_rows[max(pos - REFUSED_LOOKBACK, 0) : pos]
                window = (*(r.index for r in before), row.index)
                out.append(Event(row.finding, row.requirement, row.index, row.mutator, window))
            elif row.finding:
                out.append(
                    Event(row.finding, row.requirement, row.index, row.mutator, (row.index,))
                )
            if row.canary or row.outcome in (harness.CRASH, harness.REFUSED):
                window = tuple(r.index for r in task_rows[since : pos + 1])
                case = FuzzCase(row.index, row.mutator, row.mode, (row.sent,))
                if row.canary == "lost":
                    req = proto.requirement("CORRUPTION", case)
                    out.append(Event("CORRUPTION", req, row.index, row.mutator, window))
                if row.leak:
                    req = proto.requirement("LEAK", case)
                    out.append(Event("LEAK", req, row.index, row.mutator, window))
                since = pos + 1
    return sorted(out, key=lambda e: e.index)


def first_by_signature(found: list[Event]) -> dict[str, tuple[Event, int]]:
    """The first event of each signature, and how many events share it."""
    out: dict[str, tuple[Event, int]] = {}
    for e in found:
        first, count = out.get(e.signature, (e, 0))
        out[e.signature] = (first, count + 1)
    return out
