"""``conformance run --protocol kafka`` end to end: the reference broker passes in both
revisions (the embedded broker starts with the run's revision).  That each spec quirk
fails exactly the requirements it declares is checked for every protocol in
tests/protocols/test_quirk_exactness.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def run(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    reports = tmp_path / "reports"
    proc = subprocess.run(
        [sys.executable, "-m", "conformance", "run", "--protocol", "kafka", "--reports",
         str(reports), *args],
        capture_output=True, text=True, timeout=400, cwd=tmp_path,
    )  # fmt: skip
    path = reports / "results.json"
    data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    return proc, data


@pytest.mark.parametrize("revision", ["doc", "apache"])
def test_the_reference_broker_passes_every_case(tmp_path: Path, revision: str) -> None:
    # with credentials the embedded broker requires SASL and every case runs (SASL cases too)
    sasl = ("--sasl-username", "conformance", "--sasl-password", "run-secret")
    proc, data = run(tmp_path, "--revision", revision, *sasl)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert data["revision"] == revision
    bad = {c["case_id"]: c["message"] for c in data["cases"] if c["verdict"] != "PASS"}
    assert not bad, bad
    ids = [c["case_id"] for c in data["cases"]]
    assert len(ids) >= 60
    assert any("@v" in i for i in ids), "no case ran at several versions"
