"""Kafka's SPEC.md and its suite agree: every requirement is checked by a case or says why
it cannot be; every case names known requirements in its own area and quotes one; the
spec quirks break only MUSTs, across enough areas, and every one of them is in the
revision the exactness test runs (apache)."""

from __future__ import annotations

from collections import Counter

import conformance.suite.kafka as suite_pkg
from conformance.protocols.kafka.quirks import QUIRKS
from conformance.spec import requirements
from conformance.suite.kafka.verify import known_versions
from tests.support.suite_cases import cases

REQS = requirements("kafka")


CASES = cases(suite_pkg)


def test_spec_has_at_least_60_requirements_each_with_a_source_and_revisions() -> None:
    assert len(REQS) >= 60
    assert {r.level for r in REQS.values()} == {"MUST", "SHOULD", "MAY"}
    for r in REQS.values():
        assert r.source and r.text, r.id
        assert set(r.revisions) <= {"doc", "apache"} and r.revisions, r.id


def test_every_requirement_is_checked_or_says_why_not() -> None:
    covered = {r for _, reqs, _ in CASES for r in reqs}
    unchecked = [r.id for r in REQS.values() if r.id not in covered and not r.not_checkable]
    assert not unchecked, f"no case checks {unchecked}"


def test_cases_have_unique_ids_known_requirements_and_a_quoted_requirement() -> None:
    ids = Counter(case_id for case_id, _, _ in CASES)
    assert not [i for i, n in ids.items() if n > 1], "duplicate case IDs"
    for case_id, reqs, fn in CASES:
        assert case_id.startswith("kafka/") and "@" not in case_id, case_id
        assert set(reqs) <= set(REQS), f"{case_id} names unknown {set(reqs) - set(REQS)}"
        assert (fn.__doc__ or "").strip(), f"{case_id} has no docstring quoting its requirement"
        area = case_id.split("/")[1]
        assert area in {REQS[r].area for r in reqs}, f"{case_id} is filed under {area!r}"
    assert len(CASES) >= 60


def test_versioned_cases_name_an_api_and_a_range_the_revisions_know() -> None:
    versioned = 0
    for case_id, _, fn in CASES:
        marks = [m for m in getattr(fn, "pytestmark", []) if m.name == "conformance_versions"]
        if not marks:
            continue
        versioned += 1
        api, since = marks[0].args[0], marks[0].kwargs.get("since", 0)
        assert any(v >= since for v in known_versions("apache", api)), case_id
    assert versioned >= 8


def test_spec_quirks_break_only_apache_musts_across_five_areas() -> None:
    spec_quirks = [q for q in QUIRKS.values() if q.kind == "spec"]
    assert len(spec_quirks) >= 8
    assert len({REQS[r].area for q in spec_quirks for r in q.breaks}) >= 5
    for q in spec_quirks:
        assert q.breaks, q.name
        for r in q.breaks:
            assert REQS[r].level == "MUST", f"{q.name} breaks {r}, a {REQS[r].level}"
            assert "apache" in REQS[r].revisions, f"{q.name} breaks {r}, not in apache"
    faults = [q for q in QUIRKS.values() if q.kind == "fault"]
    assert len(faults) >= 2
