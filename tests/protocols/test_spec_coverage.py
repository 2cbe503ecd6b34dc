"""Each registered protocol's SPEC.md and its suite agree (one test per protocol).

SPEC.md parses; every requirement has a rule, a source, a known level and revisions the
plug-in knows, and its ID carries the protocol's one prefix; every requirement is checked
by a case or says why it cannot be, and a not-checkable one has no case; case IDs are
unique, hierarchical under the protocol's name, name known requirements and sit in the
area of one of them (a case of conventions only may sit in the area of the command it is
about); the spec quirks break only MUSTs, all in one revision the exactness test runs.
What only one protocol has (how many requirements, versioned cases) stays in its folder.
"""

from __future__ import annotations

from collections import Counter

import pytest

from conformance import protocols
from conformance import spec as spec_module
from conformance.spec import LEVELS, SpecError, parse, requirements
from tests.protocols.registered import NAMES, spec_quirk_revision
from tests.support.suite_cases import of_protocol

QUIRK_KINDS = ("spec", "fault")
UNCOVERED: dict[str, str] = {}
"""Protocols known to have a requirement no case checks: xfail (strict), so the entry
must go the moment the gap is closed.  This list must only shrink."""


def with_known_gaps(gaps: dict[str, str]) -> list[object]:
    return [
        pytest.param(n, marks=pytest.mark.xfail(reason=gaps[n], strict=True)) if n in gaps else n
        for n in NAMES
    ]


@pytest.mark.parametrize("name", NAMES)
def test_every_requirement_is_complete_and_in_known_revisions(name: str) -> None:
    plugin = protocols.get(name)
    reqs = requirements(name)
    assert reqs, f"{name}: SPEC.md holds no requirement"
    prefixes = {r.split("-")[0] for r in reqs}
    assert len(prefixes) == 1, f"{name}: requirement IDs with several prefixes {prefixes}"
    for r in reqs.values():
        assert r.text and r.source, r.id
        assert r.level in LEVELS, r.id
        assert r.area, f"{r.id} is under no area heading"
        assert r.revisions and set(r.revisions) <= set(plugin.revisions), (
            f"{r.id} names revisions {r.revisions}; {name} knows {plugin.revisions}"
        )


@pytest.mark.parametrize("name", with_known_gaps(UNCOVERED))
def test_every_requirement_is_checked_or_says_why_not(name: str) -> None:
    reqs = requirements(name)
    covered = {r for case in of_protocol(name) for r in case.requirements}
    unchecked = [r.id for r in reqs.values() if r.id not in covered and not r.not_checkable]
    assert not unchecked, f"no case checks {unchecked}"
    both = [r.id for r in reqs.values() if r.not_checkable and r.id in covered]
    assert not both, f"not checkable, yet a case checks {both}"


@pytest.mark.parametrize("name", NAMES)
def test_cases_have_unique_ids_under_the_protocol_and_known_requirements(name: str) -> None:
    reqs = requirements(name)
    cases = of_protocol(name)
    assert cases, f"{name} has no conformance case"
    ids = Counter(case.case_id for case in cases)
    assert not [i for i, n in ids.items() if n > 1], "duplicate case IDs"
    for case_id, declared, fn in cases:
        parts = case_id.split("/")
        assert parts[0] == name and len(parts) == 3 and "@" not in case_id, case_id
        assert set(declared) <= set(reqs), f"{case_id} names unknown {set(declared) - set(reqs)}"
        assert (fn.__doc__ or "").strip(), f"{case_id} has no docstring quoting its requirement"


@pytest.mark.parametrize("name", NAMES)
def test_cases_are_grouped_by_spec_area(name: str) -> None:
    """A case sits in the area of a requirement it checks; a case of conventions (MAY)
    only may sit in the area whose command it is about."""
    reqs = requirements(name)
    for case_id, declared, _ in of_protocol(name):
        area = case_id.split("/")[1]
        areas = {reqs[r].area for r in declared}
        assert area in areas or areas == {"conventions"}, f"{case_id} is filed under {area!r}"


@pytest.mark.parametrize("name", NAMES)
def test_spec_quirks_break_only_musts_of_the_revision_they_run_in(name: str) -> None:
    """A spec quirk breaks MUSTs, or SHOULDs only (its run fails under --strict), never a
    MAY nor a mix of the two levels."""
    plugin = protocols.get(name)
    reqs = requirements(name)
    for q in plugin.quirks.values():
        assert q.kind in QUIRK_KINDS, f"{q.name} is of kind {q.kind!r}"
        assert q.kind == "fault" or q.breaks, f"spec quirk {q.name} breaks nothing"
        for r in q.breaks:
            assert r in reqs, f"{q.name} breaks {r}, which SPEC.md does not define"
        levels = {reqs[r].level for r in q.breaks}
        assert levels <= {"MUST"} or levels == {"SHOULD"}, f"{q.name} breaks {levels}"
    for q in plugin.quirks.values():  # one revision holds all a quirk breaks
        assert spec_quirk_revision(plugin, q.name) in plugin.revisions


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


_PART = "## area\n### TOY-X-{n} | MUST | doc\nRequirement: rule {n}.\nSource: seed.\n"


def _parts_of(monkeypatch: pytest.MonkeyPatch, parts: list[tuple[str, str]]) -> None:
    class _Fake:
        package = "fake.proto"

        def spec_parts(self) -> list[tuple[str, str]]:
            return parts

    monkeypatch.setattr(protocols, "get", lambda name: _Fake())
    spec_module._all.cache_clear()
    requirements.cache_clear()


def test_a_spec_in_parts_reads_every_part_and_refuses_an_id_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _parts_of(monkeypatch, [("SPEC.md", _PART.format(n=1)), ("SPEC-b.md", _PART.format(n=2))])
    try:
        assert sorted(requirements("fake")) == ["TOY-X-1", "TOY-X-2"]
        _parts_of(monkeypatch, [("SPEC.md", _PART.format(n=1)), ("SPEC-b.md", _PART.format(n=1))])
        with pytest.raises(SpecError, match=r"fake/proto/SPEC-b.md: TOY-X-1 is defined twice"):
            requirements("fake")
    finally:
        spec_module._all.cache_clear()
        requirements.cache_clear()


def test_the_kafka_spec_parts_are_found_beside_spec_md() -> None:
    names = [name for name, _ in protocols.get("kafka").spec_parts()]
    assert names[0] == "SPEC.md"
    assert names[1:] == sorted(n for n in names[1:] if n.startswith("SPEC-"))
