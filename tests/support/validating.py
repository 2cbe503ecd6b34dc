"""``conformance serve --validate`` for a test: start it, let a client talk, stop it, read
its report (results.json), its exit code and what it printed."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.broker import Broker, start


@dataclass
class Validated:
    """What a validating broker wrote when it stopped."""

    broker: Broker
    reports: Path
    code: int | None = None
    stdout: str = ""
    stderr: str = ""
    results: dict[str, Any] = field(default_factory=dict)

    @property
    def address(self) -> str:
        return self.broker.address

    def case(self, case_id: str) -> dict[str, Any]:
        return next(c for c in self.results["cases"] if c["case_id"] == case_id)

    def broken(self) -> set[str]:
        """Every client requirement some violation broke (the requirement cases that are
        not PASS or not exercised)."""
        return {
            c["violated"] or c["unsupported"]
            for c in self.results["cases"]
            if "/client/" in c["case_id"]
            and c["case_id"].rsplit("/", 1)[-1] == (c["violated"] or c["unsupported"])
        }

    def faults(self) -> list[dict[str, Any]]:
        return [c for c in self.results["cases"] if "/client/fault/" in c["case_id"]]


@contextmanager
def validating(protocol: str, reports: Path, *args: str) -> Iterator[Validated]:
    """A ``serve --protocol PROTOCOL --validate`` on a free port writing under ``reports``;
    on leaving, stopped with SIGTERM and its report read (``Validated.results``)."""
    broker = start("--validate", "--reports", str(reports), *args, protocol=protocol)
    seen = Validated(broker, reports)
    try:
        yield seen
    finally:
        if broker.proc.poll() is None:
            broker.proc.send_signal(signal.SIGTERM)
        try:
            out, err = broker.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            broker.kill()
            out, err = broker.proc.communicate(timeout=10)
        seen.code, seen.stdout, seen.stderr = broker.proc.returncode, out, err
        file = reports / "results.json"
        if file.exists():
            seen.results = json.loads(file.read_text(encoding="utf-8"))
