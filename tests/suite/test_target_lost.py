"""A target that dies in the middle of a run gives ERRORs, never FAILs.

The broker under test is killed (SIGKILL, as a crash would) while ``conformance run``
talks to it.  A close or a silence that follows is not the target's answer: the suite
probes it on a fresh connection, finds it gone, and makes that case and every later one
an ERROR marked ``lost``; the results say when the target was lost and after which case.
Two targets: our reference broker (which passes every case, so no FAIL may appear at all)
and Tansu, a real Kafka-compatible broker, with its known-failure baseline (no new failure
may appear: only the cases the baseline lists may FAIL).
"""

from __future__ import annotations

import html
import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.report import lost_line
from tests.support import broker as reference
from tests.support import tansu_broker

TANSU_BASELINE = Path(__file__).resolve().parent.parent / "baselines" / "tansu.yaml"


def _run_and_kill(
    address: str, kill: Any, after_s: float, reports: Path, *extra: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """``conformance run`` against ``address``; ``kill()`` is called ``after_s`` into it."""
    cmd = [sys.executable, "-m", "conformance", "run", "--protocol", "kafka", "--revision",
           "apache", "--target", address, "--timeout", "2", "--reports", str(reports),
           *extra]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(after_s)
        assert proc.poll() is None, "the run ended before the target was killed"
        kill()
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
    done = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    return done, json.loads((reports / "results.json").read_text())


def _assert_loss_reported(
    run: subprocess.CompletedProcess[str], results: dict[str, Any], reports: Path
) -> None:
    """The loss is in results.json, and every format says it the same way."""
    line = lost_line(results)
    assert line is not None and line.startswith("target lost at +")
    after = results["target_lost"]["after"]
    assert (f"after case {after}" if after else "before any case ended") in line
    assert line in " ".join(run.stdout.split()), run.stdout[-3000:]
    junit = ET.parse(reports / "junit.xml").getroot()
    suite_props = {p.get("name"): p.get("value") for p in junit.iter("property")}
    assert suite_props.get("target_lost") == line
    assert any(e.get("type") == "target-lost" for e in junit.iter("error"))
    assert line in html.unescape((reports / "report.html").read_text())
    env = (reports / "allure-results" / "environment.properties").read_text()
    assert "target_lost" in env
    lost = results["target_lost"]
    assert lost is not None and results["target_unresponsive"] is True
    assert lost["t"] > 0 and "unresponsive" in lost["reason"]
    by_id = {c["case_id"]: c for c in results["cases"]}
    assert by_id[lost["case"]]["lost"] is True
    assert lost["after"] is None or by_id[lost["after"]].get("lost") is not True
    lost_cases = [c for c in results["cases"] if c.get("lost")]
    assert lost_cases and all(c["verdict"] == "ERROR" for c in lost_cases)
    assert results["counts"]["PASS"] > 0, "the target was killed before any case ran"
    assert run.returncode == 1


@pytest.mark.xdist_group("target_lost")
def test_the_reference_broker_killed_mid_run_gives_errors_not_fails(tmp_path: Path) -> None:
    b = reference.start(protocol="kafka")
    try:
        run, results = _run_and_kill(b.address, b.kill, 4.0, tmp_path / "r")
    finally:
        b.stop()
    fails = [c["case_id"] for c in results["cases"] if c["verdict"] in ("FAIL", "WARN")]
    assert fails == [], f"a killed target got FAILs the reference broker never gets: {fails}"
    _assert_loss_reported(run, results, tmp_path / "r")


@pytest.mark.xdist_group("tansu")
def test_tansu_killed_mid_run_gives_no_new_failure_under_its_baseline(tmp_path: Path) -> None:
    listed = yaml.safe_load(TANSU_BASELINE.read_text())["cases"]
    known = {c for c, v in listed.items() if isinstance(v, dict) and v["verdict"] == "FAIL"}
    with tansu_broker.started(tmp_path) as (host, port, proc):

        def kill() -> None:
            os.kill(proc.pid, signal.SIGKILL)

        run, results = _run_and_kill(
            f"{host}:{port}", kill, 20.0, tmp_path / "r", "--baseline", str(TANSU_BASELINE),
            "-j", "3",
        )  # fmt: skip
    fails = {c["case_id"] for c in results["cases"] if c["verdict"] == "FAIL"}
    assert fails <= known, f"FAILs Tansu does not have in a full run: {sorted(fails - known)}"
    section = results["baseline"]
    assert section["new"] == [] and section["not_judged"]
    _assert_loss_reported(run, results, tmp_path / "r")
