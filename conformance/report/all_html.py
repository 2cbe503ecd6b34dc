"""The report of ``conformance run --all``: one page, a section per protocol.

``report.html`` beside the protocols' folders: a header with the total, a table of the
protocols (revision, target, verdict counts, wall time, a link to the protocol's own
report), then one section per protocol listing its findings (FAIL, ERROR, WARN: the case,
the broken requirement, the reason, each linked into the protocol's report) and, when the
run checked it, the cross-protocol matrix (produced over the row's protocol, consumed over
the column's).  Self-contained and script-free, as the other pages
(:mod:`conformance.report.html`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from markupsafe import Markup

from conformance.report import printable, target_line, total_line
from conformance.report.findings import findings
from conformance.report.html import _environment, write_page

TEMPLATE = "all.html.j2"
PAGE = "report.html"


def _section(results: Mapping[str, Any]) -> dict[str, Any]:
    name = str(results.get("protocol"))
    rows = []
    for found in findings(results):
        case = found.first
        rows.append(
            {
                "verdict": found.verdict,
                "css": found.verdict.lower(),
                "case": found.heading,
                "href": f"{name}/{PAGE}#{printable(case.get('case_id'), one_line=True)}",
                "requirement": printable(found.requirement, one_line=True),
                "reason": printable(
                    found.reasons(limit=300)[0][0] if found.cases else "", limit=300
                ),
            }
        )
    return {
        "name": name,
        "title": printable(target_line(results), one_line=True),
        "total": printable(total_line(results), one_line=True),
        "findings": rows,
        "href": f"{name}/{PAGE}",
        "passed": results.get("exit_code") == 0,
    }


def all_view(summary: Mapping[str, Any], runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    sections = {str(r.get("protocol")): _section(r) for r in runs}
    protocols = []
    for entry in summary.get("protocols") or []:
        counts = entry.get("counts") or {}
        protocols.append(
            {
                "name": entry["protocol"],
                "revision": entry.get("revision"),
                "target": entry.get("target") or "",
                "quirks": ", ".join(entry.get("quirks") or []),
                "counts": ", ".join(f"{n} {v}" for v, n in counts.items() if n),
                "wall": f"{entry.get('wall_s', 0):.1f} s",
                "state": (
                    entry.get("not_checked")
                    and f"not checked: {printable(entry['not_checked'], one_line=True)}"
                )
                or entry.get("skipped")
                or ("passed" if entry.get("exit_code") == 0 else "failed"),
                "href": entry.get("report"),
            }
        )
    counts = (summary.get("total") or {}).get("counts") or {}
    cross = summary.get("cross")
    return {
        "title": "conformance: every protocol",
        "passed": summary.get("exit_code") == 0,
        "total": ", ".join(f"{n} {v}" for v, n in counts.items() if n),
        "cases": (summary.get("total") or {}).get("cases", 0),
        "wall": f"{summary.get('wall_s', 0):.1f} s",
        "protocols": protocols,
        "sections": [sections[p["name"]] for p in protocols if p["name"] in sections],
        "cross": cross,
    }


def write_all_report(
    summary: Mapping[str, Any], runs: Sequence[Mapping[str, Any]], reports: Path
) -> None:
    policy = Markup("default-src 'none'; style-src 'unsafe-inline'")
    page = _environment().get_template(TEMPLATE).render(v=all_view(summary, runs), policy=policy)
    write_page(page, reports / PAGE)
