"""Every conformance case of every registered protocol quotes, in its docstring, the
requirement it checks, as SPEC.md words it.

The rule (tests/protocols/quoting.py): the docstring's first paragraph is the
requirement line.  It and the SPEC.md texts are compared with Markdown backticks taken
out and whitespace collapsed, the line's trailing punctuation aside.  An ellipsis
(``...`` or ``…``) stands for an elided part: the pieces between ellipses must occur in
order, at word boundaries, in the texts of the requirements the case declares (in the
order it declares them, no piece spanning two); only a piece's first letter may differ in
case; at least five words are quoted, or all of a shorter requirement.  A paraphrase, or
a shortened quotation without its ellipsis, fails.

The cases in :data:`KNOWN_UNQUOTED` did not follow the rule when the check was written:
they are expected to fail (xfail, strict), so fixing one fails this test until its entry
is removed.  The list must only shrink; a case not on it that fails the rule fails here.
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.spec import parse, requirements
from conformance.suite.case import case
from tests.protocols.quoting import mismatch, requirement_line
from tests.protocols.registered import NAMES, extra_protocols_registered
from tests.support.suite_cases import Case, of_protocol

KNOWN_UNQUOTED: dict[str, frozenset[str]] = {
    "cursus": frozenset(
        [
            "cursus/ack/1",
            "cursus/ack/2",
            "cursus/ack/3",
            "cursus/ack/8",
            "cursus/ack/9",
            "cursus/batch/1",
            "cursus/batch/2",
            "cursus/batch/3",
            "cursus/batch/4",
            "cursus/batch/5",
            "cursus/batch/6",
            "cursus/batch/7",
            "cursus/batch/8",
            "cursus/batch/9",
            "cursus/batch/10",
            "cursus/batch/11",
            "cursus/batch/12",
            "cursus/batch/13",
            "cursus/compression/1",
            "cursus/compression/3",
            "cursus/compression/4",
            "cursus/compression/5",
            "cursus/conventions/1",
            "cursus/conventions/3",
            "cursus/conventions/5",
            "cursus/errors/1",
            "cursus/errors/2",
            "cursus/errors/3",
            "cursus/errors/4",
            "cursus/errors/5",
            "cursus/errors/6",
            "cursus/errors/7",
            "cursus/errors/8",
            "cursus/errors/9",
            "cursus/framing/1",
            "cursus/framing/2",
            "cursus/framing/3",
            "cursus/framing/4",
            "cursus/framing/5",
            "cursus/framing/8",
            "cursus/groups/1",
            "cursus/groups/2",
            "cursus/groups/4",
            "cursus/groups/6",
            "cursus/groups/7",
            "cursus/groups/8",
            "cursus/streaming/1",
            "cursus/streaming/2",
            "cursus/streaming/3",
            "cursus/streaming/4",
            "cursus/text/1",
            "cursus/text/3",
            "cursus/text/4",
            "cursus/text/5",
            "cursus/text/6",
            "cursus/text/7",
            "cursus/text/8",
            "cursus/text/9",
            "cursus/text/12",
            "cursus/text/13",
        ]
    ),
    "kafka": frozenset(
        [
            "kafka/admin/1",
            "kafka/admin/2",
            "kafka/admin/3",
            "kafka/admin/4",
            "kafka/admin/5",
            "kafka/admin/6",
            "kafka/admin/7",
            "kafka/admin/8",
            "kafka/conventions/1",
            "kafka/errors/1",
            "kafka/errors/2",
            "kafka/fetch/1",
            "kafka/fetch/2",
            "kafka/fetch/3",
            "kafka/fetch/4",
            "kafka/fetch/5",
            "kafka/fetch/6",
            "kafka/fetch/7",
            "kafka/fetch/8",
            "kafka/framing/1",
            "kafka/framing/2",
            "kafka/framing/4",
            "kafka/framing/5",
            "kafka/framing/6",
            "kafka/framing/7",
            "kafka/groups/2",
            "kafka/groups/3",
            "kafka/groups/4",
            "kafka/groups/5",
            "kafka/groups/6",
            "kafka/groups/7",
            "kafka/groups/8",
            "kafka/groups/9",
            "kafka/groups/10",
            "kafka/groups/11",
            "kafka/groups/12",
            "kafka/groups/13",
            "kafka/groups/14",
            "kafka/headers/1",
            "kafka/headers/2",
            "kafka/headers/3",
            "kafka/headers/4",
            "kafka/headers/5",
            "kafka/headers/6",
            "kafka/headers/7",
            "kafka/offsets/1",
            "kafka/offsets/3",
            "kafka/offsets/4",
            "kafka/offsets/5",
            "kafka/offsets/6",
            "kafka/produce/1",
            "kafka/produce/3",
            "kafka/produce/4",
            "kafka/produce/5",
            "kafka/produce/6",
            "kafka/produce/7",
            "kafka/produce/8",
            "kafka/records/1",
            "kafka/records/2",
            "kafka/records/3",
            "kafka/records/4",
            "kafka/records/5",
            "kafka/records/6",
            "kafka/records/7",
            "kafka/records/8",
            "kafka/records/9",
            "kafka/records/10",
            "kafka/records/11",
            "kafka/records/12",
            "kafka/records/13",
            "kafka/records/14",
            "kafka/records/15",
            "kafka/versions/1",
            "kafka/versions/2",
            "kafka/versions/3",
            "kafka/versions/4",
            "kafka/versions/5",
            "kafka/versions/6",
            "kafka/versions/7",
            "kafka/versions/8",
            "kafka/versions/9",
            "kafka/versions/10",
            "kafka/versions/11",
        ]
    ),
    "toy": frozenset(["toy/login/1", "toy/data/1"]),
}
"""Case IDs whose docstring does not quote its requirement yet.  THIS LIST MUST SHRINK:
fix the docstring (conformance/suite/), then delete its ID here."""


def params() -> list[Any]:
    out = []
    with extra_protocols_registered():
        for name in NAMES:
            for c in of_protocol(name):
                known = c.case_id in KNOWN_UNQUOTED.get(name, ())
                why = "does not quote its requirement yet (KNOWN_UNQUOTED)"
                marks = [pytest.mark.xfail(reason=why, strict=True)] if known else []
                out.append(pytest.param(name, c, id=c.case_id, marks=marks))
    return out


@pytest.mark.parametrize(("name", "c"), params())
def test_the_docstring_quotes_the_requirement(name: str, c: Case) -> None:
    reqs = requirements(name)
    line = requirement_line(c.fn)
    why = mismatch(line, c.requirements, reqs)
    spec_text = "\n".join(f"  {r}: {reqs[r].text}" for r in c.requirements if r in reqs)
    assert why is None, f"{c.case_id}: {why}\n  docstring: {line}\n{spec_text}"


@pytest.mark.parametrize("name", NAMES)
def test_the_allow_list_names_only_existing_cases(name: str) -> None:
    ids = {c.case_id for c in of_protocol(name)}
    assert KNOWN_UNQUOTED.get(name, frozenset()) - ids == set()


def test_every_allow_listed_protocol_is_registered() -> None:
    assert set(KNOWN_UNQUOTED) <= set(NAMES)


# ------------------------------------------------------- the rule, on planted cases

SPEC = """\
## data
### PLT-DATA-1 | MUST | v1
Requirement: `PUT <topic> <value>` answers `OK <offset>`, offsets counting from 0 per topic.
Source: planted.
### PLT-DATA-2 | MUST | v1
Requirement: `GET <topic> <offset>` answers `VAL <value>` with the value put at that offset.
Source: planted.
"""


def planted(docstring: str, *declared: str) -> Case:
    """A synthetic case object, declared the way the suite declares one."""

    @case("planted/data/1", *(declared or ("PLT-DATA-1",)))
    def test_planted() -> None:
        pass

    test_planted.__doc__ = docstring
    marks = [m for m in test_planted.pytestmark if m.name == "conformance"]  # type: ignore[attr-defined]
    return Case(marks[0].kwargs["case_id"], marks[0].kwargs["requirements"], test_planted)


def check(c: Case) -> str | None:
    return mismatch(requirement_line(c.fn), c.requirements, parse(SPEC, "planted/SPEC.md"))


@pytest.mark.parametrize(
    "docstring",
    [
        "PUT <topic> <value> answers OK <offset>, offsets counting from 0 per topic.",
        "`PUT <topic> <value>`   answers `OK <offset>`,\n    offsets counting from 0 per topic",
        "PUT <topic> <value> answers OK <offset>...",
        "PUT <topic> <value> answers ... offsets counting from 0 per topic.",
        "Offsets counting from 0 per topic.\n\nA second paragraph says how the case checks it.",
        "… answers OK <offset>, offsets counting from 0 …",
    ],
    ids=["exact", "backticks-and-whitespace", "ellipsis-at-end", "ellipsis-inside",
         "first-paragraph-only", "ellipses-around"],
)  # fmt: skip
def test_a_quotation_passes(docstring: str) -> None:
    assert check(planted(docstring)) is None


@pytest.mark.parametrize(
    ("docstring", "declared", "says"),
    [
        ("PUT answers OK with the offset, from 0 per topic.", (), "is not in the text"),
        ("PUT <topic> <value> answers OK <offset>, offsets from 0.", (), "is not in"),
        ("offsets counting from 0 per topic ... PUT <topic> <value>", (), "after"),
        ("GET <topic> <offset> answers VAL <value>.", (), "PLT-DATA-1"),
        ("answers OK <offset>", (), "only 3 word(s)"),
        ("UT <topic> <value> answers OK <offset>", (), "is not in"),
        ("", (), "no requirement line"),
        ("PUT <topic> <value> answers OK <offset>.", ("PLT-NOPE-1",), "is in SPEC.md"),
    ],
    ids=["paraphrase", "elided-without-ellipsis", "out-of-order", "other-requirement",
         "too-short", "mid-word", "no-docstring", "unknown-requirement"],
)  # fmt: skip
def test_a_planted_mismatch_fails(docstring: str, declared: tuple[str, ...], says: str) -> None:
    why = check(planted(docstring, *declared))
    assert why is not None and says in why, why


def test_a_case_may_quote_each_requirement_it_declares_in_order() -> None:
    both = ("PLT-DATA-1", "PLT-DATA-2")
    line = "PUT <topic> <value> answers OK <offset> ... GET <topic> <offset> answers VAL <value>"
    assert check(planted(line, *both)) is None
    assert check(planted(line, *reversed(both))) is not None
    assert check(planted("answers OK <offset>, offsets counting from 0 per topic. GET", *both))
