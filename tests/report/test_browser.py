"""The HTML report of a failing run, as a broker owner first sees it: headless Chromium at
1400x900 (see ``tests/support/browser.py``).

The run is real: the embedded reference broker with the quirk that breaks CUR-ACK-4
(last_offset off by one), so exactly one case fails.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import measure, png_size, screenshot
from tests.support.cli import conformance

pytestmark = pytest.mark.slow

WINDOW = (1400, 900)


@pytest.fixture(scope="module")
def failing(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("browser")
    done: subprocess.CompletedProcess[str] = conformance(
        out, "run", "--quirk", "ack-last-offset-off-by-one", "--reports", str(out / "reports")
    )
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    results = json.loads((out / "reports" / "results.json").read_text())
    (case,) = [c for c in results["cases"] if c["verdict"] == "FAIL"]
    return out / "reports" / "report.html", case


def test_the_failures_section_is_on_the_first_screen_with_id_requirement_and_reason(
    failing: tuple[Path, dict[str, Any]],
) -> None:
    page, case = failing
    seen = measure(page, ["#failures", "#failures .group .reason", "#failures .pair"], size=WINDOW)
    section, reason = seen["found"]["#failures"], seen["found"]["#failures .group .reason"]
    pair = seen["found"]["#failures .pair"]
    assert pair is not None and pair["pageTop"] < WINDOW[1], "the evidence starts on screen 1"
    assert 0 <= section["pageTop"] < WINDOW[1], section
    assert reason["pageBottom"] <= WINDOW[1], "the first reason is below the first 900 px"
    assert case["case_id"] in section["text"] and case["violated"] == "CUR-ACK-4"
    assert "CUR-ACK-4" in section["text"]
    assert "last_offset 3, expected 2" in reason["text"]
    shot = screenshot(page, page.with_name("first-screen.png"), size=WINDOW)
    assert png_size(shot) == WINDOW


def test_a_case_id_anchor_opens_and_shows_that_case(failing: tuple[Path, dict[str, Any]]) -> None:
    page, _ = failing
    passing = "cursus/framing/1"  # folded when the page opens without an anchor
    plain = measure(page, [f"#{passing}"], size=WINDOW)["found"][f"#{passing}"]
    assert plain is not None and not plain["open"]
    seen = measure(page, [f"#{passing}"], fragment=passing, size=WINDOW)
    found = seen["found"][f"#{passing}"]
    assert found["open"] and not found["hidden"]
    assert seen["scrollY"] > WINDOW[1] and -1 <= found["top"] < seen["innerHeight"] / 2, seen


def test_a_requirement_anchor_lands_on_its_row(failing: tuple[Path, dict[str, Any]]) -> None:
    page, _ = failing
    seen = measure(page, ["#CUR-ACK-4"], fragment="CUR-ACK-4", size=WINDOW)
    row = seen["found"]["#CUR-ACK-4"]
    assert row is not None and "last_offset is the highest offset" in row["text"]
    assert "FAIL" in row["text"] and "cursus/ack/5" in row["text"]
    assert seen["scrollY"] > 0 and -1 <= row["top"] < seen["innerHeight"], seen


def test_the_filters_run_under_the_pages_own_policy(failing: tuple[Path, dict[str, Any]]) -> None:
    page, _ = failing
    seen = measure(page, ["#filters", "#shown"], size=WINDOW)
    assert seen["found"]["#filters"]["hidden"] is False  # the page's script showed the form
    assert seen["found"]["#shown"]["text"] == "80 of 80 cases shown"
