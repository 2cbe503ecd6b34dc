"""Self-contained HTML report of a run, rendered with jinja2 from ``results.json``.

:func:`write_html` turns the results dict into one HTML file: inline CSS, no
script, no external asset, and a Content-Security-Policy that forbids loading
anything, so the file can be attached to a CI run and opened anywhere.  It holds:

* a header: protocol, revision, target, quirks, date, duration, verdict counts;
* the requirements coverage table: each requirement's level, its verdict rolled
  up from its cases (see :func:`conformance.report.requirement_rollup`), its cases;
* one section per case, folded when it passed: the requirements it checks, with
  their text, the message, and the wire log (hex wrapped at 32 bytes a line, each
  entry cut at 4 KiB with a note saying so).

Wire logs carry whatever bytes the target sent, so autoescape is always on (the
template's ``.j2`` suffix would defeat jinja2's suffix-based autoescape choice)
and every string goes through :func:`conformance.report.printable` first.  This
module turns the results into plain view data; the template only lays it out.
"""

from __future__ import annotations

import binascii
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2

from conformance.baseline import summary_lines
from conformance.report import (
    NOT_CHECKABLE,
    NOT_RUN,
    UNDECIDED,
    VERDICTS,
    broken_requirements,
    case_requirements,
    cases,
    count_verdicts,
    printable,
    requirement_rollup,
    target_line,
    total_line,
    unresponsive_line,
    verdict_of,
)

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
TEMPLATE_NAME = "report.html.j2"

#: Bytes shown per hex line.
HEX_LINE_BYTES = 32
#: Bytes shown per wire-log entry; the rest is cut with a note.
HEX_ENTRY_LIMIT = 4096
#: Wire-log entries shown per case (a flood case can log many thousands).
WIRE_ENTRY_LIMIT = 2000

_DIRECTIONS = {"send": "send", "recv": "recv", "event": "event"}
_CSS_CLASS = {v: v.lower() for v in VERDICTS} | {
    UNDECIDED: "undecided",
    NOT_RUN: "not-run",
    NOT_CHECKABLE: "not-checkable",
}


def _text(value: object) -> str:
    return printable(value, one_line=True)


def _seconds(value: object) -> str:
    if not isinstance(value, int | float | str) or isinstance(value, bool):
        return ""
    try:
        seconds = float(value)
    except ValueError:
        return ""
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def hex_lines(data: bytes) -> list[str]:
    """``data`` as lines of ``offset  hex bytes  ascii``, :data:`HEX_LINE_BYTES` a line."""
    lines = []
    for start in range(0, len(data), HEX_LINE_BYTES):
        chunk = data[start : start + HEX_LINE_BYTES]
        hexed = " ".join(f"{b:02x}" for b in chunk).ljust(HEX_LINE_BYTES * 3 - 1)
        shown = "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in chunk)
        lines.append(f"{start:04x}  {hexed}  {shown}")
    return lines


#: Fields listed per wire-log entry.
FIELDS_LIMIT = 64


def field_labels(entry: Mapping[str, Any]) -> list[str]:
    """``name=value @start-end`` for each field the protocol's annotator found in the entry."""
    out = []
    for f in entry.get("fields") or []:
        if isinstance(f, list) and len(f) == 4:
            name, start, end, value = f
            out.append(printable(f"{name}={value!r} @{start}-{end}", one_line=True, limit=120))
    return out[:FIELDS_LIMIT]


def wire_entry(entry: Mapping[str, Any]) -> dict[str, Any]:
    """View data for one wire-log entry: hex lines cut at :data:`HEX_ENTRY_LIMIT`, notes,
    and the protocol's fields, as the wire log recorded them."""
    raw = str(entry.get("hex") or "")
    notes = []
    try:
        data = binascii.unhexlify("".join(raw.split()))
    except (binascii.Error, ValueError):
        data = b""
        notes.append(f"the log's hex is not valid hex: {printable(raw, one_line=True, limit=80)}")
    length = entry.get("len")
    total = length if isinstance(length, int) and length >= len(data) else len(data)
    if len(data) > HEX_ENTRY_LIMIT:
        notes.append(f"hex cut: first {HEX_ENTRY_LIMIT} of {total} bytes shown")
        data = data[:HEX_ENTRY_LIMIT]
    elif total > len(data) and raw:
        notes.append(f"the log kept {len(data)} of {total} bytes")
    direction = str(entry.get("dir") or "")
    return {
        "t": _seconds(entry.get("t")) if entry.get("t") is not None else "",
        "conn": _text(entry.get("conn")),
        "dir": _text(direction),
        "dir_class": _DIRECTIONS.get(direction, "other"),
        "len": _text(length),
        "summary": printable(entry.get("summary"), limit=500),
        "hex": hex_lines(data),
        "notes": notes,
        "fields": field_labels(entry),
    }


def _requirement_view(
    req: Mapping[str, Any], by_id: Mapping[str, Mapping[str, Any]], anchors: Mapping[str, str]
) -> dict[str, Any]:
    rolled, present = requirement_rollup(req, by_id)
    return {
        "id": _text(req.get("id")),
        "level": _text(req.get("level")),
        "area": _text(req.get("area")),
        "text": printable(req.get("text")),
        "source": printable(req.get("source")),
        "not_checkable": printable(req.get("not_checkable") or ""),
        "verdict": rolled,
        "verdict_class": _CSS_CLASS[rolled],
        "cases": [{"id": _text(cid), "anchor": anchors[cid]} for cid in present],
    }


def _case_view(
    index: int,
    case: Mapping[str, Any],
    registry: Mapping[str, Mapping[str, Any]],
) -> dict[str, Any]:
    verdict = verdict_of(case)
    log = [e for e in case.get("wire_log") or [] if isinstance(e, dict)]
    checked = []
    for req_id in case_requirements(case):
        req = registry.get(req_id, {})
        checked.append(
            {
                "id": _text(req_id),
                "level": _text(req.get("level") or case.get("level")),
                "text": printable(req.get("text")),
                "source": printable(req.get("source")),
                "violated": req_id == case.get("violated"),
            }
        )
    return {
        "anchor": f"case-{index}",
        "id": _text(case.get("case_id") or case.get("nodeid") or f"case {index}"),
        "title": _text(case.get("title")),
        "area": _text(case.get("area")),
        "nodeid": _text(case.get("nodeid")),
        "level": _text(case.get("level")),
        "verdict": verdict,
        "verdict_class": _CSS_CLASS[verdict],
        "open": verdict != "PASS",
        "expected": bool(case.get("expected")),
        "violated": _text(case.get("violated") or ""),
        "message": printable(case.get("message") or ""),
        "duration": _seconds(case.get("duration_s")),
        "requirements": checked,
        "wire_log": [wire_entry(e) for e in log[:WIRE_ENTRY_LIMIT]],
        "wire_log_cut": max(len(log) - WIRE_ENTRY_LIMIT, 0),
    }


def report_view(results: Mapping[str, Any]) -> dict[str, Any]:
    """Everything the template shows, as plain strings, lists and dicts."""
    listed = cases(results)
    by_id: dict[str, Mapping[str, Any]] = {}
    anchors: dict[str, str] = {}
    for index, case in enumerate(listed):
        cid = str(case.get("case_id") or case.get("nodeid") or f"case {index}")
        by_id.setdefault(cid, case)
        anchors.setdefault(cid, f"case-{index}")
    requirements = [r for r in results.get("requirements") or [] if isinstance(r, dict)]
    registry = {str(r.get("id")): r for r in requirements}
    for req_id in broken_requirements(results):
        if req_id not in registry:  # broken, but missing from the registry: still show it
            requirements.append({"id": req_id, "level": "?", "text": "(not in the registry)"})
    counted = count_verdicts(results)
    quirks = results.get("quirks") or []
    return {
        "title": f"{target_line(results)}: conformance report",
        "tool": _text(results.get("tool") or "broker-conformance"),
        "version": _text(results.get("version")),
        "protocol": _text(results.get("protocol")),
        "revision": _text(results.get("revision")),
        "target": _text(results.get("target")),
        "embedded": bool(results.get("embedded")),
        "strict": bool(results.get("strict")),
        "quirks": [_text(q) for q in (quirks if isinstance(quirks, list) else [quirks])],
        "started": _text(results.get("started")),
        "duration": _seconds(results.get("duration_s")),
        "exit_code": _text(results.get("exit_code")),
        "unresponsive": unresponsive_line(results),
        "total": total_line(results),
        "broken": [_text(r) for r in broken_requirements(results)],
        "counts": [{"verdict": v, "n": counted[v], "class": _CSS_CLASS[v]} for v in VERDICTS],
        "requirements": [_requirement_view(r, by_id, anchors) for r in requirements],
        "cases": [_case_view(i, c, registry) for i, c in enumerate(listed)],
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


def render_html(results: Mapping[str, Any]) -> str:
    """The HTML report of ``results`` as a string."""
    return _environment().get_template(TEMPLATE_NAME).render(report=report_view(results))


def write_html(results: dict[str, Any], path: Path) -> None:
    """Write the HTML report of ``results`` to ``path``, creating its folder.

    The file is written next to ``path`` first and then moved into place, so a
    reader never sees half a report.
    """
    page = render_html(results)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(page, encoding="utf-8", errors="backslashreplace")
    os.replace(partial, path)
