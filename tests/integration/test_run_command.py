"""``conformance run`` end to end, as a broker author runs it in CI.

Each test runs the installed command in a subprocess and judges it by its exit code,
its output and ``reports/results.json``: against the embedded broker, through a plain
TCP relay, against a target that never answers, against a closed port, and against
every spec quirk of the reference broker (exactly the declared requirements fail).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conformance.protocols.cursus.quirks import QUIRKS
from tests.support import broker, net

SPEC_QUIRKS = sorted(q.name for q in QUIRKS.values() if q.kind == "spec")


def run(tmp_path: Path, *args: str, timeout: float = 240) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "conformance", "run", "--reports", str(tmp_path / "reports"), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=tmp_path,
    )
    return proc, time.monotonic() - start


def results(tmp_path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((tmp_path / "reports" / "results.json").read_text())
    return data


def verdicts(data: dict[str, Any]) -> dict[str, str]:
    return {c["case_id"]: c["verdict"] for c in data["cases"]}


def violated(data: dict[str, Any]) -> set[str]:
    """Requirement IDs that some case reports as broken (FAIL or WARN)."""
    return {c["violated"] for c in data["cases"] if c["verdict"] in ("FAIL", "WARN") and c.get("violated")}


def test_clean_embedded_broker_passes_every_case(tmp_path: Path) -> None:
    proc, _ = run(tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = results(tmp_path)
    bad = {k: v for k, v in verdicts(data).items() if v not in ("PASS",)}
    assert not bad, bad
    assert len(data["cases"]) >= 40
    reports = tmp_path / "reports"
    for name in ("junit.xml", "report.html", "results.json"):
        assert (reports / name).stat().st_size > 0, name
    assert any((reports / "allure-results").iterdir())


def test_suite_passes_through_a_plain_tcp_relay(tmp_path: Path) -> None:
    with broker.running("--compression", "gzip") as b, net.relay(b.host, b.port) as (host, port):
        proc, _ = run(tmp_path, "--target", f"{host}:{port}", "--compression", "gzip")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert set(verdicts(results(tmp_path)).values()) == {"PASS"}


def test_unresponsive_target_ends_the_run_quickly_with_exit_1(tmp_path: Path) -> None:
    with net.silent_server() as (host, port):
        proc, elapsed = run(tmp_path, "--target", f"{host}:{port}", timeout=60)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert elapsed < 30, f"took {elapsed:.1f}s"
    assert "unresponsive" in (proc.stdout + proc.stderr).lower()
    assert results(tmp_path)["target_unresponsive"] is True


def test_closed_port_is_a_usage_error_without_traceback(tmp_path: Path) -> None:
    port = net.closed_port()
    proc, _ = run(tmp_path, "--target", f"127.0.0.1:{port}", timeout=60)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert f"127.0.0.1:{port}" in proc.stderr


def test_bad_target_form_is_a_usage_error(tmp_path: Path) -> None:
    proc, _ = run(tmp_path, "--target", "nonsense", timeout=60)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "HOST:PORT" in proc.stderr


def test_unknown_quirk_is_a_usage_error(tmp_path: Path) -> None:
    proc, _ = run(tmp_path, "--quirk", "no-such-quirk", timeout=60)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "no-such-quirk" in proc.stderr


@pytest.mark.parametrize("quirk", SPEC_QUIRKS)
def test_each_spec_quirk_fails_exactly_its_requirements(tmp_path: Path, quirk: str) -> None:
    proc, _ = run(tmp_path, "--quirk", quirk)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = results(tmp_path)
    assert violated(data) == set(QUIRKS[quirk].breaks)
    for req in QUIRKS[quirk].breaks:
        assert req in proc.stdout, f"{req} not named in the output"
