"""Each revision named after a real implementation says where that implementation shows each
of its requirements (issue 34, "truth is part of done").

For every protocol and each of its revisions in :data:`REAL_REVISIONS`, ``TRUTH.md`` beside
its SPEC.md opens with a header naming the real repository and pinning one commit
(``Pinned commit: `<40 hex digits>```), then lists every requirement of that revision (the
broker's and the client's, read with :mod:`conformance.spec` as the spec-coverage tests read
them) exactly once, in a table row ``| ID | where | note |``.  ``where`` is either one or more
source locations, ```path/to/file.ext` `Function`` (more names of the same file after commas,
more files after ``;``), or the words ``document only`` with the reason in ``note``.  The
table names no requirement outside that revision, and where the protocol's FACTS.md pins a
commit (its first full commit hash), TRUTH.md pins the same one.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conformance import protocols
from conformance.spec import client_requirements, requirements
from tests.protocols.registered import ROOT, TEST_ONLY

REAL_REVISIONS: dict[str, str] = {
    "kafka": "apache",
    "cursus": "real",
    "v1line": "real",
    "minikafka": "real",
    "iggy": "classic",
}
"""Protocol -> its revision named after a real implementation (every revision but ``doc``)."""

PENDING: dict[str, str] = {}
"""Protocols whose TRUTH.md is known to be missing or short: xfail (strict), so the entry must
go the moment the file is complete.  This list must only shrink."""

DOCUMENT_ONLY = "document only"
_ID = r"[A-Z][A-Z0-9]*-[A-Z0-9]+-\d+"
_ROW = re.compile(rf"^\|\s*({_ID})\s*\|(.*)(?<!\\)\|\s*$")
_CELL = re.compile(r"(?<!\\)\|")
"""A cell ends at a ``|`` not escaped: a note writes a pipe as ``\\|``."""
_PIN = re.compile(r"^Pinned commit: `([0-9a-f]{40})`", re.MULTILINE)
_HASH = re.compile(r"\b[0-9a-f]{40}\b")
_NAME = r"`[A-Za-z_][\w.:$<>]*`"
_PLACE = rf"`[\w.@+-]+(?:/[\w.@+-]+)*\.\w+` {_NAME}(?:, {_NAME})*"
_WHERE = re.compile(rf"^{_PLACE}(?:; {_PLACE})*$")


def _folder(name: str) -> Path:
    return ROOT / protocols.get(name).package.replace(".", "/")


def revision_requirements(name: str, revision: str) -> set[str]:
    """Every requirement ID of ``revision``, the broker's and the client's."""
    every = {**requirements(name), **client_requirements(name)}
    return {rid for rid, r in every.items() if revision in r.revisions}


def facts_pin(folder: Path) -> str | None:
    """The commit FACTS.md pins: its first full commit hash, if it has a FACTS.md and one."""
    facts = folder / "FACTS.md"
    found = _HASH.search(facts.read_text(encoding="utf-8")) if facts.exists() else None
    return found.group(0) if found else None


def truth_problems(text: str, wanted: set[str], pin: str | None) -> list[str]:
    """What is wrong with a TRUTH.md ``text`` that must list the requirements ``wanted``, at the
    commit ``pin`` when one is known: one message a problem, none when it is right."""
    problems: list[str] = []
    header = _PIN.search(text)
    if header is None:
        problems.append("the header pins no commit ('Pinned commit: `<40 hex digits>`')")
    elif pin is not None and header.group(1) != pin:
        problems.append(f"the header pins {header.group(1)}, FACTS.md pins {pin}")
    seen: dict[str, int] = {}
    for no, line in enumerate(text.splitlines(), 1):
        row = _ROW.match(line)
        if row is None:
            continue
        rid, rest = row.group(1), row.group(2)
        seen[rid] = seen.get(rid, 0) + 1
        cells = [c.strip() for c in _CELL.split(rest)]
        if len(cells) != 2:
            problems.append(f"line {no}: {rid} has {len(cells) + 1} cells, not 3 (ID, where, note)")
            continue
        where, note = cells
        if where == DOCUMENT_ONLY:
            if not note:
                problems.append(f"line {no}: {rid} is 'document only' and its note says not why")
        elif not _WHERE.match(where):
            problems.append(
                f"line {no}: {rid}: {where!r} is neither '{DOCUMENT_ONLY}' nor "
                "'`path/file.ext` `Function`' (more names after ', ', more files after '; ')"
            )
    if missing := sorted(wanted - set(seen)):
        problems.append(f"no row for {missing}")
    if extra := sorted(set(seen) - wanted):
        problems.append(f"rows for requirements outside the revision: {extra}")
    if twice := sorted(rid for rid, n in seen.items() if n > 1):
        problems.append(f"more than one row for {twice}")
    return problems


def test_every_revision_but_the_documents_is_named_here() -> None:
    for name in protocols.names():
        if name in TEST_ONLY:
            continue
        real = [r for r in protocols.get(name).revisions if r != "doc"]
        assert real == ([REAL_REVISIONS[name]] if name in REAL_REVISIONS else []), (
            f"{name}: revisions {real} besides doc; REAL_REVISIONS names "
            f"{REAL_REVISIONS.get(name)!r}"
        )


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(reason=PENDING[n], strict=True))
        if n in PENDING
        else n
        for n in REAL_REVISIONS
    ],
)
def test_truth_md_lists_every_requirement_of_the_real_revision(name: str) -> None:
    revision = REAL_REVISIONS[name]
    folder = _folder(name)
    truth = folder / "TRUTH.md"
    assert truth.exists(), f"{name}: no TRUTH.md for revision {revision!r} in {folder}"
    wanted = revision_requirements(name, revision)
    assert wanted, f"{name}: revision {revision!r} has no requirement"
    problems = truth_problems(truth.read_text(encoding="utf-8"), wanted, facts_pin(folder))
    assert not problems, f"{name} TRUTH.md ({revision}):\n" + "\n".join(problems)


_PIN_LINE = "Pinned commit: `" + "a" * 40 + "`\n\n| ID | where | note |\n|---|---|---|\n"
_GOOD = {
    "TOY-X-1": "| TOY-X-1 | `src/a.go` `Parse`, `Ok`; `src/b.go` `T.run` | |",
    "TOY-X-2": r"| TOY-X-2 | document only | a convention: `V1\|5\|PING\|` |",
}


def _truth(*rows: str, pin: str = _PIN_LINE) -> str:
    return pin + "\n".join(rows) + "\n"


def test_the_checker_passes_a_complete_truth() -> None:
    assert truth_problems(_truth(*_GOOD.values()), set(_GOOD), "a" * 40) == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_truth(_GOOD["TOY-X-1"]), r"no row for \['TOY-X-2'\]"),
        (_truth(*_GOOD.values(), "| TOY-X-3 | document only | why |"), "outside the revision"),
        (_truth(*_GOOD.values(), _GOOD["TOY-X-2"]), r"more than one row for \['TOY-X-2'\]"),
        (_truth(_GOOD["TOY-X-1"], "| TOY-X-2 | document only | |"), "says not why"),
        (_truth(_GOOD["TOY-X-1"], "| TOY-X-2 | `src/a.go` | |"), "is neither"),
        (_truth(_GOOD["TOY-X-1"], "| TOY-X-2 | Parse in a.go | |"), "is neither"),
        (_truth(_GOOD["TOY-X-1"], "| TOY-X-2 | document only |"), "not 3"),
        (_truth(_GOOD["TOY-X-1"], "| TOY-X-2 | document only | a | b |"), "not 3"),
        (_truth(*_GOOD.values(), pin=""), "pins no commit"),
        (_truth(*_GOOD.values(), pin=_PIN_LINE.replace("a" * 40, "b" * 40)), "FACTS.md pins"),
    ],
)
def test_the_checker_finds_what_is_wrong(text: str, message: str) -> None:
    problems = truth_problems(text, set(_GOOD), "a" * 40)
    assert any(re.search(message, p) for p in problems), problems


def test_facts_pin_is_the_first_full_hash(tmp_path: Path) -> None:
    assert facts_pin(tmp_path) is None
    (tmp_path / "FACTS.md").write_text("commit `abc1234`, then " + "c" * 40 + " and " + "d" * 40)
    assert facts_pin(tmp_path) == "c" * 40
