"""Known-failure baselines: what a target is known to fail, so CI can go green on it
and still catch every change.

``conformance run --write-baseline FILE`` writes the verdict of every case of the run.
``conformance run --baseline FILE`` compares the run with it:

* a case the baseline lists as failing (FAIL or ERROR; WARN too under ``--strict``) that
  fails again is an *expected* failure: it does not fail the run, and every report shows
  it as expected;
* a failing case the baseline does not list as failing (a new case included) is *new*:
  exit 1;
* a case listed as failing that no longer fails is *fixed*: exit 1 as well, so that the
  baseline is updated and stays honest;
* a WARN or UNSUPPORTED that appears or disappears is *changed*: reported, not failed;
* a listed case the suite no longer has is *stale*: reported.  A listed case that the
  run's selection left out is neither;
* a case that could not be judged because the target went away during the run (an
  ERROR marked ``lost``) is *not judged*: never a new failure of its requirement, never
  an expected one either; the run fails (exit 1) and says the target was lost.

The file is YAML: what it was written against, then one line per case, ``ID: VERDICT``,
with the violated requirement and the reason for a failure.  This module knows nothing
of pytest; the suite plugin and ``conformance run`` use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

VERDICTS = ("PASS", "FAIL", "WARN", "UNSUPPORTED", "ERROR")
FORMAT = 1


class BaselineError(Exception):
    """A baseline file that cannot be used; the message says what to do."""


def failing(verdict: str, strict: bool) -> bool:
    return verdict in ("FAIL", "ERROR") or (strict and verdict == "WARN")


@dataclass
class Baseline:
    path: str
    protocol: str
    revision: str
    verdicts: dict[str, str]
    target: str = ""
    reasons: dict[str, str] = field(default_factory=dict)

    def expects_failure(self, case_id: str, verdict: str, strict: bool) -> bool:
        """``case_id`` fails (``verdict``) as the baseline says it does."""
        listed = self.verdicts.get(case_id)
        return listed is not None and failing(listed, strict) and failing(verdict, strict)


def load(path: str | Path, protocol: str, revision: str) -> Baseline:
    """The baseline in ``path``, checked against the run's protocol and revision."""
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BaselineError(f"cannot read baseline {p}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise BaselineError(f"baseline {p} is not YAML: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("cases"), dict):
        raise BaselineError(
            f"baseline {p} has no 'cases' mapping; write one with conformance run --write-baseline"
        )
    if data.get("protocol") != protocol:
        raise BaselineError(
            f"baseline {p} is for protocol {data.get('protocol')!r}, this run is {protocol!r}"
        )
    if data.get("revision") != revision:
        raise BaselineError(
            f"baseline {p} was written for revision {data.get('revision')!r}, this run is "
            f"{revision!r}: pass --revision {data.get('revision')} or write a new baseline"
        )
    verdicts: dict[str, str] = {}
    reasons: dict[str, str] = {}
    for case_id, entry in data["cases"].items():
        verdict = entry.get("verdict") if isinstance(entry, dict) else entry
        if verdict not in VERDICTS:
            raise BaselineError(
                f"baseline {p}: case {case_id} has verdict {verdict!r}, not one of {VERDICTS}"
            )
        verdicts[str(case_id)] = str(verdict)
        if isinstance(entry, dict) and entry.get("reason"):
            reasons[str(case_id)] = str(entry["reason"])
    return Baseline(str(p), protocol, revision, verdicts, str(data.get("target") or ""), reasons)


def write(path: str | Path, results: Mapping[str, Any]) -> dict[str, int]:
    """Write the baseline of ``results`` (a run's results.json); the verdict counts.  A case
    lost with the target is left out: it was not judged, and listing its ERROR as known
    would hide a real one later."""
    cases: dict[str, Any] = {}
    counts = dict.fromkeys(VERDICTS, 0)
    for c in results.get("cases") or []:
        if c.get("lost"):  # not judged: the target went away; a later run decides it
            continue
        verdict = str(c["verdict"])
        counts[verdict] = counts.get(verdict, 0) + 1
        if verdict in ("FAIL", "ERROR", "WARN"):
            cases[c["case_id"]] = {
                "verdict": verdict,
                "requirement": c.get("violated") or "",
                "reason": str(c.get("message") or "")[:300],
            }
        else:
            cases[c["case_id"]] = verdict
    doc = {
        "format": FORMAT,
        "protocol": results.get("protocol"),
        "revision": results.get("revision"),
        "target": results.get("target_name") or results.get("target") or "",
        "written": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "counts": {k: v for k, v in counts.items() if v},
        "cases": cases,
    }
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)
    head = (
        "# Known-failure baseline (conformance run --write-baseline); use it with\n"
        "# conformance run --baseline FILE. A listed FAIL/ERROR that fails again is expected;\n"
        "# any other FAIL/ERROR, or a listed one that now passes, fails the run.\n"
    )
    out.write_text(head + text, encoding="utf-8")
    return counts


def compare(
    baseline: Baseline,
    cases: Sequence[Mapping[str, Any]],
    known: Iterable[str],
    strict: bool,
) -> dict[str, Any]:
    """How the run's ``cases`` differ from ``baseline``; ``known`` is every case ID the
    suite has for this run's revision, selected or not (to tell stale from deselected)."""
    expected: list[str] = []
    new: list[str] = []
    not_judged: list[str] = []
    unlisted: list[str] = []
    fixed: list[dict[str, str]] = []
    changed: list[dict[str, str]] = []
    ran: set[str] = set()
    for c in cases:
        case_id, verdict = str(c["case_id"]), str(c["verdict"])
        ran.add(case_id)
        was = baseline.verdicts.get(case_id)
        if was is None:
            unlisted.append(case_id)
        if c.get("lost"):
            not_judged.append(case_id)
        elif failing(verdict, strict):
            (expected if baseline.expects_failure(case_id, verdict, strict) else new).append(
                case_id
            )
        elif was is not None and failing(was, strict):
            fixed.append({"case_id": case_id, "was": was, "now": verdict})
        elif was is not None and was != verdict:
            changed.append({"case_id": case_id, "was": was, "now": verdict})
    known_ids = set(known) | ran
    stale = sorted(cid for cid in baseline.verdicts if cid not in known_ids)
    return {
        "file": baseline.path,
        "expected": expected,
        "new": new,
        "fixed": fixed,
        "changed": changed,
        "unlisted": unlisted,
        "stale": stale,
        "not_judged": not_judged,
        "exit_code": 1 if new or fixed or not_judged else 0,
    }


def summary_lines(section: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(style, line)`` pairs telling what the comparison found, worst first."""
    lines: list[tuple[str, str]] = []
    name = section.get("file", "the baseline")
    if section.get("new"):
        lines.append(("red", f"new failures, not in {name}: {', '.join(section['new'])}"))
    if section.get("fixed"):
        ids = ", ".join(f"{f['case_id']} ({f['was']} -> {f['now']})" for f in section["fixed"])
        lines.append(
            (
                "red",
                f"listed as failing in {name} but no longer failing: {ids}; update the baseline",
            )
        )
    if section.get("changed"):
        ids = ", ".join(f"{f['case_id']} ({f['was']} -> {f['now']})" for f in section["changed"])
        lines.append(("yellow", f"changed since {name} (not failing the run): {ids}"))
    if section.get("stale"):
        lines.append(
            ("yellow", f"stale: {name} lists case(s) the suite no longer has: "
             f"{', '.join(section['stale'])}")
        )  # fmt: skip
    if section.get("not_judged"):
        lines.append(
            (
                "red",
                f"not judged: the target went away during the run, "
                f"{len(section['not_judged'])} case(s) could not run (not compared with {name})",
            )
        )
    n = len(section.get("expected") or [])
    lines.append(("dim", f"baseline {name}: {n} known failure(s) failed as expected"))
    return lines
