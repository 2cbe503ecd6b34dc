"""A copy-paste bug report per finding, in Markdown: ``bugs.md`` and the HTML's copy box.

Each section stands on its own, so it can be pasted into an issue tracker as it is: the
requirement (ID, level, text and the source it was drawn from), the case and its title,
the versions that fail the same way, the target, expected vs actual (the case's reason,
every distinct one), the evidence the check named (each frame as a hex dump, the judged
fields with their values) and the command that runs the case again.  Known failures (the
baseline lists them) are left out: they are filed already.

Text from the target goes through :func:`conformance.report.printable`; code blocks are
fenced with more backticks than any run inside them, so a target cannot end a fence.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from conformance.report import lost_line, printable, reason_of, target_line
from conformance.report import wire as wirelog
from conformance.report.findings import Finding, findings, output_lines

BUGS_NAME = "bugs.md"
_TICKS = re.compile(r"`+")


def _fence(text: str, lang: str = "text") -> str:
    longest = max((len(m.group()) for m in _TICKS.finditer(text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text}\n{ticks}"


def _inline(text: object) -> str:
    return printable(text, one_line=True).replace("|", "\\|")


def _frames(case: Mapping[str, Any], results: Mapping[str, Any]) -> list[str]:
    errors = wirelog.error_codes(results)
    found = wirelog.evidence(case, errors)
    if not found:
        return [
            "The case named no evidence (results from an older suite); its whole wire log is "
            "in `report.html` and `results.json`."
        ]
    out = []
    for ev in found:
        e = ev.entry
        role = {"send": "Request", "recv": "Reply", "event": "Event"}.get(e.dir, e.dir)
        out.append(f"**{role}** (wire-log entry {e.index}): {_inline(e.header())}")
        if e.data:
            out.append(_fence("\n".join(wirelog.dump(e.data))))
        if e.cut:
            out.append(f"({e.cut_note})")
        rows = [(f.name, f.value, f.span) for f in ev.fields]
        rows += [(n, "(not in the kept field list)", "") for n in ev.unlisted]
        if rows:
            out.append("| judged field | value | bytes |\n|---|---|---|")
            out[-1] += "".join(f"\n| `{_inline(n)}` | {_inline(v)} | {s} |" for n, v, s in rows)
        elif e.dir != "event":
            out.append("Judged: the frame as a whole.")
    return out


def section(found: Finding, results: Mapping[str, Any]) -> str:
    """One finding as a Markdown section (``## ...`` and what follows)."""
    registry = {
        str(r.get("id")): r for r in results.get("requirements") or [] if isinstance(r, dict)
    }
    first = found.first
    if found.lost:
        ids = ", ".join(f"`{_inline(c.get('case_id'))}`" for c in found.cases)
        return "\n\n".join(
            [
                f"## ERROR: {found.heading}",
                lost_line(results) or "The target went away during the run.",
                f"Target: {_inline(target_line(results))}",
                f"Cases that could not run: {ids}",
            ]
        )
    req = registry.get(found.requirement, {})
    level = printable(req.get("level") or first.get("level") or "?", one_line=True)
    event = f" {found.event}" if found.event else ""
    head = (
        f"## {found.verdict}{event} {_inline(found.requirement) or 'could not run'}: "
        f"{found.heading}"
    )
    lines = [head]
    if found.requirement:
        lines.append(
            f"**Requirement** {_inline(found.requirement)} ({level}): "
            f"{_inline(req.get('text') or '(not in the registry)')}"
        )
        if req.get("source"):
            lines.append(f"**Source**: {_inline(req.get('source'))}")
    cid = printable(first.get("case_id") or "?", one_line=True)
    lines.append(f"**Case** `{_inline(found.base_id)}`: {_inline(first.get('title'))}")
    if len(found.cases) > 1:
        lines.append(
            f"**Versions** {_inline(found.heading.split(' at ', 1)[-1])} "
            f"({len(found.cases)} cases, the same finding)"
        )
    lines.append(f"**Target** {_inline(target_line(results))}")
    reasons = found.reasons()
    if len(reasons) == 1:
        same = f" (the same at {reasons[0][1]})" if len(found.cases) > 1 else ""
        lines.append(f"**Expected vs actual**: {_inline(reasons[0][0])}{same}")
    else:
        lines.append(
            "**Expected vs actual**:\n"
            + "\n".join(f"- {_inline(v)}: {_inline(r)}" for r, v in reasons)
        )
    for _, versions, shown in found.by_reason():  # each distinct answer, with its frames
        sid = printable(shown.get("case_id") or "?", one_line=True)
        lines.append(f"### Request and reply ({_inline(sid)})")
        if len(reasons) > 1:
            lines.append(f"For {_inline(versions)}: {_inline(reason_of(shown))}")
        lines += _frames(shown, results)
    printed = output_lines(first)
    if printed:
        lines.append(f"### What the target printed ({_inline(cid)})")
        lines.append(_fence("\n".join(printed)))
    lines.append("### Reproduce")
    lines.append(_fence(printable(first.get("reproduce") or "(no command)", one_line=True), "sh"))
    if len(found.cases) > 1:
        lines.append(
            f"The other versions: the same command with `{_inline(cid)}` replaced by "
            + ", ".join(f"`{_inline(c.get('case_id'))}`" for c in found.cases[1:])
            + "."
        )
    return "\n\n".join(lines)


def bug_reports(results: Mapping[str, Any]) -> list[tuple[Finding, str]]:
    """Every finding the baseline does not expect, with its Markdown section."""
    return [(f, section(f, results)) for f in findings(results)]


def render_bugs(results: Mapping[str, Any]) -> str:
    """``bugs.md``: a title line, then one section per finding (or a line saying none)."""
    reports = bug_reports(results)
    title = f"# Findings: {printable(target_line(results), one_line=True)}"
    if not reports:
        return f"{title}\n\nNo findings: no case failed that the baseline does not list.\n"
    return title + "\n\n" + "\n\n---\n\n".join(text for _, text in reports) + "\n"


def write_bugs(results: Mapping[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_bugs(results), encoding="utf-8", errors="backslashreplace")
