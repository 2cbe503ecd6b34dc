"""Several runs side by side: a matrix of requirements x targets, like Autobahn's.

Each column is one saved run (its target's label, with its quirks and revision when the
runs differ in them), each row one requirement of any of the runs, each cell that run's
verdict for the requirement, linked to the requirement in that run's own HTML report.
A requirement a run's protocol or revision does not have is an empty cell.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import jinja2
from markupsafe import Markup

from conformance.report import NOT_RUN, count_verdicts, natural_key, printable, requirement_rollup
from conformance.report.html import ROLLUPS, _environment, text_html

MATRIX_TEMPLATE = "matrix.html.j2"
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")


def labels(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """A distinct column label per run: the target's label, then what tells runs of the
    same target apart (protocol, revision, quirks), then a number if still equal."""

    def part(run: Mapping[str, Any], key: str) -> str:
        value = run.get(key)
        return ", ".join(map(str, value)) if isinstance(value, list) else str(value or "")

    out = []
    for run in runs:
        words = [str(run.get("target_name") or run.get("target") or "?")]
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


def matrix_view(runs: Sequence[Mapping[str, Any]], folders: Sequence[str]) -> dict[str, Any]:
    names = labels(runs)
    verdicts: list[dict[str, str]] = []
    rows: dict[str, dict[str, Any]] = {}
    for run in runs:
        by_id = {str(c.get("case_id")): c for c in run.get("cases") or [] if isinstance(c, dict)}
        mine = {}
        for req in run.get("requirements") or []:
            if not isinstance(req, dict):
                continue
            req_id = str(req.get("id"))
            verdict = req.get("verdict")
            mine[req_id] = verdict if verdict in ROLLUPS else requirement_rollup(req, by_id)[0]
            rows.setdefault(
                req_id,
                {
                    "id": printable(req_id, one_line=True),
                    "level": printable(req.get("level"), one_line=True),
                    "text": text_html(req.get("text")),
                },
            )
        verdicts.append(mine)
    columns = []
    for run, name, folder in zip(runs, names, folders, strict=True):
        counted = count_verdicts(run)
        columns.append(
            {
                "name": name,
                "href": f"{folder}/report.html",
                "what": printable(f"{run.get('protocol')} {run.get('revision')}", one_line=True),
                "counts": ", ".join(f"{n} {v}" for v, n in counted.items() if n),
                "exit_code": printable(run.get("exit_code"), one_line=True),
            }
        )
    table = []
    for req_id in sorted(rows, key=natural_key):
        cells = []
        for mine, folder in zip(verdicts, folders, strict=True):
            verdict = mine.get(req_id)
            cells.append(
                {
                    "verdict": verdict or "",
                    "class": verdict.lower().replace(" ", "-") if verdict else "absent",
                    "href": f"{folder}/report.html#{req_id}",
                }
            )
        differs = len({c["verdict"] for c in cells if c["verdict"] not in ("", NOT_RUN)}) > 1
        table.append(rows[req_id] | {"cells": cells, "differs": differs})
    return {
        "columns": columns,
        "rows": table,
        "title": f"conformance matrix: {len(runs)} runs, {len(table)} requirements",
    }


def render_matrix(runs: Sequence[Mapping[str, Any]], folders: Sequence[str]) -> str:
    env: jinja2.Environment = _environment()
    policy = Markup("default-src 'none'; style-src 'unsafe-inline'")
    return env.get_template(MATRIX_TEMPLATE).render(m=matrix_view(runs, folders), policy=policy)
