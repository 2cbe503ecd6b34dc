"""The matrix of runs from hand-made results: known failures, differing rows, column labels."""

from __future__ import annotations

import re

from conformance.report.matrix import labels, matrix_view, render_matrix
from tests.report.evidence_sample import LOST, fetch_case, kafka_results


def _runs() -> list[dict[str, object]]:
    fresh = kafka_results([fetch_case(4)], started="2026-11-25T21:00:00Z")
    known = kafka_results(
        [fetch_case(4, expected=True)], started="2026-11-26T08:30:05Z", target_name="tansu 0.5"
    )
    clean = kafka_results(
        [fetch_case(4, verdict="PASS", violated=None)], target_name="ref", target_lost=LOST
    )
    for run in (fresh, known, clean):
        run["quirks"] = []
    return [fresh, known, clean]


def test_columns_are_labelled_by_target_and_run_time() -> None:
    assert labels(_runs()) == [
        "tansu @ 2026-11-25 21:00 UTC",
        "tansu 0.5 @ 2026-11-26 08:30 UTC",
        "ref @ 2026-11-23 10:00 UTC",
    ]


def test_a_known_failure_is_marked_known_and_the_row_differs() -> None:
    view = matrix_view(_runs(), ["a", "b", "c"])
    (row,) = [r for r in view["rows"] if r["id"] == "KAF-FETCH-3"]
    assert [c["label"] for c in row["cells"]] == ["FAIL", "FAIL known", "PASS"]
    assert [c["class"] for c in row["cells"]] == ["fail", "fail known-failure", "pass"]
    assert row["differs"]
    assert view["columns"][1]["known"] == "1 known failure(s) (baseline)"
    assert view["columns"][2]["lost"].startswith("target lost at +20.2 s, after case")


def test_only_differing_keeps_the_rows_the_runs_disagree_on() -> None:
    runs = _runs()
    every = matrix_view(runs, ["a", "b", "c"])
    only = matrix_view(runs, ["a", "b", "c"], only_differing=True)
    assert len(every["rows"]) > len(only["rows"]) and {r["id"] for r in only["rows"]} == {
        "KAF-FETCH-3"
    }
    page = render_matrix(runs, ["a", "b", "c"], only_differing=True)
    assert re.findall(r'<tr id="([^"]+)"', page) == ["KAF-FETCH-3"]
    assert "requirements the runs disagree on" in page
    toggle = render_matrix(runs, ["a", "b", "c"])
    assert 'id="only-differing"' in toggle and "tr:not(.differs) { display: none; }" in toggle
    assert '<a class="fail known-failure" href="b/report.html#KAF-FETCH-3">FAIL known</a>' in toggle
