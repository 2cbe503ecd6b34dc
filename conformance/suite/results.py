"""The results of a run (``results.json``, the report model), built from its case records.

The conformance plugin (:mod:`conformance.suite.plugin`) collects one record per case, on
each pytest-xdist worker; when the run ends the controller merges them and
:func:`build` turns them into the document every report is rendered from (its schema is
``conformance/report/results.schema.json``).
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from conformance import __version__, protocols
from conformance.baseline import compare
from conformance.options import option_values, options_for, public
from conformance.report import SCHEMA_ID, SCHEMA_VERSION, VERDICTS, requirement_rollup

if TYPE_CHECKING:
    from conformance.spec import Requirement
    from conformance.suite.plugin import RunState


def counts(cases: list[dict[str, Any]]) -> dict[str, int]:
    return {v: sum(1 for c in cases if c["verdict"] == v) for v in VERDICTS}


def exit_code(counts: dict[str, int], strict: bool) -> int:
    bad = counts["FAIL"] + counts["ERROR"] + (counts["WARN"] if strict else 0)
    return 1 if bad else 0


def build(
    state: RunState,
    cases: list[dict[str, Any]],
    known: list[str],
    dead: bool,
    lost: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The results of a run: every case record (of every worker), sorted, with its
    reproduce command; the requirements with their verdicts; when the target went away
    (``lost``: the first case that found it gone, the case that ended before, when);
    the baseline's comparison."""
    cases.sort(key=lambda c: sort_key(c["case_id"]))
    counted = counts(cases)
    for case in cases:
        case["reproduce"] = reproduce_command(state, case["case_id"])
    out = {
        "schema": SCHEMA_ID,
        "schema_version": SCHEMA_VERSION,
        "tool": "broker-conformance",
        "version": __version__,
        "protocol": state.protocol,
        "revision": state.revision,
        "target": state.meta["target"],
        "target_name": state.meta["target_name"],
        "target_software": None,  # neither cursus nor kafka tells its software over the wire
        "embedded": state.meta["embedded"],
        "selection": list(state.select),
        "skipped": list(state.skip),
        "timeout_s": state.timeout,
        "wire_keep": state.wire_keep,
        "quirks": state.meta["quirks"],
        "options": public(protocols.get(state.protocol).options, state.options),
        "strict": state.strict,
        "started": state.started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "duration_s": round(time.monotonic() - state.t0, 3),
        "target_unresponsive": dead or lost is not None,
        "target_lost": _lost(state, lost, cases),
        "target_cmd": state.meta.get("target_cmd") or None,
        "target_events": target_events(cases),
        "counts": counted,
        "exit_code": exit_code(counted, state.strict),
        "cases": cases,
        "requirements": requirement_rows(state, cases),
    }
    by_id = {c["case_id"]: c for c in cases}
    for row in out["requirements"]:
        row["verdict"] = requirement_rollup(row, by_id)[0]
    if state.baseline is not None:
        section = compare(state.baseline, cases, known, state.strict)
        out["baseline"] = section
        out["exit_code"] = section["exit_code"]
    if any(e["reproduced"] for e in out["target_events"]):
        out["exit_code"] = 1  # a crash or a stop fails the run, whatever the level
    return out


def target_events(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every case during which a supervised target (``run --target-cmd``) crashed, stopped
    serving or printed a panic, convicted (``reproduced``) or not, crashes first."""
    order = ("crash", "stop", "panic")
    found = [{"case_id": c["case_id"], **c["target_event"]} for c in cases if c.get("target_event")]
    return sorted(found, key=lambda e: (not e["reproduced"], order.index(e["kind"])))


def _lost(
    state: RunState, lost: dict[str, Any] | None, cases: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """When the target went away, and the *suspect*: the case whose request came last
    before (the case that found it gone, if it had sent anything, else the one before),
    with the ``--target-cmd`` command that would check it."""
    if lost is None:
        return None
    t = max(0.0, float(lost["at"]) - state.started.timestamp())
    noticed = next((c for c in cases if c["case_id"] == lost["case"]), None)
    sent = noticed is not None and any(e.get("dir") == "send" for e in noticed["wire_log"])
    suspect = lost["case"] if sent else lost["after"]
    out = {
        "case": lost["case"],
        "after": lost["after"],
        "t": round(t, 3),
        "reason": lost["reason"],
        "suspect": suspect,
    }
    if suspect is not None and not state.meta.get("target_cmd"):
        words = ["conformance", "run", "--protocol", state.protocol, "--revision", state.revision]
        words += ["--target-cmd", "YOUR-BROKER --port {port}", suspect]
        out["check"] = shlex.join(words)
    return out


def reproduce_command(state: RunState, case_id: str) -> str:
    """The command line that runs case ``case_id`` again against the same target (the
    embedded broker with the same quirks, or the same address); secrets are left out."""
    plugin = protocols.get(state.protocol)
    words = ["conformance", "run", "--protocol", state.protocol, "--revision", state.revision]
    if state.meta.get("target_cmd"):
        words += ["--target-cmd", state.meta["target_cmd"]]
        words += shlex.split(state.meta.get("target_flags") or "")
        if state.meta["target_name"] != state.meta["target_cmd"]:
            words += ["--target-name", state.meta["target_name"]]
    elif not state.meta["embedded"]:
        words += ["--target", state.meta["target"]]
        if state.meta["target_name"] != state.meta["target"]:
            words += ["--target-name", state.meta["target_name"]]
    for quirk in state.meta["quirks"]:
        words += ["--quirk", quirk]
    defaults = option_values(plugin.options, "run", {}, embedded=state.meta["embedded"])
    recorded = public(plugin.options, state.options)
    for option in options_for(plugin.options, "run"):
        value = recorded.get(option.dest)
        if option.dest in recorded and value is not None and value != defaults.get(option.dest):
            words += [option.flag, str(value)]
    if state.strict:
        words.append("--strict")
    if state.timeout != 5.0:
        words += ["--timeout", f"{state.timeout:g}"]
    words.append(case_id)
    return shlex.join(words)


def sort_key(case_id: str) -> list[Any]:
    """``kafka/fetch/3@v2`` before ``kafka/fetch/3@v10``, and both before ``kafka/fetch/10``."""
    parts = re.split(r"/|@v", case_id)
    return [(0, int(p)) if p.isdigit() else (1, p) for p in parts]


def requirement_rows(state: RunState, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return rows_of([r for r in state.requirements.values() if state.revision in r.revisions], cases)


def rows_of(
    requirements: Iterable[Requirement], cases: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The report model's row of each requirement, with the cases that check it (``run``'s
    and ``serve --validate``'s alike)."""
    return [
        {
            "id": r.id,
            "level": r.level,
            "area": r.area,
            "text": r.text,
            "source": r.source,
            "cases": [c["case_id"] for c in cases if r.id in c["requirements"]],
            "not_checkable": r.not_checkable,
        }
        for r in requirements
    ]
