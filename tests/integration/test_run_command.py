"""``conformance run`` end to end, as a broker author runs it in CI.

Each test runs the installed command in a subprocess and judges it by its exit code,
its output and ``reports/results.json``: against the embedded broker, through a plain
TCP relay, against a target that never answers, against a closed port.  That each spec
quirk fails exactly its requirements is checked for every protocol in
tests/protocols/test_quirk_exactness.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support import broker, net


def run(
    tmp_path: Path, *args: str, timeout: float = 240
) -> tuple[subprocess.CompletedProcess[str], float]:
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
    junit = (reports / "junit.xml").read_text()
    assert '<property name="case_id" value="cursus/framing/1"' in junit
    labels = [
        {(lab["name"], lab["value"]) for lab in json.loads(f.read_text())["labels"]}
        for f in (reports / "allure-results").glob("*-result.json")
    ]
    assert len(labels) == len(data["cases"])
    assert all({"protocol", "area", "requirement", "level"} <= {k for k, _ in ls} for ls in labels)
    assert any(("requirement", "CUR-FRAME-2") in ls for ls in labels)


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


def test_dry_run_lists_selected_cases_without_a_target(tmp_path: Path) -> None:
    proc, _ = run(tmp_path, "--dry-run", "cursus/framing", "CUR-ACK-4", timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("cursus/")]
    assert lines and all(ln.startswith(("cursus/framing/", "cursus/ack/5")) for ln in lines)
    assert any("CUR-ACK-4" in ln for ln in lines)
    assert not (tmp_path / "reports" / "results.json").exists()


def test_selection_runs_only_the_selected_cases(tmp_path: Path) -> None:
    proc, _ = run(tmp_path, "CUR-GROUP-4", "cursus/framing/1")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert set(verdicts(results(tmp_path))) == {"cursus/groups/4", "cursus/framing/1"}


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--revision", "nosuch"], "unknown revision"),
        (["--jobs", "0"], "at least 1"),
        (["--timeout", "0"], "positive"),
        (["--target", "127.0.0.1:1", "--quirk", "consume-from-zero"], "embedded broker only"),
        (["cursus/no-such-area"], "no case was selected"),
    ],
)
def test_usage_errors_exit_2_with_one_line(tmp_path: Path, args: list[str], says: str) -> None:
    proc, _ = run(tmp_path, *args, timeout=120)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert says in proc.stderr and "Traceback" not in proc.stderr


def test_skip_leaves_out_what_it_selects_in_a_run_and_a_dry_run(tmp_path: Path) -> None:
    proc, _ = run(tmp_path, "cursus/framing", "--skip", "cursus/framing/1", "--skip", "CUR-FRAME-2")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    ran = set(verdicts(results(tmp_path)))
    assert ran and "cursus/framing/1" not in ran
    assert not any("CUR-FRAME-2" in c["requirements"] for c in results(tmp_path)["cases"])
    assert results(tmp_path)["skipped"] == ["cursus/framing/1", "CUR-FRAME-2"]
    listed, _ = run(tmp_path, "--dry-run", "cursus/framing", "--skip", "cursus/framing/1")
    lines = [ln.split()[0] for ln in listed.stdout.splitlines() if ln.startswith("cursus/")]
    assert lines and "cursus/framing/1" not in lines and "cursus/framing/2" in lines


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["serve", "--port", "70000"], "70000 is not a port number (0 to 65535)"),
        (["serve", "--port", "-1"], "-1 is not a port number (0 to 65535)"),
        (["serve", "--port", "http"], "'http' is not a port number"),
        (["serve", "--all", "--port-base", "99999"], "99999 is not a port number"),
        (
            ["run", "--all", "--target", "kafka=127.0.0.1:1"],
            "no suite ran a case: kafka: cannot reach target 127.0.0.1:1",
        ),
    ],
)
def test_bad_ports_and_unreachable_targets_are_one_line(
    tmp_path: Path, argv: list[str], says: str
) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "conformance", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert says in last and "Traceback" not in proc.stderr, proc.stderr


def test_serve_on_a_port_in_use_exits_2_with_one_line(tmp_path: Path) -> None:
    with broker.running() as b:
        proc = subprocess.run(
            [sys.executable, "-m", "conformance", "serve", "--port", str(b.port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 2
    assert f"{b.port}" in proc.stderr and "Traceback" not in proc.stderr


def test_a_baseline_keeps_ci_green_on_known_failures_and_catches_changes(tmp_path: Path) -> None:
    """--write-baseline on a run with a known FAIL; --baseline then exits 0 while exactly it
    fails again (JUnit and Allure show it as an expected failure), 1 once it passes (the
    baseline must be updated) and 1 on a failure it does not list."""
    quirk, base = "ack-last-offset-off-by-one", str(tmp_path / "base.yaml")
    proc, _ = run(tmp_path, "--quirk", quirk, "--write-baseline", base)
    assert proc.returncode == 1 and "1 known failure(s)" in proc.stdout
    proc, _ = run(tmp_path, "--quirk", quirk, "--baseline", base)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "failed as expected" in proc.stdout and "known failures (baseline)" in proc.stdout
    data = results(tmp_path)
    assert [c["case_id"] for c in data["cases"] if c.get("expected")] == ["cursus/ack/5"]
    junit = (tmp_path / "reports" / "junit.xml").read_text()
    assert '<skipped type="xfail" message="known failure (FAIL, baseline): ' in junit
    assert "known failure (baseline)" in (tmp_path / "reports" / "report.html").read_text()
    proc, _ = run(tmp_path, "--baseline", base)
    assert proc.returncode == 1 and "no longer failing: cursus/ack/5" in proc.stdout
    proc, _ = run(tmp_path, "--quirk", "consume-from-zero", "--baseline", base)
    assert proc.returncode == 1 and "new failures" in proc.stdout
    proc, _ = run(tmp_path, "--baseline", str(tmp_path / "missing.yaml"), timeout=60)
    assert proc.returncode == 2 and "cannot read baseline" in proc.stderr
    assert "Traceback" not in proc.stderr
