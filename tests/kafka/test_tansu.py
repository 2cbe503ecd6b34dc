"""The suite against a real, independent Kafka-compatible broker: Tansu 0.6 (Rust), with
the known-failure baseline committed in tests/baselines/tansu.yaml.  The run exits 0 only
if Tansu fails exactly the cases the baseline lists and passes every other one, so a
change in Tansu, or in a case, shows up here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support import tansu_broker

BASELINE = Path(__file__).resolve().parent.parent / "baselines" / "tansu.yaml"


@pytest.mark.xdist_group("tansu")
@pytest.mark.timeout(660)  # the run takes about 230 s: 300 s (the default) is too tight
def test_the_suite_against_tansu_matches_its_baseline(tmp_path: Path) -> None:
    listed = yaml.safe_load(BASELINE.read_text())["cases"]
    failing = sorted(c for c, v in listed.items() if isinstance(v, dict) and v["verdict"] == "FAIL")
    with tansu_broker.running(tmp_path) as (host, port):
        proc = subprocess.run(
            [sys.executable, "-m", "conformance", "run", "--protocol", "kafka", "--revision",
             "apache", "--target", f"{host}:{port}", "--target-name", "tansu 0.6.0",
             "--baseline", str(BASELINE), "-j", "3", "-q", "--reports", str(tmp_path / "reports")],
            capture_output=True, text=True, timeout=600, cwd=tmp_path,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    results = json.loads((tmp_path / "reports" / "results.json").read_text())
    section = results["baseline"]
    assert sorted(section["expected"]) == failing
    assert section["new"] == section["fixed"] == section["stale"] == []
    assert "failed as expected" in proc.stdout
    assert proc.stdout.splitlines()[-1].startswith(
        f"PASSED kafka apache against tansu 0.6.0 ({host}:{port}): {len(listed)} cases, "
    )
