"""View data for the HTML report's wire logs, evidence and findings (plain dicts).

:func:`entry_view` turns a wire-log entry into hex rows (the judged bytes marked) and its
field table (the judged fields flagged); :func:`evidence_view` lays a case's evidence out
in request/reply pairs, shown side by side; :func:`finding_view` is one finding of
:mod:`conformance.report.findings` with its reasons, its first case's evidence, its
reproduce command and its Markdown bug report.  Passing cases' wire logs are shown as
summaries only (:func:`wire_view` with ``full=False``): their bytes are in
``results.json`` when the run kept them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from markupsafe import Markup, escape

from conformance.plugin import ErrorCodes
from conformance.report import lost_line, printable
from conformance.report import wire as wirelog
from conformance.report.bugs import section
from conformance.report.findings import Finding, output_lines

#: Wire-log entries shown per case (a flood case can log many thousands).
WIRE_ENTRY_LIMIT = 500
_ROLE = {"send": "request", "recv": "reply", "event": "event"}


def entry_view(
    e: wirelog.Entry, judged: tuple[str, ...] = (), *, full: bool = True
) -> dict[str, Any]:
    """A wire-log entry: its header, hex rows (bytes of a judged field marked), its fields
    (judged ones flagged), the judged names not in its field list and the cut marker;
    without ``full`` (or for a compact entry) the header alone."""
    spans = [(f.start, f.end) for f in e.fields if f.name in judged]
    shown = full and not e.compact
    rows = []
    for start, chunk in wirelog.hex_rows(e.data) if shown else []:
        cells = []
        for i, byte in enumerate(chunk):
            at = start + i
            mark = any(a <= at < b for a, b in spans)
            cell = f"{byte:02x}"
            cells.append(Markup(f"<mark>{cell}</mark>") if mark else cell)
        pad = "   " * (wirelog.ROW_BYTES - len(chunk))
        rows.append(
            {
                "offset": f"{start:04x}",
                "bytes": Markup(" ").join(cells),
                "pad": pad,
                "ascii": wirelog.ascii_of(chunk),
            }
        )
    listed = {f.name for f in e.fields}
    return {
        "header": e.header(),
        "role": _ROLE.get(e.dir, e.dir),
        "dir_class": e.dir if e.dir in ("send", "recv", "event") else "other",
        "rows": rows,
        "cut": e.cut_note if shown else "",
        "bad_hex": e.bad_hex,
        "fields": [
            {"name": f.name, "value": f.value, "span": f.span, "mark": f.name in judged}
            for f in e.fields
        ]
        if shown
        else [],
        "judged": [
            {"name": f.name, "value": f.value, "span": f.span} for f in e.fields if f.name in judged
        ]
        + [
            {"name": n, "value": "(not in the kept field list)", "span": ""}
            for n in judged
            if n not in listed
        ],
    }


def evidence_view(case: Mapping[str, Any], errors: ErrorCodes | None) -> list[list[dict[str, Any]]]:
    """The case's evidence in request/reply pairs (each pair shown side by side)."""
    return [
        [entry_view(ev.entry, ev.names) for ev in pair]
        for pair in wirelog.pairs(wirelog.evidence(case, errors))
    ]


def wire_view(
    case: Mapping[str, Any], errors: ErrorCodes | None, *, full: bool
) -> tuple[list[dict[str, Any]], int]:
    """The case's wire log (entries the evidence names flagged) and how many were left out."""
    judged: dict[int, tuple[str, ...]] = {}
    for ev in wirelog.evidence(case, errors):
        judged[ev.entry.index] = judged.get(ev.entry.index, ()) + ev.names
    logged = wirelog.entries(case, errors)
    views = [
        entry_view(e, judged.get(e.index, ()), full=full) | {"evidence": e.index in judged}
        for e in logged[:WIRE_ENTRY_LIMIT]
    ]
    return views, max(len(logged) - WIRE_ENTRY_LIMIT, 0)


def _text(value: object) -> str:
    return printable(value, one_line=True)


def finding_view(
    found: Finding,
    results: Mapping[str, Any],
    registry: Mapping[str, Mapping[str, Any]],
    errors: ErrorCodes | None,
) -> dict[str, Any]:
    """One finding: heading, requirement, reasons with their versions, the first case's
    evidence pairs, its reproduce command, the other cases and the Markdown bug report."""
    case = found.first
    req = registry.get(found.requirement, {})
    reasons = found.reasons(limit=400)
    return {
        "id": found.slug,
        "verdict": found.verdict,
        "class": found.verdict.lower(),
        "heading": found.heading,
        "lost": found.lost,
        "lost_line": lost_line(results) or "the target went away during the run",
        "case": _text(case.get("case_id") or "?"),
        "cases": [_text(c.get("case_id") or "?") for c in found.cases],
        "title": _text(case.get("title")),
        "requirement": _text(found.requirement),
        "level": _text(req.get("level") or case.get("level") or "?"),
        "req_text": escape(printable(req.get("text") or "")),
        "reasons": [{"text": r, "versions": v} for r, v in reasons],
        "same_at": reasons[0][1] if len(reasons) == 1 and len(found.cases) > 1 else "",
        "evidence": [] if found.lost else evidence_view(case, errors),
        "reproduce": _text(case.get("reproduce") or ""),
        "event": found.event,
        "output": output_lines(case),
        "bug": section(found, results),
    }
