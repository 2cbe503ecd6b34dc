"""Allure results from the report model: names, statuses, labels, links, steps, files.

The single-file Allure report itself is built by ``conformance report --allure`` with
Allure 3 from npm: tested when ``npx`` is on PATH, and required to be there under
``CI=true`` (the README's test command installs nothing from npm; Node and npm come with
the machine, and ``npx`` fetches Allure on first use).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from conformance.report import lost_line
from conformance.report.allure_results import (
    AllureUnavailable,
    build_allure_report,
    exchanges,
    write_allure,
)
from tests.report.evidence_sample import LOST, with_evidence
from tests.support.cli import conformance
from tests.support.report_sample import sample_results


def _written(results: dict[str, Any], out: Path) -> dict[str, dict[str, Any]]:
    assert write_allure(results, out) == len(results["cases"])
    found = [json.loads(f.read_text()) for f in out.glob("*-result.json")]
    return {r["name"].split(": ", 1)[0]: r for r in found}


def _labels(result: dict[str, Any], name: str) -> list[str]:
    return [label["value"] for label in result["labels"] if label["name"] == name]


def test_one_result_per_case_named_by_case_id_with_its_status(tmp_path: Path) -> None:
    by_id = _written(sample_results(), tmp_path)
    assert {cid: r["status"] for cid, r in by_id.items()} == {
        "cursus/framing/1": "passed",
        "cursus/framing/3": "failed",
        "cursus/ack/4": "passed",
        "cursus/stream/2": "skipped",
        "cursus/group/1": "broken",
    }
    assert by_id["cursus/framing/3"]["name"] == "cursus/framing/3: title of cursus/framing/3"
    assert by_id["cursus/ack/4"]["statusDetails"]["message"].startswith("WARN: CUR-ACK-9: ")
    strict = _written(sample_results() | {"strict": True}, tmp_path / "strict")
    assert strict["cursus/ack/4"]["status"] == "failed"


def test_requirements_are_labels_and_links_the_violated_one_too(tmp_path: Path) -> None:
    result = _written(sample_results(), tmp_path)["cursus/ack/4"]
    assert _labels(result, "requirement") == ["CUR-ACK-4", "CUR-ACK-9"]
    assert _labels(result, "violated") == ["CUR-ACK-9"]
    assert _labels(result, "severity") == ["normal"]  # a SHOULD
    assert _labels(result, "subSuite") == ["embedded"] and _labels(result, "tag") == ["WARN"]
    urls = {link["name"]: link["url"] for link in result["links"]}
    assert urls["CUR-ACK-9"] == "../report.html#CUR-ACK-9"
    assert urls["cursus/ack/4"] == "../report.html#cursus/ack/4"
    failed = _written(sample_results(), tmp_path / "again")["cursus/framing/3"]
    assert _labels(failed, "severity") == ["critical"]


def test_one_step_per_exchange_with_every_kept_byte_attached(tmp_path: Path) -> None:
    results = sample_results()
    result = _written(results, tmp_path)["cursus/framing/3"]
    assert len(exchanges(results["cases"][1])) == 1  # one send, its reply and the close
    (step,) = result["steps"]
    assert step["name"] == "+0.0010s #1 send 6120 bytes oversize frame"
    assert step["status"] == "failed"  # the exchange the case failed on
    (attachment,) = step["attachments"]
    text = (tmp_path / attachment["source"]).read_text()
    assert "13f0  f0 f1 f2 f3 f4 f5 f6 f7 f8 f9 fa fb fc fd fe ff" in text
    assert "(cut: the log kept 5120 of 6120 bytes)" in text and "reply_code = 60" in text
    (passing_step,) = _written(results, tmp_path / "again")["cursus/framing/1"]["steps"]
    assert passing_step["name"] == "+0.0012s #1 send 8 bytes LIST"
    assert "attachments" not in passing_step  # a passing case: the summaries only


def test_a_known_failure_is_tagged_apart_from_unsupported_and_evidence_is_the_trace(
    tmp_path: Path,
) -> None:
    results = with_evidence()
    results["cases"][1]["expected"] = True
    written = _written(results, tmp_path)
    known = written["cursus/framing/3"]
    unsupported = written["cursus/stream/2"]
    tags = {label["value"] for label in known["labels"] if label["name"] == "tag"}
    assert tags == {"FAIL", "known-failure"} and known["statusDetails"]["known"] is True
    assert known["statusDetails"]["message"].startswith("known failure (FAIL, baseline)")
    assert "  > reply_code = 60  [0x00..0x01)" in known["statusDetails"]["trace"]
    assert {label["value"] for label in unsupported["labels"] if label["name"] == "tag"} == {
        "UNSUPPORTED"
    }
    assert unsupported["statusDetails"]["message"].startswith("UNSUPPORTED: ")


def test_a_lost_target_is_in_the_environment_and_the_lost_cases(tmp_path: Path) -> None:
    results = with_evidence() | {"target_lost": LOST, "target_unresponsive": True}
    results["cases"][4]["lost"] = True
    written = _written(results, tmp_path)
    env = (tmp_path / "environment.properties").read_text().splitlines()
    said = lost_line(results)
    assert f"target_lost={said}" in env
    message = written["cursus/group/1"]["statusDetails"]["message"]
    assert message.startswith(f"{said}; this case could not run: ")


def test_environment_categories_and_a_clean_folder(tmp_path: Path) -> None:
    stale = tmp_path / "old-result.json"
    tmp_path.mkdir(exist_ok=True)
    stale.write_text("{}")
    _written(sample_results(), tmp_path)
    assert not stale.exists()
    env = (tmp_path / "environment.properties").read_text().splitlines()
    assert "protocol=cursus" in env and "target_name=embedded" in env
    categories = json.loads((tmp_path / "categories.json").read_text())
    assert {"Requirement violations (MUST)", "Could not run (ERROR)"} <= {
        c["name"] for c in categories
    }


def test_history_ids_follow_the_target_label_not_the_run(tmp_path: Path) -> None:
    first = _written(sample_results(), tmp_path / "a")
    later = _written(sample_results() | {"started": "2026-11-30T10:00:00Z"}, tmp_path / "b")
    other = _written(sample_results() | {"target_name": "theirs"}, tmp_path / "c")
    cid = "cursus/framing/3"
    assert first[cid]["historyId"] == later[cid]["historyId"] != other[cid]["historyId"]


def test_conformance_report_builds_a_single_file_allure_report(tmp_path: Path) -> None:
    if shutil.which("npx") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("npx (Node.js and npm) is missing: CI must build the Allure report")
        pytest.skip("npx (Node.js and npm) is not installed")
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_text(json.dumps(sample_results()))
    done = conformance(tmp_path, "report", str(run), "--out", str(tmp_path / "out"), "--allure")
    assert done.returncode == 0, done.stdout + done.stderr
    page = tmp_path / "out" / "allure-report" / "index.html"
    assert page.stat().st_size > 100_000 and "the Allure report" in done.stdout
    assert not (tmp_path / "out" / "allure-report" / "data").exists()  # one file, no folder


def test_without_node_the_allure_build_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_allure(sample_results(), tmp_path / "results")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(AllureUnavailable, match=r"install Node\.js 18 or newer with npm"):
        build_allure_report(tmp_path / "results", tmp_path / "report")
    assert not (tmp_path / "report" / "index.html").exists()
