"""What ``conformance run`` prints when the run ends: problems first, then one summary line.

:func:`print_summary` prints, with rich, at the terminal's width (80 columns in a CI log
unless ``COLUMNS`` says otherwise):

1. one block per FAIL, WARN and ERROR case the baseline does not expect, worst first,
   headed by the verdict, case ID, broken requirement and title: the reason (expected vs
   actual), the requirement's text, the decisive frame (hex, and the fields the reason
   names) and the command that reproduces it.  Cases with the same verdict and reason
   after the third are listed by ID only (a dead target fails every case alike);
2. a note when the target stopped answering, and what the baseline found;
3. one summary line: ``FAILED cursus doc against embedded (127.0.0.1:9000): 80 cases,
   75 PASS, 5 FAIL; broken: CUR-ACK-4; 3.1 s``.

With ``quiet`` only the baseline's notes (they decide the exit code) and the summary line
are printed.  Every piece of text is a :class:`rich.text.Text`, never markup, so a
target's ``[bold]`` is printed as it is.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.text import Text

from conformance.baseline import summary_lines
from conformance.plugin import ErrorCodes
from conformance.report import (
    SEVERITY,
    broken_requirements,
    cases,
    printable,
    reason_of,
    total_line,
    unresponsive_line,
    verdict_of,
)
from conformance.report import wire as wirelog

#: Blocks printed in full per (verdict, reason); the rest are listed by case ID.
SAME_REASON_BLOCKS = 3
#: Hex rows of the decisive frame shown in a block (the HTML report has every byte).
FRAME_ROWS = 8

VERDICT_STYLES: dict[str, str] = {
    "PASS": "green",
    "FAIL": "bold red",
    "WARN": "bold yellow",
    "UNSUPPORTED": "cyan",
    "ERROR": "bold magenta",
}


def problems(results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """FAIL, ERROR and WARN cases the baseline does not expect, worst first."""
    found = [
        c
        for c in cases(results)
        if verdict_of(c) in ("FAIL", "ERROR", "WARN") and not c.get("expected")
    ]
    return sorted(found, key=lambda c: SEVERITY.index(verdict_of(c)))


def _labelled(
    label: str, lines: list[str], width: int, style: str = "", *, wrap: bool = True
) -> Text:
    """``  reason  <text>`` with wrapped lines indented under the text, no trailing blanks;
    without ``wrap`` each line stays whole (a command to copy, a hex row)."""
    out = Text()
    lead = f"  {label:<7}"
    for index, line in enumerate(lines):
        room = max(width - len(lead), 20)
        wrapped = (textwrap.wrap(line, room, break_on_hyphens=False) if wrap else [line]) or [""]
        for part_index, part in enumerate(wrapped):
            first = index == 0 and part_index == 0
            out.append(lead if first else " " * len(lead), style="dim")
            out.append(part + "\n", style=style)
    return out


def _block(
    case: Mapping[str, Any],
    registry: Mapping[str, Mapping[str, Any]],
    width: int,
    errors: ErrorCodes | None = None,
) -> Text:
    verdict = verdict_of(case)
    out = Text()
    out.append(f"{verdict} ", style=VERDICT_STYLES[verdict])
    out.append(printable(case.get("case_id") or "?", one_line=True), style="bold")
    req_id = str(case.get("violated") or "")
    req = registry.get(req_id, {})
    if req_id:
        out.append(f"  {printable(req_id, one_line=True)} ({printable(req.get('level') or '?')})")
    title = printable(case.get("title"), one_line=True)
    if title and len(out) + 2 + len(title) <= width:
        out.append(f"  {title}\n", style="dim")
    else:
        out.append("\n")
        if title:
            out.append_text(_labelled("", [title], width, "dim"))
    out.append_text(_labelled("reason", [reason_of(case, limit=600)], width))
    if req.get("text"):
        rule = printable(req.get("text"), one_line=True, limit=300)
        out.append_text(_labelled("rule", [rule], width, "dim"))
    frame = wirelog.decisive(case, errors)
    if frame is not None:
        row_bytes = 16 if width >= 90 else 8
        rows = wirelog.dump(frame.data, row_bytes)
        shown = len(rows) if len(rows) <= FRAME_ROWS + 2 else FRAME_ROWS  # never "1 more row"
        lines = rows[:shown]
        if len(rows) > shown:
            more = len(frame.data) - shown * row_bytes
            lines.append(f"... {more} more bytes in the HTML report")
        elif frame.cut:
            lines.append(f"({frame.cut_note})")
        named = wirelog.offending(case, frame, errors) if verdict in ("FAIL", "WARN") else set()
        lines += [f"field {wirelog.field_line(f)}" for f in frame.fields if f.name in named]
        out.append_text(_labelled("frame", [frame.header()], width))
        out.append_text(_labelled("", lines, width, wrap=False))
    if case.get("reproduce"):
        again = printable(case.get("reproduce"), one_line=True)
        out.append_text(_labelled("again", [again], width, wrap=False))
    return out


def summary_line(results: Mapping[str, Any]) -> Text:
    """``FAILED <target line>: 80 cases, 75 PASS, 5 FAIL (CUR-ACK-4) in 3.1 s``."""
    code = results.get("exit_code")
    word, style = ("PASSED", "bold green") if code == 0 else ("FAILED", "bold red")
    line = Text(f"{word} ", style=style)
    text = total_line(results)
    broken = broken_requirements(results)
    if broken:
        shown = ", ".join(printable(r, one_line=True) for r in broken[:8])
        more = f" and {len(broken) - 8} more" if len(broken) > 8 else ""
        text += f"; broken: {shown}{more}"
    duration = results.get("duration_s")
    if isinstance(duration, int | float):
        text += f"; {duration:.1f} s"
    line.append(text)
    return line


def print_summary(
    results: Mapping[str, Any], console: Console | None = None, *, quiet: bool = False
) -> None:
    """Print the end of a run of ``results`` (the dict in ``reports/results.json``)."""
    out = console if console is not None else Console(highlight=False)
    if not quiet:
        registry = {
            str(r.get("id")): r for r in results.get("requirements") or [] if isinstance(r, dict)
        }
        errors = wirelog.error_codes(results)
        seen: dict[tuple[str, str], list[str]] = {}
        for case in problems(results):
            key = (verdict_of(case), str(case.get("message") or ""))
            seen.setdefault(key, []).append(printable(case.get("case_id") or "?", one_line=True))
            if len(seen[key]) <= SAME_REASON_BLOCKS:
                out.print(_block(case, registry, out.width, errors), soft_wrap=True)
        for (verdict, _), ids in seen.items():
            if len(ids) > SAME_REASON_BLOCKS:
                rest = ids[SAME_REASON_BLOCKS:]
                out.print(
                    Text(
                        f"... {len(rest)} more {verdict} with the same reason: " + " ".join(rest),
                        style=VERDICT_STYLES[verdict],
                    )
                )
        warning = unresponsive_line(results)
        if warning is not None:
            out.print(Text(warning, style="bold yellow"), soft_wrap=True)
    section = results.get("baseline")
    if isinstance(section, dict):  # what the baseline found decides the exit code: always shown
        for style, line in summary_lines(section):
            out.print(Text(printable(line), style=style), soft_wrap=True)
    # soft_wrap: the summary stays one line in a narrow CI log, so grep finds it whole
    out.print(summary_line(results), soft_wrap=True)
