"""Self-contained HTML report of a run, rendered with jinja2 from ``results.json``.

:func:`write_html` turns the results dict into one HTML file that opens from disk: inline
CSS, inline SVG plots, one inline script (the filters and the anchors) allowed by its
hash in the page's Content-Security-Policy, which forbids everything else.  Top to bottom:

* a compact header: what was checked against what, the verdict counts, one total line;
* **Failures first**: every broken requirement (FAIL, then ERROR, then WARN), each with
  its text and its cases, and per case the one-line reason, the decisive frame (hex with
  the protocol's fields, the field the reason names highlighted) and the command that
  reproduces it; known failures (from a baseline) folded apart;
* coverage per level and per area, and plots (verdicts per area, the slowest cases);
* the requirements table, each row anchored by its ID (``#CUR-ACK-4``);
* every case, anchored by its ID (``#cursus/ack/5``; opening that address unfolds it),
  with filters by verdict, level, area and requirement, and its whole kept wire log.

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
from conformance.report.plots import slowest_cases, verdicts_per_area

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
TEMPLATE_NAME = "report.html.j2"
SCRIPT_NAME = "report.js"

#: Wire-log entries shown per case (a flood case can log many thousands).
WIRE_ENTRY_LIMIT = 500

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


def entry_view(e: wirelog.Entry, marked: set[str] | None = None) -> dict[str, Any]:
    """A wire-log entry: its header, hex rows (bytes of a marked field highlighted), its
    fields (marked ones flagged) and the cut marker."""
    marked = marked or set()
    spans = [(f.start, f.end) for f in e.fields if f.name in marked]
    rows = []
    for start, chunk in wirelog.hex_rows(e.data):
        cells = []
        for i, byte in enumerate(chunk):
            at = start + i
            cells.append({"hex": f"{byte:02x}", "mark": any(a <= at < b for a, b in spans)})
        pad = "   " * (wirelog.ROW_BYTES - len(chunk))
        rows.append(
            {"offset": f"{start:04x}", "cells": cells, "pad": pad, "ascii": wirelog.ascii_of(chunk)}
        )
    return {
        "header": e.header(),
        "dir_class": e.dir if e.dir in ("send", "recv", "event") else "other",
        "rows": rows,
        "cut": e.cut_note,
        "bad_hex": e.bad_hex,
        "fields": [
            {
                "name": f.name,
                "value": f.value,
                "span": f"{f.start}..{f.end}",
                "mark": f.name in marked,
            }
            for f in e.fields
        ],
    }


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
    logged = wirelog.entries(case, errors)
    checked = case_requirements(case)
    violated = _text(case.get("violated") or "") if verdict in ("FAIL", "WARN") else ""
    shown_reqs = checked + ([violated] if violated and violated not in checked else [])
    decisive = wirelog.decisive(case, errors) if verdict in ("FAIL", "WARN", "ERROR") else None
    blamed = decisive is not None and verdict in ("FAIL", "WARN")  # an ERROR blames no field
    marked = wirelog.offending(case, decisive, errors) if blamed and decisive is not None else set()
    cid = _text(case.get("case_id") or case.get("nodeid") or "?")
    return {
        "id": cid,
        "title": _text(case.get("title")),
        "area": _text(case.get("area")),
        "level": _text(case.get("level")),
        "verdict": verdict,
        "verdict_class": _CSS_CLASS[verdict],
        "expected": bool(case.get("expected")),
        "open": verdict in ("FAIL", "ERROR", "WARN") and not case.get("expected"),
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
        "decisive": entry_view(decisive, marked) if decisive is not None else None,
        "wire_log": [
            entry_view(e, marked if e is decisive else None) for e in logged[:WIRE_ENTRY_LIMIT]
        ],
        "wire_log_cut": max(len(logged) - WIRE_ENTRY_LIMIT, 0),
    }


def failure_groups(
    views: Sequence[dict[str, Any]], registry: Mapping[str, Mapping[str, Any]], *, known: bool
) -> list[dict[str, Any]]:
    """The failing cases grouped by the requirement they broke: FAIL groups, then one
    group of ERROR cases (they broke nothing: they could not run), then WARN groups."""
    groups: dict[tuple[int, str], dict[str, Any]] = {}
    order = {"FAIL": 0, "ERROR": 1, "WARN": 2}
    for view in views:
        if view["verdict"] not in order or view["expected"] != known:
            continue
        key = (order[view["verdict"]], view["violated"] if view["verdict"] != "ERROR" else "")
        if key not in groups:
            req = _requirement_line(key[1], registry) if key[1] else None
            groups[key] = {
                "verdict": view["verdict"],
                "class": view["verdict_class"],
                "requirement": req,
                "cases": [],
            }
        groups[key]["cases"].append(view)
    return [groups[k] for k in sorted(groups, key=lambda k: (k[0], natural_key(k[1])))]


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
    counted = count_verdicts(results)
    quirks = results.get("quirks") or []
    label = results.get("target_name") or results.get("target") or "?"
    anchors = {v["id"]: v["id"] for v in views}
    return {
        "title": f"{_text(results.get('protocol'))} conformance of {_text(label)}",
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
        "failures": failure_groups(views, registry, known=False),
        "known": failure_groups(views, registry, known=True),
        "coverage_level": _coverage(requirements, rolled, "level"),
        "coverage_area": _coverage(requirements, rolled, "area"),
        "rollups": [{"name": r, "class": _CSS_CLASS[r]} for r in ROLLUPS],
        "plot_areas": verdicts_per_area(listed),
        "plot_slowest": slowest_cases(listed, anchors),
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
