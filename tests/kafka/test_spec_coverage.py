"""What Kafka's SPEC.md and suite must have beyond what every protocol's must
(tests/protocols/test_spec_coverage.py): enough requirements of every level and cases,
versioned cases whose API and range the revisions know, spec quirks across enough areas
and fault quirks for the fuzzer."""

from __future__ import annotations

from conformance.protocols.kafka.quirks import QUIRKS
from conformance.spec import requirements
from conformance.suite.kafka.verify import known_versions
from tests.support.suite_cases import of_protocol

REQS = requirements("kafka")
CASES = of_protocol("kafka")


def test_spec_has_at_least_60_requirements_of_every_level() -> None:
    assert len(REQS) >= 60
    assert {r.level for r in REQS.values()} == {"MUST", "SHOULD", "MAY"}


def test_there_are_at_least_60_cases() -> None:
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


def test_spec_quirks_are_many_and_across_five_areas_and_faults_at_least_two() -> None:
    spec_quirks = [q for q in QUIRKS.values() if q.kind == "spec"]
    assert len(spec_quirks) >= 8
    assert len({REQS[r].area for q in spec_quirks for r in q.breaks}) >= 5
    assert len([q for q in QUIRKS.values() if q.kind == "fault"]) >= 2
