"""The conformance pytest plugin: options, the ``target`` fixture, verdicts, results.

Inert unless ``--conformance-protocol`` is given, so the project's own tests are not
disturbed by it (it is loaded through the ``pytest11`` entry point).

Verdicts, from how a case ends, are :mod:`conformance.suite.verdicts`'s: a violation
names its evidence (the frames it was decided on and the fields it judged), which the
record keeps beside the wire log, and a close or a silence from a target that went away
is an ERROR marked ``lost``, never a FAIL; the results say when the target was lost and
after which case.

Every case record carries its wire log: whole for a case that broke something, and
compact for the others (each entry's time, direction, length and summary, no bytes)
unless ``--conformance-wire-full``.  The records go to ``--conformance-results``
(JSON); under pytest-xdist each worker writes a part file and the controller merges them.
That file is the report model (schema: ``conformance/report/results.schema.json``): the
terminal summary, HTML, JUnit and Allure reports are all rendered from it.  Each report
also carries the case's ``verdict`` as a user property, which ``conformance.progress``
counts while the run goes on.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Generator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from conformance import protocols
from conformance.baseline import Baseline, BaselineError
from conformance.baseline import load as load_baseline
from conformance.client import HEX_KEEP, WireLog
from conformance.options import option_values, options_for
from conformance.plugin import Plugin
from conformance.spec import Requirement, requirements
from conformance.suite import results
from conformance.suite.target import CaseContext, Target
from conformance.suite.verdicts import Losses, compact, verdict_of
from conformance.suite.wire_context import WireContext

_SET_BY_RUN = "(set by `conformance run`; recorded in the results)"
_STATE = pytest.StashKey["RunState"]()
CASE_RECORD = pytest.StashKey[dict[str, Any]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("conformance", "broker conformance suite")
    g.addoption("--conformance-protocol", help="run the conformance cases of this protocol")
    g.addoption("--conformance-target", metavar="HOST:PORT", help="the broker under test")
    g.addoption("--conformance-revision", help="protocol revision the target speaks")
    g.addoption("--conformance-timeout", type=float, default=5.0, help="deadline of every read (s)")
    g.addoption("--conformance-strict", action="store_true", help="WARN (a broken SHOULD) fails")
    g.addoption(
        "--conformance-option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a protocol option of `conformance run` (e.g. compression=gzip; repeatable)",
    )
    g.addoption(
        "--conformance-select",
        action="append",
        default=[],
        metavar="SEL",
        help="case-ID prefix or requirement ID (repeatable)",
    )
    g.addoption(
        "--conformance-skip",
        action="append",
        default=[],
        metavar="SEL",
        help="leave out the cases a case-ID prefix or requirement ID selects (repeatable)",
    )
    g.addoption("--conformance-dry-run", action="store_true", help="list the selected cases")
    g.addoption("--conformance-results", metavar="FILE", help="write results JSON here")
    g.addoption(
        "--conformance-baseline",
        metavar="FILE",
        help="known-failure baseline: listed failures that fail again do not fail the run",
    )
    g.addoption(
        "--conformance-target-name",
        metavar="NAME",
        help="the target's label in reports (default: embedded, or HOST:PORT)",
    )
    g.addoption(
        "--conformance-wire-keep",
        type=int,
        default=HEX_KEEP,
        metavar="BYTES",
        help=f"bytes of each frame kept in the wire log (default {HEX_KEEP})",
    )
    g.addoption(
        "--conformance-wire-full",
        action="store_true",
        help="keep the bytes of every case's wire log, passing cases too (bigger reports)",
    )
    g.addoption("--conformance-quirk", action="append", default=[], help=_SET_BY_RUN)
    g.addoption("--conformance-embedded", action="store_true", help=_SET_BY_RUN)
    g.addoption("--conformance-target-cmd", metavar="CMD", help=_SET_BY_RUN)
    g.addoption("--conformance-target-flags", metavar="FLAGS", help=_SET_BY_RUN)


class RunState:
    def __init__(self, config: pytest.Config) -> None:
        opt = config.getoption
        self.protocol: str = opt("conformance_protocol")
        try:
            plugin = protocols.get(self.protocol)
        except protocols.UnknownProtocol as exc:
            raise pytest.UsageError(str(exc)) from None
        self.revision: str = opt("conformance_revision") or plugin.default_revision
        try:
            plugin.check_revision(self.revision)
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.options = _options(plugin, opt("conformance_option"))
        self.requirements: dict[str, Requirement] = requirements(self.protocol)
        self.strict: bool = opt("conformance_strict")
        self.select: list[str] = opt("conformance_select")
        self.skip: list[str] = opt("conformance_skip")
        self.results_path: str | None = opt("conformance_results")
        self.started = datetime.now(UTC)
        self.t0 = time.monotonic()
        self.cases: list[dict[str, Any]] = []
        self.known: list[str] = []
        """Every case ID of this protocol and revision, selected or not."""
        self.baseline: Baseline | None = None
        if opt("conformance_baseline"):
            try:
                self.baseline = load_baseline(
                    opt("conformance_baseline"), self.protocol, self.revision
                )
            except BaselineError as exc:
                raise pytest.UsageError(str(exc)) from None
        self.target: Target | None = None
        target = opt("conformance_target")
        if target:
            host, _, port = target.rpartition(":")
            if not host or not port.isdigit():
                raise pytest.UsageError(f"--conformance-target {target!r} is not HOST:PORT")
            self.target = Target(
                host, int(port), plugin, self.revision, opt("conformance_timeout"), self.options
            )
        self.timeout: float = opt("conformance_timeout")
        self.wire_keep: int = opt("conformance_wire_keep")
        self.wire_full: bool = bool(opt("conformance_wire_full"))
        self.losses = Losses()
        if self.wire_keep < 16:
            raise pytest.UsageError("--conformance-wire-keep must be at least 16 bytes")
        embedded = bool(opt("conformance_embedded"))
        self.meta = {
            "quirks": opt("conformance_quirk"),
            "embedded": embedded,
            "target": target or "",
            "target_cmd": opt("conformance_target_cmd") or "",
            "target_flags": opt("conformance_target_flags") or "",
            "target_name": opt("conformance_target_name")
            or ("embedded" if embedded else target or ""),
        }


def _options(plugin: Plugin, given: list[str]) -> dict[str, Any]:
    """The plug-in's ``run`` options: defaults, then each NAME=VALUE given."""
    known = {o.dest: o for o in options_for(plugin.options, "run")}
    values = option_values(plugin.options, "run", {})
    for item in given:
        name, sep, text = item.partition("=")
        name = name.strip().lstrip("-").replace("-", "_")
        if not sep or name not in known:
            names = ", ".join(sorted(known)) or "none"
            raise pytest.UsageError(
                f"--conformance-option {item!r} is not NAME=VALUE with a {plugin.name} option "
                f"of run (known: {names})"
            )
        try:
            values[name] = known[name].convert(text)
        except ValueError as exc:
            raise pytest.UsageError(f"--conformance-option {name}: {exc}") from None
    return values


def active(config: pytest.Config) -> RunState | None:
    return config.stash.get(_STATE, None)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "conformance(case_id, requirements): a conformance case")
    config.addinivalue_line(
        "markers",
        "conformance_versions(subject, since, until): run the case at every version of a "
        "subject (a message or command) that the run's revision knows (expanded by the "
        "protocol suite's conftest; the case ID gets @v<version>)",
    )
    if config.getoption("conformance_protocol"):
        config.stash[_STATE] = RunState(config)


# ------------------------------------------------------------------ selection


def _selected(case_id: str, reqs: tuple[str, ...], select: list[str]) -> bool:
    """A selector is a requirement ID, a whole case ID, or a prefix ending at a ``/`` or at
    the ``@`` of a version (``kafka/fetch/3`` selects ``kafka/fetch/3@v12``)."""
    if not select:
        return True
    return any(
        s in reqs
        or case_id == s
        or case_id.startswith(s.rstrip("/") + "/")
        or case_id.startswith(s + "@")
        for s in select
    )


def case_id_of(item: pytest.Item) -> str:
    """The case ID of ``item``: its mark's ID, and for a case run at each version of an
    API (parametrized by ``version``), ``@v<version>`` after it (``kafka/fetch/3@v12``)."""
    mark = item.get_closest_marker("conformance")
    assert mark is not None
    base = str(mark.kwargs["case_id"])
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "version" in callspec.params:
        return f"{base}@v{callspec.params['version']}"
    return base


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    state = active(config)
    if state is None:
        return
    keep, drop = [], []
    for item in items:
        mark = item.get_closest_marker("conformance")
        if mark is None:
            raise pytest.UsageError(f"{item.nodeid} is not marked as a conformance case")
        case_id, reqs = case_id_of(item), mark.kwargs["requirements"]
        unknown = [r for r in reqs if r not in state.requirements]
        if unknown:
            raise pytest.UsageError(f"case {case_id} names unknown requirement(s) {unknown}")
        applies = any(state.revision in state.requirements[r].revisions for r in reqs)
        ours = case_id.startswith(state.protocol + "/")
        if ours and applies:
            state.known.append(case_id)
        skipped = bool(state.skip) and _selected(case_id, reqs, state.skip)
        if ours and applies and _selected(case_id, reqs, state.select) and not skipped:
            keep.append(item)
        else:
            drop.append(item)
    if config.getoption("conformance_dry_run"):
        _print_cases(state, keep)
        drop, keep = drop + keep, []
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep


def _print_cases(state: RunState, items: list[pytest.Item]) -> None:
    """--conformance-dry-run: one line per selected case; nothing is sent."""
    for item in items:
        mark = item.get_closest_marker("conformance")
        assert mark is not None
        reqs = mark.kwargs["requirements"]
        levels = "/".join(sorted({state.requirements[r].level for r in reqs}))
        print(f"{case_id_of(item):24} {levels:11} {' '.join(reqs):36} {_title(item)}")
    print(f"{len(items)} case(s) selected; nothing was sent (--dry-run)")


def _title(item: pytest.Item) -> str:
    doc = getattr(getattr(item, "function", None), "__doc__", None) or ""
    return title_of(doc) or item.name


def title_of(doc: str) -> str:
    """A case's title: the first sentence of its docstring, whole (it may span lines)."""
    paragraph = " ".join(doc.strip().split("\n\n", 1)[0].split())
    return _SENTENCE_END.split(paragraph, 1)[0]


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


# -------------------------------------------------------------------- fixture


@pytest.fixture
def target(request: pytest.FixtureRequest) -> Iterator[CaseContext]:
    state = active(request.config)
    if state is None or state.target is None:
        pytest.skip("no --conformance-target given")
    plugin = state.target.plugin
    context = WireContext(plugin)
    log = WireLog(describe=context.describe, annotate=context.fields, keep=state.wire_keep)
    request.node.stash[WIRE_LOG] = log
    state.target.ensure_reachable()
    ctx = CaseContext(state.target, log)
    request.node.stash[_CTX] = ctx
    try:
        yield ctx
    finally:
        ctx.close()


WIRE_LOG = pytest.StashKey[WireLog]()
_CTX = pytest.StashKey[CaseContext]()


def forget_case(item: pytest.Item) -> None:
    """Drop what an earlier run of ``item`` left in its stash (a case run twice)."""
    if CASE_RECORD in item.stash:
        del item.stash[CASE_RECORD]
    if WIRE_LOG in item.stash:
        del item.stash[WIRE_LOG]
    if _CTX in item.stash:
        del item.stash[_CTX]


# -------------------------------------------------------------------- verdicts


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    state = active(item.config)
    failed_setup = call.when == "setup" and call.excinfo is not None
    if state is None or (call.when != "call" and not failed_setup):
        return report
    _record(state, item, call, report)
    return report


def _record(
    state: RunState, item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport
) -> None:
    ctx = item.stash.get(_CTX, None)
    release = ctx.close if ctx is not None else (lambda: None)
    verdict, violated, message, evidence, lost = verdict_of(
        state.requirements, state.target, call.excinfo, release
    )
    mark = item.get_closest_marker("conformance")
    assert mark is not None
    reqs = mark.kwargs["requirements"]
    log = item.stash.get(WIRE_LOG, None)
    case_id = case_id_of(item)
    record: dict[str, Any] = {
        "case_id": case_id,
        "nodeid": item.nodeid,
        "title": _title(item),
        "area": state.requirements[reqs[0]].area,
        "requirements": list(reqs),
        "level": _strongest(state, reqs),
        "verdict": verdict,
        # only a FAIL or WARN broke a requirement; an UNSUPPORTED names what it lacks
        "violated": violated if verdict in ("FAIL", "WARN") else None,
        "unsupported": violated if verdict == "UNSUPPORTED" else None,
        "message": message,
        "duration_s": round(call.duration, 4),
        "wire_log": log.as_list() if log else [],
        "evidence": evidence.as_list(),
    }
    if lost:
        record["lost"] = True
        state.losses.target_lost(case_id, message, state.target.lost_at if state.target else None)
    else:
        state.losses.case_ended(case_id)
    if verdict in ("PASS", "UNSUPPORTED") and not state.wire_full:
        record["wire_log"] = [compact(e) for e in record["wire_log"]]
        record["wire_compact"] = True
    expected = (
        not lost
        and state.baseline is not None
        and state.baseline.expects_failure(case_id, verdict, state.strict)
    )
    if expected:
        record["expected"] = True
    state.cases.append(record)
    item.stash[CASE_RECORD] = record
    props = [("case_id", case_id), ("requirements", " ".join(reqs)), ("verdict", verdict)]
    props += [("violated", str(violated))] if record["violated"] else []
    item.user_properties.extend(props)  # pytest's junitxml, if a user runs it, reads these
    report.user_properties.extend(props)
    if log is not None:
        report.sections.append(("wire log", log.render()))
    if expected:  # a known failure: pytest's xfail, which JUnit and Allure show as such
        report.outcome = "skipped"
        report.wasxfail = f"known failure ({verdict}, baseline): {message}"
        report.longrepr = None
    elif verdict == "UNSUPPORTED":
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"UNSUPPORTED: {message}")
    elif verdict == "WARN" and not state.strict:
        report.outcome = "passed"
        report.longrepr = None
    elif verdict in ("FAIL", "ERROR", "WARN"):
        report.outcome = "failed"


def _strongest(state: RunState, reqs: tuple[str, ...]) -> str:
    levels = {state.requirements[r].level for r in reqs}
    return next(level for level in ("MUST", "SHOULD", "MAY") if level in levels)


# --------------------------------------------------------------------- results


def pytest_sessionfinish(session: pytest.Session) -> None:
    state = active(session.config)
    if state is None or not state.results_path or session.config.getoption("conformance_dry_run"):
        return
    path = Path(state.results_path)
    dead = bool(state.target and state.target.dead)
    worker = getattr(session.config, "workerinput", None)
    if worker is not None:
        part = path.with_name(f"{path.name}.part-{worker['workerid']}")
        data = {"cases": state.cases, "dead": dead, "known": state.known}
        part.write_text(json.dumps(data | state.losses.part()))
        return
    cases = list(state.cases)
    known = list(state.known)
    losses = [state.losses.part()]
    for part in sorted(path.parent.glob(path.name + ".part-*")):
        data = json.loads(part.read_text())
        cases.extend(data["cases"])
        known.extend(data["known"])
        dead = dead or data["dead"]
        losses.append(data)
        part.unlink()
    lost = Losses.merged(losses)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results.build(state, cases, known, dead, lost), indent=1))
