"""SPEC.md and the suite agree: every requirement is checked by a case or says why it cannot
be; every case names known requirements; the spec quirks break MUSTs across enough areas."""

from __future__ import annotations

from collections import Counter

import pytest

import conformance.suite.cursus as suite_pkg
from conformance.protocols.cursus.quirks import QUIRKS
from conformance.spec import SpecError, parse, requirements
from tests.support.suite_cases import cases

REQS = requirements("cursus")


CASES = cases(suite_pkg)


def test_spec_has_at_least_40_requirements_of_every_level() -> None:
    assert len(REQS) >= 40
    assert {r.level for r in REQS.values()} == {"MUST", "SHOULD", "MAY"}
    assert all(r.source and r.text for r in REQS.values())


def test_every_requirement_is_checked_or_says_why_not() -> None:
    covered = {r for _, reqs, _ in CASES for r in reqs}
    unchecked = [r.id for r in REQS.values() if r.id not in covered and not r.not_checkable]
    assert not unchecked, f"no case checks {unchecked}"
    listed = [r.id for r in REQS.values() if r.not_checkable]
    assert len(listed) * 10 <= len(REQS), f"{len(listed)} of {len(REQS)} not checkable: {listed}"
    assert not [r for r in listed if r in covered], "a not-checkable requirement has a case"


def test_cases_have_unique_ids_known_requirements_and_a_quoted_requirement() -> None:
    ids = Counter(case_id for case_id, _, _ in CASES)
    assert not [i for i, n in ids.items() if n > 1], "duplicate case IDs"
    for case_id, reqs, fn in CASES:
        assert case_id.startswith("cursus/"), case_id
        assert set(reqs) <= set(REQS), f"{case_id} names unknown {set(reqs) - set(REQS)}"
        assert (fn.__doc__ or "").strip(), f"{case_id} has no docstring quoting its requirement"
    assert len(CASES) >= 40


def test_cases_are_grouped_by_spec_area() -> None:
    """A case sits in the area of a requirement it checks; a convention (MAY) case may sit
    in the area whose command it is about."""
    for case_id, reqs, _ in CASES:
        area = case_id.split("/")[1]
        areas = {REQS[r].area for r in reqs}
        assert area in areas or areas == {"conventions"}, f"{case_id} is filed under {area!r}"


def test_spec_quirks_break_only_must_requirements_across_five_areas() -> None:
    spec_quirks = [q for q in QUIRKS.values() if q.kind == "spec"]
    assert len(spec_quirks) >= 8
    assert len({REQS[r].area for q in spec_quirks for r in q.breaks}) >= 5
    for q in spec_quirks:
        assert q.breaks, q.name
        for r in q.breaks:
            assert REQS[r].level == "MUST", f"{q.name} breaks {r}, a {REQS[r].level}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("## a\n### CUR-X-1 | MUST\nRequirement: r\nSource: s\n", "is not '### ID"),
        ("## a\n### CUR-X-1 | MUST | doc\nRequirement: r\n", "has no 'source'"),
        ("## a\n### CUR-X-1 | MUST | doc\nRequirement: r\nSource: s\n" * 2, "defined twice"),
    ],
)
def test_a_malformed_spec_is_refused_with_its_line(text: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse(text, "SPEC.md")
