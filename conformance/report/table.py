"""Terminal summary of a run: the cases that did not pass, the totals, what broke.

:func:`print_summary` prints, with rich and plain enough for a CI log:

1. a table of the cases that are not PASS, worst first (every case, in run order,
   with ``verbose=True``): case ID, verdict, violated requirement, one-line message;
2. the totals, e.g. ``cursus doc against 127.0.0.1:9000: 52 cases, 50 PASS, 1 FAIL``;
3. ``broken requirements: CUR-FRAME-3, CUR-ACK-4`` when any case is FAIL or WARN;
4. a warning when the target stopped answering during the run.

Every cell is a :class:`rich.text.Text`, never markup, so a target's message that
contains ``[bold]`` or ``[/]`` is printed as it is instead of being interpreted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from conformance.baseline import summary_lines
from conformance.report import (
    SEVERITY,
    broken_requirements,
    case_requirements,
    cases,
    printable,
    total_line,
    unresponsive_line,
    verdict_of,
)

#: Rows shown for cases that share a verdict and message (a dead target: all of them).
SAME_MESSAGE_ROWS = 3

#: Longest message shown in a table row; the HTML report has the whole text.
MESSAGE_LIMIT = 160

VERDICT_STYLES: dict[str, str] = {
    "PASS": "green",
    "FAIL": "bold red",
    "WARN": "yellow",
    "UNSUPPORTED": "cyan",
    "ERROR": "bold magenta",
}


def _requirement_cell(case: Mapping[str, Any]) -> Text:
    violated = case.get("violated")
    if violated:
        return Text(printable(violated, one_line=True))
    checked = ", ".join(printable(r, one_line=True) for r in case_requirements(case))
    return Text(checked, style="dim")


def _row(case: Mapping[str, Any]) -> tuple[Text, Text, Text, Text]:
    verdict = verdict_of(case)
    shown = Text(verdict, style=VERDICT_STYLES[verdict])
    if case.get("expected"):
        shown = Text(f"{verdict} (known)", style="dim")
    return (
        Text(printable(case.get("case_id") or case.get("nodeid") or "?", one_line=True)),
        shown,
        _requirement_cell(case),
        Text(printable(case.get("message"), one_line=True, limit=MESSAGE_LIMIT)),
    )


def build_table(results: Mapping[str, Any], *, verbose: bool = False) -> Table | None:
    """The case table, or None when there is nothing to list."""
    listed = cases(results)
    if not verbose:
        problems = [c for c in listed if verdict_of(c) != "PASS"]
        listed = sorted(problems, key=lambda c: SEVERITY.index(verdict_of(c)))
    if not listed:
        return None
    table = Table(box=box.SIMPLE, show_edge=False, pad_edge=False, expand=False)
    table.add_column("case", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    table.add_column("requirement", no_wrap=True)
    table.add_column("message", overflow="fold")
    repeats: dict[tuple[str, str], int] = {}
    for case in listed:
        key = (verdict_of(case), str(case.get("message") or ""))
        repeats[key] = repeats.get(key, 0) + 1
        if verbose or repeats[key] <= SAME_MESSAGE_ROWS:
            table.add_row(*_row(case))
    if not verbose:
        for (verdict, _), n in repeats.items():
            if n > SAME_MESSAGE_ROWS:
                more = n - SAME_MESSAGE_ROWS
                note = f"... and {more} more {verdict} case(s) with the same message"
                table.add_row(
                    Text("..."),
                    Text(verdict, style=VERDICT_STYLES[verdict]),
                    Text(""),
                    Text(note, style="dim"),
                )
    return table


def print_summary(
    results: dict[str, Any], console: Console | None = None, *, verbose: bool = False
) -> None:
    """Print the summary of ``results`` (the dict in ``reports/results.json``)."""
    out = console if console is not None else Console(highlight=False)
    table = build_table(results, verbose=verbose)
    if table is not None:
        out.print(table)
    # soft_wrap: a summary line stays one line in a narrow CI log, so grep finds it whole
    out.print(Text(total_line(results)), highlight=False, soft_wrap=True)
    broken = broken_requirements(results)
    if broken:
        names = ", ".join(printable(r, one_line=True) for r in broken)
        out.print(Text(f"broken requirements: {names}", style="red"), soft_wrap=True)
    section = results.get("baseline")
    if isinstance(section, dict):
        for style, line in summary_lines(section):
            out.print(Text(printable(line), style=style), soft_wrap=True)
    warning = unresponsive_line(results)
    if warning is not None:
        out.print(Text(warning, style="bold yellow"), soft_wrap=True)
