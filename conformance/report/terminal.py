"""What ``conformance run`` prints when the run ends: findings first, then one summary line.

:func:`print_summary` prints, with rich, at the terminal's width (80 columns in a CI log
unless ``COLUMNS`` says otherwise):

1. one block per *finding* the baseline does not expect (:mod:`conformance.report.findings`:
   a case failing the same way at several versions is one block, ``kafka/fetch/3 at
   v0–v16``), worst first, headed by the verdict, the case, the broken requirement and
   the title: the reason (expected vs actual; every distinct one), the requirement's text,
   the evidence the check named (request, then reply or close, one after the other: hex
   with the judged bytes highlighted, then the judged fields) and the command that
   reproduces it.  Every finding is printed; ERROR cases of a lost target are one block;
2. a note when the target stopped answering, and what the baseline found;
3. one summary line listing every broken requirement, MUST and SHOULD apart:
   ``FAILED cursus doc against embedded (127.0.0.1:9000): 80 cases, 75 PASS, 5 FAIL;
   broken MUST: CUR-ACK-4; 3.1 s``.

Hex is hex throughout: offsets, bytes and field spans (``[0x22..0x2a)``); lengths are
decimal and say ``bytes``.  With ``quiet`` only the baseline's notes (they decide the exit
code) and the summary line are printed.  Every piece of text is a :class:`rich.text.Text`,
never markup, so a target's ``[bold]`` is printed as it is.
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
    lost_line,
    printable,
    total_line,
    unresponsive_line,
)
from conformance.report import wire as wirelog
from conformance.report.findings import (
    Finding,
    broken_by_level,
    compact_ids,
    findings,
    output_lines,
)

#: Hex rows of a frame shown whole; a longer frame shows its first rows and every row
#: holding a judged byte (the HTML report has every byte).
FRAME_ROWS = 8
#: Wire-log summaries listed for a case that named no evidence.
SUMMARY_ROWS = 12
#: The style of judged bytes and fields.
JUDGED = "bold black on yellow"

VERDICT_STYLES: dict[str, str] = {
    "PASS": "green",
    "FAIL": "bold red",
    "WARN": "bold yellow",
    "UNSUPPORTED": "cyan",
    "ERROR": "bold magenta",
}


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


def _rows_shown(count: int, marked_rows: set[int]) -> list[int | None]:
    """Row numbers to print (None: an elision), all when few, else the first rows and
    every row with a judged byte."""
    if count <= FRAME_ROWS + 2:
        return list(range(count))
    keep = set(range(2 if marked_rows else FRAME_ROWS)) | marked_rows
    out: list[int | None] = []
    for row in range(count):
        if row in keep:
            out.append(row)
        elif out and out[-1] is not None:
            out.append(None)
    return out


def _hex(ev: wirelog.Evidence, width: int) -> Text:
    """The frame's hex rows, the judged bytes styled; offsets and bytes in hex."""
    row_bytes = 16 if width >= 90 else 8
    spans = ev.spans
    marked = {at for a, b in spans for at in range(a, b)}
    rows = wirelog.hex_rows(ev.entry.data, row_bytes)
    marked_rows = {at // row_bytes for at in marked if at < len(ev.entry.data)}
    out = Text()
    lead = " " * 9
    for row in _rows_shown(len(rows), marked_rows):
        out.append(lead)
        if row is None:
            out.append("…\n", style="dim")
            continue
        start, chunk = rows[row]
        out.append(f"{start:04x}  ", style="dim")
        for i, byte in enumerate(chunk):
            out.append(f"{byte:02x}", style=JUDGED if start + i in marked else "")
            out.append(" " if i < len(chunk) - 1 else "")
        out.append("   " * (row_bytes - len(chunk)) + "  " + wirelog.ascii_of(chunk) + "\n")
    if len(rows) > FRAME_ROWS + 2 and rows:
        out.append(
            f"{lead}({len(ev.entry.data)} bytes kept; every row in the HTML report)\n", style="dim"
        )
    if ev.entry.cut:
        out.append(f"{lead}({ev.entry.cut_note})\n", style="dim")
    return out


def _evidence(case: Mapping[str, Any], width: int, errors: ErrorCodes | None) -> Text:
    out = Text()
    found = wirelog.evidence(case, errors)
    if not found:
        logged = wirelog.entries(case, errors)
        note = "the case named no evidence; its wire log (every byte in the HTML report):"
        out.append_text(_labelled("frames", [note], width, "dim"))
        heads = [e.header() for e in logged[:SUMMARY_ROWS]]
        if len(logged) > SUMMARY_ROWS:
            heads.append(f"... {len(logged) - SUMMARY_ROWS} more entries")
        out.append_text(_labelled("", heads or ["(no wire log)"], width, wrap=False))
        return out
    for ev in found:
        out.append_text(_labelled(ev.entry.dir or "frame", [ev.entry.header()], width))
        if not ev.entry.compact:
            out.append_text(_hex(ev, width))
        for f in ev.fields:
            out.append(" " * 9 + "field ", style="dim")
            out.append(wirelog.field_line(f), style=JUDGED)
            out.append("\n")
        for name in ev.unlisted:
            out.append(" " * 9 + "field ", style="dim")
            out.append(name, style=JUDGED)
            out.append(" (judged; not in the kept field list)\n", style="dim")
    return out


def _block(
    found: Finding,
    registry: Mapping[str, Mapping[str, Any]],
    width: int,
    errors: ErrorCodes | None,
    results: Mapping[str, Any],
) -> Text:
    verdict = found.verdict
    out = Text()
    out.append(f"{verdict} ", style=VERDICT_STYLES[verdict])
    if found.event:
        out.append(f"{found.event} ", style="bold red")
    out.append(found.heading, style="bold")
    if found.lost:
        out.append("\n")
        line = lost_line(results) or "the target went away during the run"
        out.append_text(_labelled("reason", [line], width))
        ids = [printable(c.get("case_id") or "?", one_line=True) for c in found.cases]
        out.append_text(_labelled("cases", ["; ".join(compact_ids(ids))], width, "dim"))
        return out
    case = found.first
    req = registry.get(found.requirement, {})
    if found.requirement:
        level = printable(req.get("level") or "?")
        out.append(f"  {printable(found.requirement, one_line=True)} ({level})")
    title = printable(case.get("title"), one_line=True)
    if title and len(out) + 2 + len(title) <= width:
        out.append(f"  {title}\n", style="dim")
    else:
        out.append("\n")
        if title:
            out.append_text(_labelled("", [title], width, "dim"))
    reasons = found.reasons(limit=600)
    if len(reasons) == 1:
        same = f" (the same at {reasons[0][1]})" if len(found.cases) > 1 else ""
        out.append_text(_labelled("reason", [reasons[0][0] + same], width))
    else:
        out.append_text(_labelled("reason", [f"{v}: {r}" for r, v in reasons], width))
    if req.get("text"):
        rule = printable(req.get("text"), one_line=True, limit=300)
        out.append_text(_labelled("rule", [rule], width, "dim"))
    if len(found.cases) > 1:
        shown = printable(case.get("case_id") or "?", one_line=True)
        out.append_text(_labelled("", [f"the frames of {shown}:"], width, "dim"))
    out.append_text(_evidence(case, width, errors))
    printed = output_lines(case)
    if printed:
        out.append_text(_labelled("output", printed, width, "dim", wrap=False))
    if case.get("reproduce"):
        again = printable(case.get("reproduce"), one_line=True)
        out.append_text(_labelled("again", [again], width, wrap=False))
    return out


def summary_line(results: Mapping[str, Any]) -> Text:
    """``FAILED <target line>: 80 cases, 75 PASS, 5 FAIL; broken MUST: CUR-ACK-4; 3.1 s``:
    every broken requirement, MUST and SHOULD apart."""
    code = results.get("exit_code")
    word, style = ("PASSED", "bold green") if code == 0 else ("FAILED", "bold red")
    line = Text(f"{word} ", style=style)
    text = total_line(results)
    for level, ids in broken_by_level(results).items():
        text += f"; broken {level}: " + ", ".join(printable(r, one_line=True) for r in ids)
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
        for found in findings(results):
            out.print(_block(found, registry, out.width, errors, results), soft_wrap=True)
        for warning in (lost_line(results), unresponsive_line(results)):
            if warning is not None:
                out.print(Text(warning, style="bold yellow"), soft_wrap=True)
    section = results.get("baseline")
    if isinstance(section, dict):  # what the baseline found decides the exit code: always shown
        for style, line in summary_lines(section):
            out.print(Text(printable(line), style=style), soft_wrap=True)
    # soft_wrap: the summary stays one line in a narrow CI log, so grep finds it whole
    out.print(summary_line(results), soft_wrap=True)
