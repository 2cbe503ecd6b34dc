"""What Cursus's SPEC.md and suite must have beyond what every protocol's must
(tests/protocols/test_spec_coverage.py): enough requirements of every level and cases, few
requirements declared not checkable, and spec quirks across enough areas."""

from __future__ import annotations

from conformance.protocols.cursus.quirks import QUIRKS
from conformance.spec import requirements
from tests.support.suite_cases import of_protocol

REQS = requirements("cursus")


def test_spec_has_at_least_40_requirements_of_every_level() -> None:
    assert len(REQS) >= 40
    assert {r.level for r in REQS.values()} == {"MUST", "SHOULD", "MAY"}


def test_at_most_a_tenth_of_the_requirements_is_not_checkable() -> None:
    listed = [r.id for r in REQS.values() if r.not_checkable]
    assert len(listed) * 10 <= len(REQS), f"{len(listed)} of {len(REQS)} not checkable: {listed}"


def test_there_are_at_least_40_cases() -> None:
    assert len(of_protocol("cursus")) >= 40


def test_spec_quirks_are_many_and_across_five_areas() -> None:
    spec_quirks = [q for q in QUIRKS.values() if q.kind == "spec"]
    assert len(spec_quirks) >= 8
    assert len({REQS[r].area for q in spec_quirks for r in q.breaks}) >= 5
