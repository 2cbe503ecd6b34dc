"""Findings from a campaign's rows: each :class:`Event` with its window of suspect cases.

A case is a pure function of (seed, index), so what a campaign found is derived from its
rows alone (:mod:`.campaign`), whoever ran them (this process or Spark tasks): the finding
a case showed itself, the CRASH or STOPPED that took cases in flight with it down, the
PANIC read after it ended, and the canary's CORRUPTION and LEAK since the last check.
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.fuzz import harness
from conformance.fuzz.campaign import REFUSED_LOOKBACK, Row
from conformance.fuzz.case import FuzzCase, FuzzProtocol


@dataclass(frozen=True)
class Event:
    """A finding as the rows show it, before minimization."""

    finding: str
    requirement: str
    index: int
    mutator: str
    window: tuple[int, ...]
    """The case indices that may have caused it (CORRUPTION, LEAK: since the last check)."""
    panic: str = ""
    """A PANIC's signature (what the target printed, :mod:`conformance.panics`)."""

    @property
    def signature(self) -> str:
        """``FINDING:REQUIREMENT``; a PANIC's is its own (``PANIC:Go panic at log.go:87``):
        the case it was read after need not be the one that caused it, and its requirement
        is read from the culprit once minimization has found it."""
        if self.panic:
            return f"{self.finding}:{self.panic}"
        return f"{self.finding}:{self.requirement}"


def events(proto: FuzzProtocol, rows: list[Row], connections: int = 1) -> list[Event]:
    """Every finding in ``rows`` (ordered by index), with its window of suspect cases.

    The window of a CRASH or STOPPED holds the cases that may have brought the target
    down: the ``connections - 1`` cases before it (in flight with it), or when its own
    connection was refused or it may have met a target that had already stopped,
    :data:`REFUSED_LOOKBACK` more; and the cases after it up to the last ABORTED one
    (in flight with it: any of them may be the culprit)."""
    out: list[Event] = []
    by_task: dict[int, list[Row]] = {}
    for row in sorted(rows, key=lambda r: r.index):
        by_task.setdefault(row.task, []).append(row)
    for task_rows in by_task.values():
        since = 0
        for pos, row in enumerate(task_rows):
            if row.outcome in harness.DOWN:
                back = connections - 1
                if row.outcome != harness.CRASH:
                    back += REFUSED_LOOKBACK
                after = pos + 1  # past the last ABORTED case: all were in flight with it
                for j in range(pos + 1, len(task_rows)):  # (a stalled case can stay in
                    if task_rows[j].outcome in harness.DOWN:  # flight while many start)
                        break
                    if task_rows[j].outcome == harness.ABORTED:
                        after = j + 1
                window = (*(r.index for r in task_rows[max(pos - back, 0) : after]),)
                out.append(Event(row.finding, row.requirement, row.index, row.mutator, window))
            elif row.finding == "PANIC":  # read after the case ended: those in flight with it
                first = max(pos - (connections - 1) - REFUSED_LOOKBACK, 0)
                window = tuple(r.index for r in task_rows[first : pos + connections])
                out.append(
                    Event("PANIC", row.requirement, row.index, row.mutator, window, row.panic)
                )
            elif row.finding:
                out.append(
                    Event(row.finding, row.requirement, row.index, row.mutator, (row.index,))
                )
            if row.canary or row.outcome in harness.DOWN:
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
