"""A run against a target the tool started itself (``run --target-cmd``): each case that
kills, stops or wounds the target is convicted, and every other case still gets its own
verdict.

After every case the target is looked at, worst first:

* **crash** -- its process has exited (the exit status says how);
* **stop** -- it lives, but a probe on a fresh connection gets no answer (tried twice, the
  second time with the run's whole deadline, as :meth:`Target.gone` does);
* **panic** -- it lives and serves, but printed a panic, traceback, sanitizer report, failed
  assertion or out-of-memory message while the case ran (:mod:`conformance.panics`).

After such an event the target is restarted and the case runs again, alone, on the fresh
start.  If the event comes again, the case is convicted: it gets its strongest
requirement's verdict (FAIL for a MUST, else WARN) with a reason that says what the target
did, the last request the case sent as evidence, and what the target printed from the
case's start to its death; the run exits 1 whatever the level.  If the second try is
clean, the case is an ERROR: the target died during it, not reproduced.  Either way the
target is restarted again if needed and the run goes on; a target that does not serve
again within the start timeout ends the run (:attr:`Supervised.failed`, exit 2).

The first try's record is dropped; the second's is the case's.  What the cases learned
about the target (``Target.facts``) is forgotten at each restart: a fresh start is a
fresh target.  Runs one case at a time (no pytest-xdist).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from _pytest.runner import runtestprotocol

from conformance import panics
from conformance.evidence import Evidence, Judged
from conformance.suite import plugin as suite_plugin
from conformance.suite.target import Target
from conformance.supervisor import Supervisor, TargetFailed, exit_status

OUTPUT_LINES = 80
"""Lines of the target's output kept with a case's event (its last ones)."""

EVENT_WORDS = {"crash": "crashed", "stop": "stopped serving", "panic": "printed a panic"}


@dataclass(frozen=True)
class Event:
    kind: str
    """``crash``, ``stop`` or ``panic``."""
    reason: str
    output: tuple[str, ...]
    panic: panics.Panic | None
    at: float | None = None
    """When the panic's first line was read (``time.monotonic()``), if there is one."""

    def as_dict(self, reproduced: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "reason": self.reason, "reproduced": reproduced}
        if self.panic is not None:
            out["panic"] = {"kind": self.panic.kind, "signature": self.panic.signature}
        return out


class Supervised:
    """The pytest plugin of a supervised run (handed to ``pytest.main`` by the runner)."""

    def __init__(self, supervisor: Supervisor, patterns: Sequence[re.Pattern[str]] = ()) -> None:
        self.supervisor, self.patterns = supervisor, patterns
        self.failed: str | None = None
        """Why the run ended early: the target did not serve again after a restart."""
        self.mark = supervisor.mark()
        """Where the next case's share of the target's output begins: where the last one's
        ended (a line printed between two cases is the later one's), or a fresh start's."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> bool | None:
        state = suite_plugin.active(item.config)
        if state is None or state.target is None:
            return None
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        properties = len(item.user_properties)
        reports, first = self._attempt(item, nextitem, state)
        if first is not None:
            del item.user_properties[properties:]  # the first try's verdict is not the case's
            reports = self._again(item, nextitem, state, reports, first)
        for report in reports:
            item.ihook.pytest_runtest_logreport(report=report)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True

    # -------------------------------------------------------------------- one try

    def _attempt(
        self, item: pytest.Item, nextitem: pytest.Item | None, state: suite_plugin.RunState
    ) -> tuple[list[pytest.TestReport], Event | None]:
        suite_plugin.forget_case(item)
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        assert state.target is not None
        return reports, self._event(state.target)

    def _event(self, target: Target) -> Event | None:
        """What the target did while the case ran, worst first; None if nothing."""
        sup = self.supervisor
        code = sup.exit_code()
        stopped = None
        if code is None and not target.unusable:  # (an unusable one did not stop)
            stopped = target.dead or target.probe_twice()  # (a case that found it gone
            code = sup.exit_code()  # has probed it already); it may die while probed
        self.mark, timed = sup.window(self.mark)
        output = [line for _, line in timed]
        panic = panics.find(output, self.patterns)
        at = next((t for t, line in timed if panic is not None and line == panic.line), None)
        kept = tuple(output[-OUTPUT_LINES:])
        printed = f", printing {panic.line.strip()!r} ({panic.kind})" if panic is not None else ""
        if code is not None:
            why = f"the target crashed during this case: {exit_status(code)}{printed}"
            return Event("crash", why, kept, panic, at)
        if stopped is not None:
            why = f"the target stopped serving during this case ({stopped}){printed}"
            return Event("stop", why, kept, panic, at)
        if panic is not None:
            why = f"the target printed {panic.line.strip()!r} ({panic.kind}) during this case"
            return Event("panic", why + " and lives on", kept, panic, at)
        return None

    # ---------------------------------------------------------------- the retry

    def _restart(self, state: suite_plugin.RunState) -> bool:
        """A fresh start of the target; False (and :attr:`failed` set) when it does not serve."""
        assert state.target is not None
        try:
            self.supervisor.restart()
        except TargetFailed as exc:
            why = exc.one_line(self.supervisor.log_path)
            self.failed = f"the target did not serve again after a restart: {why}"
            return False
        state.target.restarted(self.supervisor.host, self.supervisor.port)
        self.mark = self.supervisor.mark()
        return True

    def _again(
        self,
        item: pytest.Item,
        nextitem: pytest.Item | None,
        state: suite_plugin.RunState,
        reports: list[pytest.TestReport],
        first: Event,
    ) -> list[pytest.TestReport]:
        """Restart, run the case again alone, and judge it by what the target did twice."""
        record = item.stash.get(suite_plugin.CASE_RECORD, None)
        if not self._restart(state):
            if record is not None:
                self._mark(state, record, first, reproduced=False, ended=True)
                _restate(reports, record, state.strict)
            item.session.shouldstop = self.failed or True
            return reports
        if record is not None:
            state.cases.remove(record)
            state.losses.forget(record["case_id"])
        reports, second = self._attempt(item, nextitem, state)
        record = item.stash.get(suite_plugin.CASE_RECORD, None)
        if record is not None:
            if second is not None:
                self._convict(item, state, record, second)
            else:
                self._mark(state, record, first, reproduced=False)
            _restate(reports, record, state.strict)
        # the last case leaves it down: nothing more is asked of it
        if second is not None and nextitem is not None and not self._restart(state):
            item.session.shouldstop = self.failed or True
        return reports

    # ---------------------------------------------------------------- verdicts

    def _convict(
        self, item: pytest.Item, state: suite_plugin.RunState, record: dict[str, Any], event: Event
    ) -> None:
        reqs = record["requirements"]
        level = record["level"]
        verdict = "FAIL" if level == "MUST" else "WARN"
        violated = next(r for r in reqs if state.requirements[r].level == level)
        log = item.stash.get(suite_plugin.WIRE_LOG, None)
        wire = log.as_list() if log is not None else record["wire_log"]
        sent = [i for i, e in enumerate(wire) if e["dir"] == "send"]
        if log is not None and event.at is not None:  # the last request before it broke
            before = [i for i in sent if log.start + log.entries[i].t <= event.at]
            sent = before or sent
        evidence = Evidence((Judged(sent[-1]),)) if sent else Evidence()
        said = "; the same when it ran again alone on a fresh start"
        record.update(
            verdict=verdict,
            violated=violated,
            unsupported=None,
            message=event.reason + said,
            wire_log=wire,
            evidence=evidence.as_list(),
            target_event=event.as_dict(reproduced=True),
            target_output=list(event.output),
        )
        record.pop("wire_compact", None)
        _not_lost(state, record)

    def _mark(
        self,
        state: suite_plugin.RunState,
        record: dict[str, Any],
        event: Event,
        *,
        reproduced: bool,
        ended: bool = False,
    ) -> None:
        """The case's target died during it once: an ERROR, not reproduced (or, ``ended``,
        not tried again because the target did not come back)."""
        what = EVENT_WORDS[event.kind]
        if ended:
            why = f"{self.failed}; the case was not run again"
        else:
            why = "not reproduced: the case ran again alone on a fresh start and it did not"
        record.update(
            verdict="ERROR",
            violated=None,
            unsupported=None,
            message=f"the target {what} during this case ({event.reason}); {why}",
            target_event=event.as_dict(reproduced=reproduced),
            target_output=list(event.output),
        )
        _not_lost(state, record)


def _not_lost(state: suite_plugin.RunState, record: dict[str, Any]) -> None:
    """The case's target went away, and the case was judged for it: not a lost case."""
    record.pop("lost", None)
    record.pop("expected", None)
    lost = state.losses.lost
    if lost is not None and lost["case"] == record["case_id"]:
        state.losses.lost = None


def _restate(reports: list[pytest.TestReport], record: dict[str, Any], strict: bool) -> None:
    """The case's pytest reports, told its final verdict (progress counts it from them)."""
    verdict = record["verdict"]
    for report in reports:
        if report.when != "call" and not (report.when == "setup" and report.failed):
            continue
        report.user_properties = [
            (k, verdict if k == "verdict" else v) for k, v in report.user_properties
        ]
        if verdict in ("FAIL", "ERROR") or (verdict == "WARN" and strict):
            report.outcome = "failed"
            report.longrepr = record["message"]
        elif verdict == "WARN":
            report.outcome = "passed"
            report.longrepr = None


__all__ = ["Event", "Supervised"]
