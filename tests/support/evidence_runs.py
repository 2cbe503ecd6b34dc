"""The scaffolding of the evidence tests (tests/suite/test_<protocol>_evidence.py): runs of
``conformance run`` against the embedded reference broker, each with one spec quirk and
only the cases it breaks, read back from results.json once per quirk per worker (each run
starts a broker: keep them few), and the look-ups a test makes in a case's evidence."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from conformance.report import wire
from tests.support.cli import conformance


class QuirkRuns:
    """The runs of one protocol: ``runs`` maps each quirk to the cases it makes FAIL or WARN."""

    def __init__(self, protocol: str, runs: Mapping[str, tuple[str, ...]], timeout: float) -> None:
        self.protocol = protocol
        self.runs = runs
        self.timeout = timeout
        self._cache: dict[str, dict[str, Any]] = {}

    def run(self, key: str, tmp: Path, *args: str) -> dict[str, Any]:
        """results.json of the run ``key``: a quirk of ``runs`` with its cases, or else a run
        with ``args`` alone (say, another revision)."""
        if key not in self._cache:
            reports = tmp / key
            chosen = ["--quirk", key, *self.runs[key]] if key in self.runs else list(args)
            r = conformance(
                tmp, "run", "--protocol", self.protocol, "--timeout", f"{self.timeout:g}",
                "--reports", str(reports), "-q", *chosen,
            )  # fmt: skip
            assert (reports / "results.json").exists(), r.stdout + r.stderr
            self._cache[key] = json.loads((reports / "results.json").read_text())
        return self._cache[key]

    def case(self, quirk: str, tmp: Path, case_id: str) -> dict[str, Any]:
        """Case ``case_id`` of the run with ``quirk``."""
        return next(c for c in self.run(quirk, tmp)["cases"] if c["case_id"] == case_id)


def judged(c: dict[str, Any]) -> list[tuple[dict[str, Any], list[str]]]:
    """Each evidence frame as (its wire-log entry, the fields judged in it)."""
    return [(c["wire_log"][j["entry"]], j["fields"]) for j in c["evidence"]]


def value(entry: dict[str, Any], name: str) -> Any:
    """The decoded value of field ``name`` in a wire-log entry."""
    return next(f[3] for f in entry["fields"] if f[0] == name)


def reports_dir(name: str) -> Any:
    """A module-scoped fixture ``tmp``: the folder the module's runs write into."""

    @pytest.fixture(scope="module")
    def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
        return tmp_path_factory.mktemp(name)

    return tmp


def named(field: str, entry: dict[str, Any]) -> bool:
    """``field`` stands for at least one field ``entry`` has, by the reports' own rule
    (:func:`conformance.report.wire.resolved`: the field itself, an array's count, the
    fields under a struct), so a report highlights something for it."""
    fields = wire.entry(entry).fields
    listed = {f.name for f in fields}
    return any(n in listed for n in wire.resolved((field,), fields))


def evidence_problems(case: dict[str, Any]) -> list[str]:
    """What is wrong with a FAIL or WARN's evidence: an entry not in the log, a judged field
    the entry does not hold, a first frame that is no request, a reply with no request of
    its connection before it, no field judged where the verdict is not a close or silence."""
    log, problems = case["wire_log"], []
    if not case["evidence"]:
        return ["no evidence"]
    for j in case["evidence"]:
        if not 0 <= j["entry"] < len(log):
            problems.append(f"entry {j['entry']} is not in the log")
            continue
        entry = log[j["entry"]]
        problems += [
            f"{f} is not a field of {entry['summary']!r}"
            for f in j["fields"]
            if not named(f, entry)
        ]
    if problems:
        return problems
    entries = [log[j["entry"]] for j in case["evidence"]]
    if entries[0]["dir"] != "send":
        problems.append(f"the first frame is not a request: {entries[0]['summary']!r}")
    for i, e in enumerate(entries):
        before = [x for x in entries[:i] if x["conn"] == e["conn"]]
        if e["dir"] in ("recv", "event") and not any(x["dir"] == "send" for x in before):
            problems.append(f"{e['summary']!r} comes with no request of its connection")
    ended = entries[-1]["dir"] == "event"
    if not ended and not any(j["fields"] for j in case["evidence"]):
        problems.append("no field judged, and the verdict is not on a close or silence")
    return problems
