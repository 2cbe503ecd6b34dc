"""Several runs side by side: a matrix of requirements x targets, like Autobahn's.

Each column is one saved run, labelled by its target's name and the time it started (then
what tells runs of one target apart: protocol, revision, quirks), with its counts and,
when the target went away, when and after which case.  Each row is one requirement of any
of the runs, each cell that run's verdict for the requirement, linked to the requirement
in that run's own HTML report.  A FAIL or WARN whose every deciding case the run's
baseline expects is a *known* failure, drawn apart ("FAIL known").  A requirement a run's
protocol or revision does not have is an empty cell.  A row the runs disagree on is
marked; ``only_differing`` (``conformance report --only-differing``) keeps only those, and
the page's "only differing rows" box hides the others without a script.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import jinja2
from markupsafe import Markup

from conformance.report import (
    NOT_RUN,
    broken_by,
    count_verdicts,
    lost_line,
    natural_key,
    printable,
    requirement_rollup,
    verdict_of,
)
from conformance.report.html import ROLLUPS, _environment, text_html

MATRIX_TEMPLATE = "matrix.html.j2"
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")


def run_time(run: Mapping[str, Any]) -> str:
    """``2026-11-23 10:00 UTC`` from the run's ``started`` (or '' when it has none)."""
    started = str(run.get("started") or "")
    found = re.match(r"(\d{4}-\d\d-\d\d)T(\d\d:\d\d)", started)
    return f"{found.group(1)} {found.group(2)} UTC" if found else printable(started, one_line=True)


def labels(runs: Sequence[Mapping[str, Any]], *, with_time: bool = True) -> list[str]:
    """A distinct column label per run: the target's name and (``with_time``) the run's
    start time, then what tells runs of the same target apart (protocol, revision, quirks),
    then a number if still equal.  Without the time it names each run's folder."""

    def part(run: Mapping[str, Any], key: str) -> str:
        value = run.get(key)
        return ", ".join(map(str, value)) if isinstance(value, list) else str(value or "")

    out = []
    for run in runs:
        words = [str(run.get("target_name") or run.get("target") or "?")]
        when = run_time(run) if with_time else ""
        if when:
            words.append(f"@ {when}")
        for key in ("protocol", "revision"):
            if len({part(r, key) for r in runs}) > 1:
                words.append(part(run, key))
        quirks = part(run, "quirks")
        if quirks:
            words.append(f"+{quirks}")
        out.append(printable(" ".join(words), one_line=True))
    seen: dict[str, int] = {}
    unique = []
    for label in out:
        seen[label] = seen.get(label, 0) + 1
        unique.append(label if out.count(label) == 1 else f"{label} #{seen[label]}")
    return unique


def folder_names(names: Sequence[str]) -> list[str]:
    """A file-system-safe, distinct folder name per label."""
    out: list[str] = []
    for name in names:
        slug = _SLUG.sub("-", name).strip("-.") or "run"
        while slug in out:
            slug += "-"
        out.append(slug)
    return out


def _known(req_id: str, present: Sequence[str], by_id: Mapping[str, Mapping[str, Any]]) -> bool:
    """Every case that broke ``req_id`` is one the run's baseline expects."""
    broke = [by_id[c] for c in present if req_id in broken_by(by_id[c])]
    return bool(broke) and all(c.get("expected") for c in broke)


def _cells(run: Mapping[str, Any]) -> tuple[dict[str, tuple[str, bool]], dict[str, Any]]:
    by_id = {str(c.get("case_id")): c for c in run.get("cases") or [] if isinstance(c, dict)}
    mine: dict[str, tuple[str, bool]] = {}
    rows: dict[str, Any] = {}
    for req in run.get("requirements") or []:
        if not isinstance(req, dict):
            continue
        req_id = str(req.get("id"))
        rolled, present = requirement_rollup(req, by_id)
        verdict = req.get("verdict")
        verdict = verdict if verdict in ROLLUPS else rolled
        known = verdict in ("FAIL", "WARN") and _known(req_id, present, by_id)
        mine[req_id] = (str(verdict), known)
        rows[req_id] = {
            "id": printable(req_id, one_line=True),
            "level": printable(req.get("level"), one_line=True),
            "text": text_html(req.get("text")),
        }
    return mine, rows


def matrix_view(
    runs: Sequence[Mapping[str, Any]], folders: Sequence[str], *, only_differing: bool = False
) -> dict[str, Any]:
    names = labels(runs)
    verdicts: list[dict[str, tuple[str, bool]]] = []
    rows: dict[str, dict[str, Any]] = {}
    for run in runs:
        mine, found = _cells(run)
        verdicts.append(mine)
        for req_id, row in found.items():
            rows.setdefault(req_id, row)
    columns = []
    for run, name, folder in zip(runs, names, folders, strict=True):
        counted = count_verdicts(run)
        known = sum(
            1
            for c in run.get("cases") or []
            if isinstance(c, dict)
            and c.get("expected")
            and verdict_of(c) in ("FAIL", "WARN", "ERROR")
        )
        quirks = ", ".join(map(str, run.get("quirks") or []))
        columns.append(
            {
                "name": name,
                "target": printable(
                    run.get("target_name") or run.get("target") or "?", one_line=True
                ),
                "when": run_time(run),
                "quirks": printable(f"quirks: {quirks}", one_line=True) if quirks else "",
                "href": f"{folder}/report.html",
                "what": printable(f"{run.get('protocol')} {run.get('revision')}", one_line=True),
                "counts": ", ".join(f"{n} {v}" for v, n in counted.items() if n),
                "known": f"{known} known failure(s) (baseline)" if known else "",
                "lost": lost_line(run) or "",
                "exit_code": printable(run.get("exit_code"), one_line=True),
            }
        )
    table = []
    for req_id in sorted(rows, key=natural_key):
        cells = []
        for mine, folder in zip(verdicts, folders, strict=True):
            verdict, known = mine.get(req_id, ("", False))
            css = verdict.lower().replace(" ", "-") if verdict else "absent"
            cells.append(
                {
                    "verdict": verdict,
                    "known": known,
                    "label": f"{verdict} known" if known else verdict,
                    "class": f"{css} known-failure" if known else css,
                    "href": f"{folder}/report.html#{req_id}",
                }
            )
        shown = {c["label"] for c in cells if c["verdict"] not in ("", NOT_RUN)}
        differs = len(shown) > 1
        if only_differing and not differs:
            continue
        table.append(rows[req_id] | {"cells": cells, "differs": differs})
    what = "requirements the runs disagree on" if only_differing else "requirements"
    return {
        "columns": columns,
        "rows": table,
        "only_differing": only_differing,
        "title": f"conformance matrix: {len(runs)} runs, {len(table)} {what}",
    }


def render_matrix(
    runs: Sequence[Mapping[str, Any]], folders: Sequence[str], *, only_differing: bool = False
) -> str:
    env: jinja2.Environment = _environment()
    policy = Markup("default-src 'none'; style-src 'unsafe-inline'")
    view = matrix_view(runs, folders, only_differing=only_differing)
    return env.get_template(MATRIX_TEMPLATE).render(m=view, policy=policy)
