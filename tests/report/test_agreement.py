"""Every report of one real run agrees: terminal, HTML, JUnit (read with junitparser) and Allure.

The run is ``conformance run`` against the faulty Cursus broker written in a test
(``tests/support/faulty_cursus.py``, none of the tool's code), told to stop serving after
the first DELETE: its gaps give FAIL and UNSUPPORTED cases, a broken SHOULD gives WARN,
the cases after it stopped end in ERROR (the target stopped answering), the rest pass.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from junitparser import Error, Failure, JUnitXml, Skipped

from conformance.report import SCHEMA_FILE, VERDICTS
from tests.support.cli import conformance
from tests.support.faulty_process import faulty

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path_factory.mktemp("agreement")
    with faulty("--stop-on", "DELETE") as broker:
        done = conformance(
            out,
            "run",
            "--target",
            f"127.0.0.1:{broker.port}",
            "--target-name",
            "faulty-cursus 0.1",
            "--timeout",
            "0.5",
            "--reports",
            str(out / "reports"),
        )
    return done, out / "reports"


def _results(reports: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((reports / "results.json").read_text())
    return data


def test_the_run_has_every_verdict_and_follows_the_schema(
    run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    done, reports = run
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    results = _results(reports)
    jsonschema.validate(results, json.loads(SCHEMA_FILE.read_text()))
    counted = Counter(c["verdict"] for c in results["cases"])
    assert all(counted[v] > 0 for v in VERDICTS), counted
    assert results["counts"] == {v: counted[v] for v in VERDICTS}
    assert results["target_name"] == "faulty-cursus 0.1"
    assert all(r["verdict"] for r in results["requirements"])


def test_terminal_html_junit_and_allure_agree_on_the_counts(
    run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    done, reports = run
    counts = _results(reports)["counts"]
    total = sum(counts.values())
    # terminal: the one summary line
    shown = f"{total} cases, " + ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts[v])
    summary = [line for line in done.stdout.splitlines() if line.startswith("FAILED ")]
    assert len(summary) == 1 and shown in summary[0], done.stdout[-1500:]
    # HTML: the badges and the case sections
    page = (reports / "report.html").read_text()
    for verdict in VERDICTS:
        assert f">{counts[verdict]} {verdict}</a>" in page
        assert page.count(f'data-verdict="{verdict}" data-level=') == counts[verdict]
    # JUnit: FAIL fails, ERROR errs, UNSUPPORTED is skipped, a WARN is a skip of type WARN
    (suite,) = list(JUnitXml.fromfile(str(reports / "junit.xml")))
    outcomes: Counter[str] = Counter()
    for tc in suite:
        result = tc.result
        kind = type(result[0]).__name__ if result else "passed"
        if isinstance(result[0] if result else None, Skipped) and result[0].type == "WARN":
            kind = "warn"
        outcomes[kind] += 1
    assert suite.name == "cursus faulty-cursus 0.1"
    assert outcomes == Counter(
        {
            "passed": counts["PASS"],
            Failure.__name__: counts["FAIL"],
            "warn": counts["WARN"],
            Skipped.__name__: counts["UNSUPPORTED"],
            Error.__name__: counts["ERROR"],
        }
    )
    assert (suite.tests, suite.failures, suite.errors) == (total, counts["FAIL"], counts["ERROR"])
    assert suite.skipped == counts["UNSUPPORTED"] + counts["WARN"]
    # Allure: statuses and the verdict tag
    allure = [json.loads(f.read_text()) for f in (reports / "allure-results").glob("*-result.json")]
    tags = Counter(
        next(label["value"] for label in r["labels"] if label["name"] == "tag") for r in allure
    )
    assert tags == Counter({v: n for v, n in counts.items() if n})
    statuses = Counter(r["status"] for r in allure)
    assert statuses == Counter(
        {
            "passed": counts["PASS"] + counts["WARN"],
            "failed": counts["FAIL"],
            "skipped": counts["UNSUPPORTED"],
            "broken": counts["ERROR"],
        }
    )


def test_junit_and_allure_names_carry_the_case_ids(
    run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    _, reports = run
    ids = [c["case_id"] for c in _results(reports)["cases"]]
    (suite,) = list(JUnitXml.fromfile(str(reports / "junit.xml")))
    assert [tc.name.split(": ", 1)[0] for tc in suite] == ids
    allure = [json.loads(f.read_text()) for f in (reports / "allure-results").glob("*-result.json")]
    assert sorted(r["name"].split(": ", 1)[0] for r in allure) == sorted(ids)


def test_the_terminal_shows_a_block_per_problem_headed_by_case_and_requirement(
    run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    done, reports = run
    results = _results(reports)
    failing = [c for c in results["cases"] if c["verdict"] == "FAIL"]
    first = failing[0]
    head = f"FAIL {first['case_id']}  {first['violated']} (MUST)"
    assert any(line.startswith(head) for line in done.stdout.splitlines()), done.stdout[:2000]
    assert "  again  conformance run --protocol cursus --revision doc --target 127.0.0.1:" in (
        done.stdout
    )
    assert "--target-name 'faulty-cursus 0.1'" in done.stdout
    assert not re.search(r"^(=+|_+) ", done.stdout, re.M), "pytest's own output leaked"
    assert "Traceback" not in done.stdout + done.stderr
