"""Reports built from a run's ``reports/results.json``: shared reading helpers.

:mod:`conformance.report.html` writes the self-contained HTML report and
:mod:`conformance.report.table` prints the terminal summary.  Both read the same
results dict through the helpers here, so they agree on counts, on which
requirements are broken and on how a requirement's verdict rolls up.

The results come from a target we do not trust: messages, summaries and even case
IDs may hold markup, control or bidi-override characters, or lone surrogates.  :func:`printable`
turns any of them into plain, visible, encodable text; escaping for HTML is left
to jinja2's autoescape.

This module imports neither jinja2 nor rich.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

#: The report model's name and version, in every ``results.json``; its JSON Schema is
#: :data:`SCHEMA_FILE`.  Readers refuse another version instead of guessing.
SCHEMA_ID = "broker-conformance/results"
SCHEMA_VERSION = 1
SCHEMA_FILE = Path(__file__).resolve().parent / "results.schema.json"

#: Case verdicts, in the order reports list them.
VERDICTS: tuple[str, ...] = ("PASS", "FAIL", "WARN", "UNSUPPORTED", "ERROR")

#: Verdicts from worst to best, for roll-ups and for ordering problems first.
SEVERITY: tuple[str, ...] = ("FAIL", "ERROR", "WARN", "UNSUPPORTED", "PASS")

#: Roll-up of a requirement that has cases but none of them decided it: every one of
#: them stopped on a different requirement first.
UNDECIDED = "UNDECIDED"
#: Roll-up of a requirement none of whose cases are in the results.
NOT_RUN = "NOT RUN"
#: Roll-up of a requirement the registry marks as not checkable over the wire.
NOT_CHECKABLE = "NOT CHECKABLE"

# C0/C1 controls but tab and newline, line/paragraph separators, bidi overrides, surrogates.
_CONTROL = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_NATURAL = re.compile(r"(\d+)")


def _escape_char(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(value: object, *, one_line: bool = False, limit: int | None = None) -> str:
    """``value`` as text with control characters and lone surrogates made visible.

    With ``one_line`` only the first non-empty line is kept (a ``…`` marks the cut);
    with ``limit`` the text is cut to at most that many characters.
    """
    text = "" if value is None else str(value).replace("\r\n", "\n")
    cut = False
    if one_line:
        lines = [line for line in text.split("\n") if line.strip()]
        text = lines[0].strip() if lines else ""
        cut = len(lines) > 1
    text = _CONTROL.sub(_escape_char, text.replace("\t", " " if one_line else "\t"))
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 1, 0)]
        cut = True
    return text + "…" if cut else text


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key putting ``CUR-FRAME-3`` before ``CUR-FRAME-10``."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in _NATURAL.split(text) if p)


def cases(results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The results' cases (an empty list when there are none)."""
    found = results.get("cases") or []
    return [c for c in found if isinstance(c, dict)]


def verdict_of(case: Mapping[str, Any]) -> str:
    """A case's verdict, upper-cased; anything unknown counts as ERROR."""
    verdict = str(case.get("verdict") or "ERROR").upper()
    return verdict if verdict in VERDICTS else "ERROR"


def count_verdicts(results: Mapping[str, Any]) -> dict[str, int]:
    """Cases per verdict: from the cases when the results list them, else ``counts``."""
    listed = cases(results)
    if listed or "counts" not in results:
        counted = dict.fromkeys(VERDICTS, 0)
        for case in listed:
            counted[verdict_of(case)] += 1
        return counted
    given = results.get("counts") or {}
    return {v: int(given.get(v, 0) or 0) for v in VERDICTS}


def case_requirements(case: Mapping[str, Any]) -> list[str]:
    """The requirement IDs a case checks, as strings."""
    return [str(r) for r in case.get("requirements") or []]


def reason_of(case: Mapping[str, Any], *, limit: int | None = None) -> str:
    """A case's message on one line, without the ``CUR-ACK-4: `` its violated requirement
    put in front (reports show the requirement beside it)."""
    message = printable(case.get("message") or "", one_line=True)
    violated = str(case.get("violated") or "")
    if violated and message.startswith(violated + ": "):
        message = message[len(violated) + 2 :]
    return printable(message, limit=limit)


def broken_by(case: Mapping[str, Any]) -> list[str]:
    """Requirements a FAIL or WARN case broke: the violated one, else all it checks."""
    if verdict_of(case) not in ("FAIL", "WARN"):
        return []
    violated = case.get("violated")
    return [str(violated)] if violated else case_requirements(case)


def broken_requirements(results: Mapping[str, Any]) -> list[str]:
    """Every requirement some FAIL or WARN case broke, without repeats, naturally sorted."""
    broken = {req for case in cases(results) for req in broken_by(case)}
    return sorted(broken, key=natural_key)


def worst(verdicts: Iterable[str]) -> str | None:
    """The worst of ``verdicts`` by :data:`SEVERITY`, or None when there are none."""
    ranked = [SEVERITY.index(v) for v in verdicts if v in SEVERITY]
    return SEVERITY[min(ranked)] if ranked else None


def requirement_rollup(
    requirement: Mapping[str, Any], by_id: Mapping[str, Mapping[str, Any]]
) -> tuple[str, list[str]]:
    """A requirement's verdict and the IDs of its cases that are in the results.

    The verdict is the worst verdict of its cases, except that a FAIL or WARN case
    which broke a *different* requirement says nothing about this one (the case
    stopped before deciding it).  ``by_id`` maps case IDs to cases.
    """
    req_id = str(requirement.get("id", ""))
    listed = [str(c) for c in requirement.get("cases") or []]
    listed += [cid for cid, c in by_id.items() if req_id in case_requirements(c) + broken_by(c)]
    present = [cid for cid in dict.fromkeys(listed) if cid in by_id]
    decided = []
    for cid in present:
        case = by_id[cid]
        verdict = verdict_of(case)
        if verdict in ("FAIL", "WARN") and req_id not in broken_by(case):
            continue
        decided.append(verdict)
    rolled = worst(decided)
    if rolled is None:
        if requirement.get("not_checkable"):
            rolled = NOT_CHECKABLE
        else:
            rolled = UNDECIDED if present else NOT_RUN
    return rolled, present


def target_line(results: Mapping[str, Any]) -> str:
    """``cursus doc against embedded (127.0.0.1:9000)``: what was checked against what."""
    protocol = printable(results.get("protocol") or "?", one_line=True)
    revision = printable(results.get("revision") or "?", one_line=True)
    address = printable(results.get("target") or "", one_line=True)
    name = printable(results.get("target_name") or "", one_line=True) or address or "?"
    where = f"{name} ({address})" if address and address != name else name
    return f"{protocol} {revision} against {where}"


def total_line(results: Mapping[str, Any]) -> str:
    """One-line totals: ``<target line>: 52 cases, 50 PASS, 1 FAIL, 1 UNSUPPORTED``."""
    counted = count_verdicts(results)
    parts = [f"{sum(counted.values())} cases", f"{counted['PASS']} PASS"]
    parts += [f"{counted[v]} {v}" for v in VERDICTS[1:] if counted[v]]
    events = [e for e in results.get("target_events") or [] if isinstance(e, dict)]
    for kind, words in (("crash", "crashed"), ("stop", "stopped"), ("panic", "panicked")):
        n = sum(1 for e in events if e.get("kind") == kind and e.get("reproduced"))
        if n:
            parts.append(f"the target {words} in {n} case{'s' if n > 1 else ''}")
    known = sum(1 for c in cases(results) if c.get("expected"))
    if known:
        parts.append(f"{known} of them known failures (baseline)")
    return f"{target_line(results)}: {', '.join(parts)}"


def lost_line(results: Mapping[str, Any]) -> str | None:
    """``target lost at +20.3 s, after case X (first noticed by case Y): reason``, or None
    when the results do not say the target went away (``target_lost``)."""
    lost = results.get("target_lost")
    if not isinstance(lost, dict):
        return None
    t = lost.get("t")
    when = f"+{t:.1f} s" if isinstance(t, int | float) and not isinstance(t, bool) else "+? s"
    after = lost.get("after")
    where = f"after case {printable(after, one_line=True)}" if after else "before any case ended"
    first = printable(lost.get("case") or "?", one_line=True)
    reason = printable(lost.get("reason") or "no reason given", one_line=True, limit=300)
    line = f"target lost at {when}, {where} (first noticed by case {first}): {reason}"
    suspect = lost.get("suspect")
    if suspect:
        line += f"; suspect: {printable(suspect, one_line=True)}, whose request came last"
    if lost.get("check"):
        check = printable(lost.get("check"), one_line=True)
        line += f"; to check it, let the tool restart your broker: {check}"
    return line


def is_lost(case: Mapping[str, Any]) -> bool:
    """An ERROR because the target went away during the run (not the case's fault)."""
    return bool(case.get("lost")) and verdict_of(case) == "ERROR"


def unresponsive_line(results: Mapping[str, Any]) -> str | None:
    """The warning that the target stopped answering, or None when it did not (when the
    results say when it was lost, :func:`lost_line` says it instead)."""
    if not results.get("target_unresponsive") or isinstance(results.get("target_lost"), dict):
        return None
    target = printable(results.get("target") or "the target", one_line=True)
    return (
        f"target {target} stopped answering during the run: the cases after that point "
        "ended early without waiting out their deadlines"
    )
