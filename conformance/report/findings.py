"""Failing cases grouped like bug reports: one *finding* per distinct problem.

A case run at several versions (``kafka/fetch/2@v4`` ... ``@v16``) that fails each time
against the same requirement for the same reason is one finding, headed
``kafka/fetch/2 at v4–v16`` (ranges compacted: ``v4–v7, v9``).  The terminal and the HTML
show findings; JUnit and ``results.json`` keep one entry per case.

**The grouping rule.**  Two cases are one finding when they have the same case ID before
the ``@`` (the version suffix), the same verdict, the same broken requirement, the same
baseline status (known or not) and the same *normalised reason*: the reason with the
case's own version token (``v4``) replaced by ``v*`` and then every run of digits by
``#``.  So "Fetch v4: high watermark 4, expected 3" and "Fetch v16: high watermark 5,
expected 4" are one finding (the numbers a check reports can shift with the version's
record layout), and so are reasons that differ only in the unique topic or group name
each case makes for itself (``nowhere-028b82a1c5``) or in a topic id, while "high
watermark 4" and "no partition in the reply" stay apart.  A
finding keeps every actual reason: when they differ the reports list each one with its
versions, so grouping never hides a value from the wire.

ERROR cases the results mark ``lost`` (the target went away, not the case's fault) form one
finding of their own whatever their IDs, stated with :func:`conformance.report.lost_line`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.report import (
    SEVERITY,
    cases,
    is_lost,
    natural_key,
    printable,
    reason_of,
    verdict_of,
)

_VERSION = re.compile(r"^v(\d+)$")
_DIGITS = re.compile(r"\d+")


def split_id(case_id: str) -> tuple[str, str]:
    """``("kafka/fetch/2", "v4")`` from ``kafka/fetch/2@v4``; no suffix: ``(id, "")``."""
    base, at, version = case_id.partition("@")
    return (base, version) if at else (case_id, "")


def _own_version(reason: str, version: str) -> str:
    if not version:
        return reason
    return re.sub(rf"(?<![\w.]){re.escape(version)}(?![\w.])", "v*", reason)


_NAME_TAG = re.compile(r"\b(?=[0-9a-f-]*\d)[0-9a-f]{8,}(?:-[0-9a-f]{4,})*\b")
"""A run of 8 or more hex digits (with a digit), dashed groups after it: the unique tag
of a case's topic or group name (``nowhere-028b82a1c5``) or a topic id (a UUID)."""


def normalised(reason: str, version: str) -> str:
    """The reason with the case's version token made ``v*``, the unique names and ids a
    case makes for itself made ``#``, and every number ``#``."""
    return _DIGITS.sub("#", _NAME_TAG.sub("#", _own_version(reason, version)))


def compact_versions(versions: Sequence[str]) -> str:
    """``v4–v7, v9`` from v4, v5, v6, v7, v9 (any other labels listed as they are)."""
    numbered = sorted({int(m.group(1)) for v in versions if (m := _VERSION.match(v))})
    others = sorted({v for v in versions if v and not _VERSION.match(v)}, key=natural_key)
    parts: list[str] = []
    run: list[int] = []
    for n in [*numbered, None]:
        if n is not None and run and n == run[-1] + 1:
            run.append(n)
            continue
        if run:
            parts.append(f"v{run[0]}" if len(run) == 1 else f"v{run[0]}–v{run[-1]}")
        run = [n] if n is not None else []
    return ", ".join(parts + others)


def compact_ids(case_ids: Sequence[str]) -> list[str]:
    """Case IDs with a case's versions together: ``kafka/fetch/2 at v0–v16``, in order."""
    versions: dict[str, list[str]] = {}
    for cid in case_ids:
        base, version = split_id(cid)
        versions.setdefault(base, []).append(version)
    return [
        base if vs == [""] else f"{base} at {compact_versions(vs)}" for base, vs in versions.items()
    ]


@dataclass
class Finding:
    verdict: str
    base_id: str
    requirement: str
    known: bool
    lost: bool = False
    cases: list[dict[str, Any]] = field(default_factory=list)

    @property
    def event(self) -> str:
        """``CRASH``, ``STOPPED`` or ``PANIC`` when the case did that to its target
        (``run --target-cmd``, reproduced or not), else ``""``."""
        return event_title(self.first)

    @property
    def versions(self) -> list[str]:
        return [split_id(str(c.get("case_id") or ""))[1] for c in self.cases]

    @property
    def first(self) -> dict[str, Any]:
        return self.cases[0]

    @property
    def heading(self) -> str:
        """``kafka/fetch/2 at v4–v16``; one case: its ID; lost cases: how many."""
        if self.lost:
            return f"{len(self.cases)} case{'s' if len(self.cases) != 1 else ''} lost"
        if len(self.cases) == 1:
            return printable(self.first.get("case_id") or "?", one_line=True)
        return f"{printable(self.base_id, one_line=True)} at {compact_versions(self.versions)}"

    @property
    def slug(self) -> str:
        """An anchor-safe ID for the finding."""
        text = "lost" if self.lost else f"{self.verdict}-{self.base_id}-{self.requirement}"
        return "finding-" + re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-")

    def reasons(self, limit: int | None = None) -> list[tuple[str, str]]:
        """Each distinct reason with the versions (or case IDs) that gave it, in order;
        reasons that differ only in their own version token (``Fetch v4``/``Fetch v5``) or
        in the unique names a case makes for itself count as one, shown as the first."""
        return [(reason, versions) for reason, versions, _ in self.by_reason(limit)]

    def by_reason(self, limit: int | None = None) -> list[tuple[str, str, dict[str, Any]]]:
        """As :meth:`reasons`, with the first case that gave each reason (whose frames show
        that reason's evidence)."""
        seen: dict[str, tuple[str, list[str], dict[str, Any]]] = {}
        for c in self.cases:
            cid = str(c.get("case_id") or "?")
            version = split_id(cid)[1]
            reason = reason_of(c, limit=limit)
            key = _NAME_TAG.sub("#", _own_version(reason, version))
            seen.setdefault(key, (reason, [], c))[1].append(version or cid)
        return [
            (
                reason,
                compact_versions(v) if all(_VERSION.match(x) for x in v) else ", ".join(v),
                first,
            )
            for reason, v, first in seen.values()
        ]


EVENT_TITLES = {"crash": "CRASH", "stop": "STOPPED", "panic": "PANIC"}
OUTPUT_SHOWN = 30
"""Lines of a target's output shown with a finding (its last ones; all are in results.json)."""


def event_title(case: Mapping[str, Any]) -> str:
    event = case.get("target_event")
    return EVENT_TITLES.get(str(event.get("kind")), "") if isinstance(event, dict) else ""


def output_lines(case: Mapping[str, Any], limit: int = OUTPUT_SHOWN) -> list[str]:
    """What the target printed during the case (``run --target-cmd``), its last ``limit``
    lines, each printable; a first line says how many were left out."""
    lines = [printable(line, one_line=True) for line in case.get("target_output") or []]
    if len(lines) <= limit:
        return lines
    return [f"({len(lines) - limit} earlier lines in results.json)", *lines[-limit:]]


def findings(results: Mapping[str, Any], *, known: bool = False) -> list[Finding]:
    """The FAIL, ERROR and WARN cases as findings: those that crashed, stopped or wounded
    the target first, then worst first (FAIL, ERROR, WARN), then by requirement and case
    ID; ``known``: those the baseline expects instead."""
    groups: dict[tuple[Any, ...], Finding] = {}
    lost: Finding | None = None
    for case in cases(results):
        verdict = verdict_of(case)
        if verdict not in ("FAIL", "ERROR", "WARN") or bool(case.get("expected")) != known:
            continue
        cid = str(case.get("case_id") or case.get("nodeid") or "?")
        if is_lost(case):
            if lost is None:
                lost = Finding("ERROR", "", "", known, lost=True)
            lost.cases.append(case)
            continue
        base, version = split_id(cid)
        violated = str(case.get("violated") or "") if verdict != "ERROR" else ""
        key = (verdict, base, violated, normalised(reason_of(case), version), event_title(case))
        if key not in groups:
            groups[key] = Finding(verdict, base, violated, known)
        groups[key].cases.append(case)
    for found in groups.values():
        found.cases.sort(key=lambda c: natural_key(str(c.get("case_id") or "")))
    ordered = sorted(
        groups.values(),
        key=lambda f: (
            not f.event,  # crashes, stops and panics first: CI must not pass over them
            SEVERITY.index(f.verdict),
            natural_key(f.requirement),
            natural_key(f.base_id),
        ),
    )
    return ordered + ([lost] if lost is not None else [])


def broken_by_level(results: Mapping[str, Any]) -> dict[str, list[str]]:
    """Every broken requirement (not only known ones) by level: ``{"MUST": [...], ...}``,
    each list naturally sorted; levels in MUST, SHOULD, MAY order, then any other."""
    registry = {
        str(r.get("id")): r for r in results.get("requirements") or [] if isinstance(r, dict)
    }
    out: dict[str, set[str]] = {}
    for case in cases(results):
        verdict = verdict_of(case)
        if verdict not in ("FAIL", "WARN"):
            continue
        violated = case.get("violated")
        for req in (
            [str(violated)] if violated else [str(r) for r in case.get("requirements") or []]
        ):
            level = str(
                registry.get(req, {}).get("level") or ("MUST" if verdict == "FAIL" else "SHOULD")
            )
            out.setdefault(level, set()).add(req)
    order = ["MUST", "SHOULD", "MAY"]
    levels = sorted(out, key=lambda lv: (order.index(lv) if lv in order else 3, lv))
    return {lv: sorted(out[lv], key=natural_key) for lv in levels}
