"""Each spec quirk of each registered protocol fails exactly the requirements it declares.

``conformance run --protocol P --quirk Q`` runs the whole suite against the embedded
reference broker with quirk Q, in the revision every requirement the protocol's spec
quirks break applies to (Kafka: apache; tests/protocols/registered.py), with ``--strict``
when Q breaks SHOULDs only; it must exit 1,
no case may end in ERROR, the requirements reported broken (FAIL or WARN) must be exactly
Q's ``breaks``, and the terminal output must name each of them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance import protocols
from conformance.spec import requirements
from tests.protocols.registered import NAMES, extra_protocols_registered, spec_quirk_revision

AREA_OPTIONS: dict[tuple[str, str], tuple[str, ...]] = {
    ("kafka", "sasl"): ("--sasl-username", "conformance", "--sasl-password", "quirk-secret"),
}
"""Run options the cases of a quirk's area need to run at all (protocol, area): the Kafka
SASL cases need credentials, which also make the embedded broker require SASL."""


def spec_quirks() -> list[Any]:
    with extra_protocols_registered():
        return [
            pytest.param(name, q.name, id=f"{name}-{q.name}")
            for name in NAMES
            for q in sorted(protocols.get(name).quirks.values(), key=lambda q: q.name)
            if q.kind == "spec"
        ]


@pytest.mark.parametrize(("name", "quirk"), spec_quirks())
def test_a_spec_quirk_fails_exactly_its_requirements(tmp_path: Path, name: str, quirk: str) -> None:
    plugin = protocols.get(name)
    revision = spec_quirk_revision(plugin, quirk)
    reports = tmp_path / "reports"
    args = ["--protocol", name, "--revision", revision, "--quirk", quirk, "--reports", str(reports)]
    if name == "kafka":  # its cases mostly wait (joins, timeouts) and share nothing: 3 at once
        args += ["-j", "3"]
    args += AREA_OPTIONS.get((name, plugin.quirks[quirk].area), ())
    levels = {requirements(name)[r].level for r in plugin.quirks[quirk].breaks}
    if levels == {"SHOULD"}:  # a quirk that breaks SHOULDs only fails a run under --strict
        args.append("--strict")
    proc = subprocess.run(
        [sys.executable, "-m", "conformance", "run", *args],
        capture_output=True,
        text=True,
        timeout=400,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    cases: list[dict[str, Any]] = json.loads((reports / "results.json").read_text())["cases"]
    errors = {c["case_id"]: c["message"] for c in cases if c["verdict"] == "ERROR"}
    assert not errors, errors
    broken = {c["violated"] for c in cases if c["verdict"] in ("FAIL", "WARN") and c["violated"]}
    failed = {c["case_id"]: c["message"] for c in cases if c["verdict"] in ("FAIL", "WARN")}
    assert broken == set(plugin.quirks[quirk].breaks), failed
    for req in plugin.quirks[quirk].breaks:
        assert req in proc.stdout, f"{req} not named in the output"
