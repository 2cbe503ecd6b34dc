"""Plots of a run for the HTML report, as geometry for inline SVG (no image, no script).

Two plots where people would rather look than read: the verdicts per area (one stacked
bar per area) and the slowest cases (one bar each).  Each function returns plain view
data -- rectangles and labels in SVG user units -- that the template draws.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from conformance.report import VERDICTS, natural_key, printable, verdict_of

#: Width of a plot's bar area and of its label column, in SVG user units (px).
BAR_WIDTH = 560
LABEL_WIDTH = 200
ROW_HEIGHT = 20
#: Cases shown in the durations plot.
SLOWEST = 12


def verdicts_per_area(listed: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One row per area: its cases' verdicts as stacked rectangles, widest area = full bar."""
    per_area: dict[str, dict[str, int]] = {}
    for case in listed:
        area = printable(case.get("area") or "?", one_line=True)
        counts = per_area.setdefault(area, dict.fromkeys(VERDICTS, 0))
        counts[verdict_of(case)] += 1
    most = max((sum(c.values()) for c in per_area.values()), default=0) or 1
    rows = []
    for index, area in enumerate(sorted(per_area, key=natural_key)):
        x = float(LABEL_WIDTH)
        bars = []
        for verdict in VERDICTS:
            n = per_area[area][verdict]
            if n:
                width = BAR_WIDTH * n / most
                bars.append(
                    {
                        "x": round(x, 1),
                        "w": round(width, 1),
                        "n": n,
                        "verdict": verdict,
                        "class": verdict.lower(),
                    }
                )
                x += width
        total = sum(per_area[area].values())
        rows.append(
            {
                "y": index * ROW_HEIGHT,
                "label": area,
                "bars": bars,
                "total": total,
                "end": round(x + 6, 1),
            }
        )
    return {
        "rows": rows,
        "height": len(rows) * ROW_HEIGHT + 4,
        "width": LABEL_WIDTH + BAR_WIDTH + 60,
    }


def slowest_cases(
    listed: Sequence[Mapping[str, Any]], anchor_of: Mapping[str, str]
) -> dict[str, Any]:
    """The :data:`SLOWEST` longest cases as bars, longest first, each linked to its case."""
    timed = []
    for case in listed:
        value = case.get("duration_s")
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            timed.append((float(value), case))
    timed.sort(key=lambda pair: -pair[0])
    top = timed[:SLOWEST]
    longest = top[0][0] if top and top[0][0] > 0 else 1.0
    rows = []
    for index, (seconds, case) in enumerate(top):
        cid = str(case.get("case_id") or "?")
        width = max(BAR_WIDTH * seconds / longest, 1.0)
        rows.append(
            {
                "y": index * ROW_HEIGHT,
                "label": printable(cid, one_line=True, limit=30),
                "anchor": anchor_of.get(cid, ""),
                "w": round(width, 1),
                "class": verdict_of(case).lower(),
                "text": f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s",
                "end": round(LABEL_WIDTH + width + 6, 1),
            }
        )
    return {
        "rows": rows,
        "height": len(rows) * ROW_HEIGHT + 4,
        "width": LABEL_WIDTH + BAR_WIDTH + 80,
        "label_width": LABEL_WIDTH,
    }
