"""Self-contained HTML report of a run, rendered with jinja2 from ``results.json``.

:func:`write_html` turns the results dict into one HTML file that opens from disk: inline
CSS, inline SVG plots, one inline script (the filters and the anchors) allowed by its
hash in the page's Content-Security-Policy, which forbids everything else.  Top to bottom:

* a compact header: what was checked against what, the verdict counts, one total line,
  and a banner when the target was lost during the run (when, after which case);
* **Failures first**: one block per finding (:mod:`conformance.report.findings`: a case
  failing the same way at several versions is one block), FAIL, then ERROR, then WARN:
  the requirement and its text, the reason(s), the evidence the check named (request and
  reply side by side, the judged bytes marked in the hex and the judged fields in the
  table), the reproduce command and a "copy as bug report" box with the finding's
  Markdown (:mod:`conformance.report.bugs`); the ERROR cases of a lost target are one
  block; known failures (from a baseline) folded apart;
* coverage per level and per area, and plots (verdicts per area, the slowest cases);
* the requirements table, each row anchored by its ID (``#CUR-ACK-4``);
* every case, anchored by its ID (``#cursus/ack/5``; opening that address unfolds it),
  with filters by verdict, level, area and requirement; a FAIL, WARN or ERROR case with
  its whole kept wire log (the evidence entries flagged), any other with its entries'
  summaries only (their bytes stay in ``results.json``).

Wire logs carry whatever bytes the target sent, so autoescape is always on and every
string goes through :func:`conformance.report.printable` first.  This module turns the
results into plain view data; the template only lays it out.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape

from conformance.baseline import summary_lines
from conformance.plugin import ErrorCodes
from conformance.report import (
    NOT_CHECKABLE,
    NOT_RUN,
    UNDECIDED,
    VERDICTS,
    broken_by,
    case_requirements,
    cases,
    count_verdicts,
    is_lost,
    lost_line,
    natural_key,
    printable,
    reason_of,
    requirement_rollup,
    target_line,
    total_line,
    unresponsive_line,
    verdict_of,
)
from conformance.report import wire as wirelog
from conformance.report.findings import findings
from conformance.report.html_views import finding_view, wire_view
from conformance.report.plots import slowest_cases, verdicts_per_area

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
TEMPLATE_NAME = "report.html.j2"
SCRIPT_NAME = "report.js"

ROLLUPS = (*VERDICTS, UNDECIDED, NOT_RUN, NOT_CHECKABLE)
_CSS_CLASS = {v: v.lower().replace(" ", "-") for v in ROLLUPS}
_BACKTICKS = re.compile(r"`([^`\n]+)`")


def text_html(value: object) -> Markup:
    """Printable text, escaped, with Markdown's `code` spans shown as code."""
    escaped = str(escape(printable(value)))
    return Markup(_BACKTICKS.sub(r"<code>\1</code>", escaped))


def _text(value: object) -> str:
    return printable(value, one_line=True)


def _seconds(value: object) -> str:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return ""
    return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.2f} s"


def _requirement_line(req_id: str, registry: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    req = registry.get(req_id, {})
    return {
        "id": _text(req_id),
        "level": _text(req.get("level") or "?"),
        "text": text_html(req.get("text") or "(not in the registry)"),
        "source": text_html(req.get("source") or ""),
    }


def _case_view(
    case: Mapping[str, Any],
    registry: Mapping[str, Mapping[str, Any]],
    errors: ErrorCodes | None = None,
) -> dict[str, Any]:
    verdict = verdict_of(case)
    checked = case_requirements(case)
    violated = _text(case.get("violated") or "") if verdict in ("FAIL", "WARN") else ""
    shown_reqs = checked + ([violated] if violated and violated not in checked else [])
    cid = _text(case.get("case_id") or case.get("nodeid") or "?")
    problem = verdict in ("FAIL", "ERROR", "WARN")
    wire_log, wire_cut = wire_view(case, errors, full=problem)
    return {
        "id": cid,
        "title": _text(case.get("title")),
        "area": _text(case.get("area")),
        "level": _text(case.get("level")),
        "verdict": verdict,
        "verdict_class": _CSS_CLASS[verdict],
        "expected": bool(case.get("expected")),
        "lost": is_lost(case),
        "open": problem and not case.get("expected") and not is_lost(case),
        "violated": violated,
        "unsupported": _text(case.get("unsupported") or ""),
        "message": printable(case.get("message") or ""),
        "reason": reason_of(case, limit=400),
        "duration": _seconds(case.get("duration_s")),
        "requirements": [
            _requirement_line(r, registry) | {"violated": r == violated} for r in shown_reqs
        ],
        "reqs_attr": " ".join(shown_reqs),
        "reproduce": printable(case.get("reproduce") or "", one_line=True),
        "no_evidence": verdict in ("FAIL", "WARN") and not wirelog.evidence(case, errors),
        "summaries_only": not problem and bool(wire_log),
        "wire_log": wire_log,
        "wire_log_cut": wire_cut,
    }


def _level_key(name: str) -> tuple[int, tuple[tuple[int, int | str], ...]]:
    """MUST, SHOULD, MAY first in that order, then anything else naturally sorted."""
    levels = ("MUST", "SHOULD", "MAY")
    return (levels.index(name) if name in levels else len(levels), natural_key(name))


def _coverage(
    requirements: Sequence[Mapping[str, Any]], rolled: Mapping[str, str], key: str
) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, int]] = {}
    for req in requirements:
        group = _text(req.get(key) or "?")
        counts = rows.setdefault(group, dict.fromkeys(ROLLUPS, 0))
        counts[rolled[str(req.get("id"))]] += 1
    ordered = sorted(rows, key=_level_key)
    return [{"name": g, "total": sum(rows[g].values()), "counts": rows[g]} for g in ordered]


def _faults(listed: list[dict[str, Any]], planned: object) -> list[dict[str, str]]:
    """The faults a ``serve --validate`` fired, each with what the client did next, then
    those planned that never fired."""
    out = []
    for fault in planned if isinstance(planned, list) else []:
        if isinstance(fault, dict) and fault.get("fired") == 0:
            out.append({"case": "", "fault": _text(fault.get("fault")), "request": "",
                        "expected": "", "did": "", "verdict": "", "class": "",
                        "requirement": ""})  # fmt: skip
    for case in listed:
        fault = case.get("fault")
        if not isinstance(fault, dict):
            continue
        verdict = verdict_of(case)
        out.append(
            {
                "case": _text(case.get("case_id")),
                "fault": _text(fault.get("fault")),
                "request": _text(fault.get("request")),
                "expected": " or ".join(_text(e) for e in fault.get("expected") or []),
                "did": ", ".join(_text(d) for d in fault.get("did") or []),
                "verdict": verdict,
                "class": _CSS_CLASS[verdict],
                "requirement": _text(", ".join(case_requirements(case))),
            }
        )
    return out


def report_view(results: Mapping[str, Any]) -> dict[str, Any]:
    """Everything the template shows, as plain strings, lists and dicts."""
    listed = cases(results)
    by_id = {str(c.get("case_id") or c.get("nodeid") or i): c for i, c in enumerate(listed)}
    requirements = [dict(r) for r in results.get("requirements") or [] if isinstance(r, dict)]
    registry = {str(r.get("id")): r for r in requirements}
    for case in listed:
        for req_id in broken_by(case):
            if req_id not in registry:  # broken, but missing from the registry: still show it
                registry[req_id] = {"id": req_id, "level": "?", "text": "(not in the registry)"}
                requirements.append(registry[req_id])
    rolled = {}
    for req in requirements:
        verdict, present = requirement_rollup(req, by_id)
        rolled[str(req.get("id"))] = verdict
        req["present"] = present
    errors = wirelog.error_codes(results)
    views = [_case_view(c, registry, errors) for c in listed]
    found = [finding_view(f, results, registry, errors) for f in findings(results)]
    known = findings(results, known=True)
    counted = count_verdicts(results)
    quirks = results.get("quirks") or []
    label = results.get("target_name") or results.get("target") or "?"
    anchors = {v["id"]: v["id"] for v in views}
    validating = results.get("mode") == "validate"  # serve --validate: cases take no time
    return {
        "title": (
            f"{_text(results.get('protocol'))} client validation: {_text(label)}"
            if results.get("mode") == "validate"
            else f"{_text(results.get('protocol'))} conformance of {_text(label)}"
        ),
        "tool": _text(results.get("tool") or "broker-conformance"),
        "version": _text(results.get("version")),
        "target_line": target_line(results),
        "meta": [
            (k, _text(v))
            for k, v in (
                ("revision", results.get("revision")),
                ("target", results.get("target")),
                ("software", results.get("target_software")),
                ("quirks", ", ".join(map(str, quirks)) if isinstance(quirks, list) else quirks),
                ("strict", "yes (WARN fails)" if results.get("strict") else None),
                ("selection", " ".join(map(str, results.get("selection") or [])) or None),
                ("started", results.get("started")),
                ("duration", _seconds(results.get("duration_s"))),
                ("exit code", results.get("exit_code")),
            )
            if v not in (None, "", [])
        ],
        "unresponsive": unresponsive_line(results),
        "total": total_line(results),
        "counts": [{"verdict": v, "n": counted[v], "class": _CSS_CLASS[v]} for v in VERDICTS],
        "lost": lost_line(results),
        "findings": found,
        "known": [
            {
                "verdict": f.verdict,
                "heading": f.heading,
                "requirement": _text(f.requirement),
                "cases": [_text(c.get("case_id") or "?") for c in f.cases],
            }
            for f in known
        ],
        "known_count": sum(len(f.cases) for f in known),
        "coverage_level": _coverage(requirements, rolled, "level"),
        "coverage_area": _coverage(requirements, rolled, "area"),
        "rollups": [{"name": r, "class": _CSS_CLASS[r]} for r in ROLLUPS],
        "plot_areas": verdicts_per_area(listed),
        "plot_slowest": None if validating else slowest_cases(listed, anchors),
        "faults": _faults(listed, results.get("faults")),
        "requirements": [
            _requirement_line(str(r.get("id")), registry)
            | {
                "verdict": rolled[str(r.get("id"))],
                "verdict_class": _CSS_CLASS[rolled[str(r.get("id"))]],
                "cases": [_text(c) for c in r["present"]],
            }
            for r in requirements
        ],
        "cases": views,
        "filters": {
            "levels": sorted({v["level"] for v in views if v["level"]}, key=_level_key),
            "areas": sorted({v["area"] for v in views}, key=natural_key),
            "requirements": sorted(
                {r for v in views for r in v["reqs_attr"].split()}, key=natural_key
            ),
        },
        "baseline": _baseline_lines(results.get("baseline")),
    }


def _baseline_lines(section: object) -> list[str]:
    if not isinstance(section, dict):
        return []
    return [printable(line) for _, line in summary_lines(section)]


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def script_and_policy() -> tuple[Markup, Markup]:
    """The page's script and the CSP that allows exactly it (by its SHA-256)."""
    script = (TEMPLATE_DIR / SCRIPT_NAME).read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    policy = f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{digest}'"
    return Markup(script), Markup(policy)


def render_html(results: Mapping[str, Any], template: str = TEMPLATE_NAME, **extra: Any) -> str:
    """The HTML report of ``results`` as a string."""
    script, policy = script_and_policy()
    page = _environment().get_template(template)
    return page.render(report=report_view(results), script=script, policy=policy, **extra)


def write_page(page: str, path: Path) -> None:
    """Write ``page`` to ``path`` via a temporary file, so a reader never sees half a page."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(page, encoding="utf-8", errors="backslashreplace")
    os.replace(partial, path)


def write_html(results: Mapping[str, Any], path: Path) -> None:
    """Write the HTML report of ``results`` to ``path``, creating its folder."""
    write_page(render_html(results), path)
