"""Every conformance case of every registered protocol quotes, in its docstring, the
requirement it checks, as SPEC.md words it.

The rule (tests/protocols/quoting.py): the docstring's first paragraph is the case's
title, and the quotation is a paragraph of its own that opens with the IDs it quotes and
a colon, the quotation in double quotes::

    CUR-BATCH-6: "a batch that ... is refused and nothing of it is stored."

At least one such quote paragraph; the IDs they name are declared by the case, each once,
in the order declared.  A quotation and the SPEC.md texts are compared with Markdown
backticks taken out and whitespace collapsed, the quotation's trailing punctuation aside.
An ellipsis (``...`` or ``…``) stands for an elided part: the pieces between ellipses must
occur in order, at word boundaries, in the texts of the requirements the paragraph names
(in the order it names them, no piece spanning two); only a piece's first letter may
differ in case; at least five words are quoted, or all of a shorter requirement.  A
paraphrase, a shortened quotation without its ellipsis, an unmarked quotation or one
marked with another requirement's ID fails.
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.spec import parse, requirements
from conformance.suite.case import case
from tests.protocols.quoting import docstring_mismatch, paragraphs
from tests.protocols.registered import NAMES, extra_protocols_registered
from tests.support.suite_cases import Case, of_protocol


def params() -> list[Any]:
    with extra_protocols_registered():
        return [pytest.param(n, c, id=c.case_id) for n in NAMES for c in of_protocol(n)]


@pytest.mark.parametrize(("name", "c"), params())
def test_the_docstring_quotes_the_requirement(name: str, c: Case) -> None:
    reqs = requirements(name)
    paras = paragraphs(c.fn)
    why = docstring_mismatch(paras, c.requirements, reqs)
    spec_text = "\n".join(f"  {r}: {reqs[r].text}" for r in c.requirements if r in reqs)
    shown = "\n".join(f"  docstring: {p}" for p in paras)
    assert why is None, f"{c.case_id}: {why}\n{shown}\n{spec_text}"


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
    reqs = parse(SPEC, "planted/SPEC.md")
    return docstring_mismatch(paragraphs(c.fn), c.requirements, reqs)


PUT = "PUT <topic> <value> answers OK <offset>, offsets counting from 0 per topic."
GET = "GET <topic> <offset> answers VAL <value> with the value put at that offset."


@pytest.mark.parametrize(
    "docstring",
    [
        f'A title.\n\nPLT-DATA-1: "{PUT}"',
        'A title.\n\nPLT-DATA-1: "`PUT <topic> <value>`   answers `OK <offset>`,\n'
        '    offsets counting from 0 per topic"',
        'A title.\n\nPLT-DATA-1: "PUT <topic> <value> answers OK <offset>..."',
        'A title.\n\nPLT-DATA-1: "PUT <topic> <value> ... offsets counting from 0 per topic."',
        'A title.\n\nPLT-DATA-1: "… answers OK <offset>, offsets counting from 0 …"',
        'PLT-DATA-1: "Offsets counting from 0 per topic."',
        f'A title.\n\nHow the case checks it.\n\nPLT-DATA-1: "{PUT}"\n\nA last word.',
    ],
    ids=["exact", "backticks-and-whitespace", "ellipsis-at-end", "ellipsis-inside",
         "ellipses-around", "quotation-only", "any-paragraph"],
)  # fmt: skip
def test_a_quotation_passes(docstring: str) -> None:
    assert check(planted(docstring)) is None


@pytest.mark.parametrize(
    ("docstring", "declared", "says"),
    [
        ('T.\n\nPLT-DATA-1: "PUT answers OK with the offset, from 0 per topic."', (),
         "is not in the text of PLT-DATA-1"),
        ('T.\n\nPLT-DATA-1: "PUT <topic> <value> answers OK <offset>, offsets from 0."', (),
         "is not in"),
        ('T.\n\nPLT-DATA-1: "offsets counting from 0 per topic ... PUT <topic> <value>"', (),
         "after"),
        (f'T.\n\nPLT-DATA-1: "{GET}"', (), "is not in the text of PLT-DATA-1"),
        (f'T.\n\nPLT-DATA-2: "{GET}"', (), "PLT-DATA-2 quoted, but the case declares PLT-DATA-1"),
        ('T.\n\nPLT-DATA-1: "answers OK <offset>"', (), "only 3 word(s)"),
        ('T.\n\nPLT-DATA-1: "UT <topic> <value> answers OK <offset>"', (), "is not in"),
        ("", (), "no quote paragraph"),
        (PUT, (), "no quote paragraph"),
        (f"A title.\n\n{PUT}", (), "no quote paragraph"),
        (f'A title. PLT-DATA-1: "{PUT}"', (), "no quote paragraph"),
        (f"A title.\n\nPLT-DATA-1: {PUT}", (), "not in double quotes"),
        (f'T.\n\nPLT-NOPE-1: "{PUT}"', ("PLT-NOPE-1",), "is in SPEC.md"),
        (f'T.\n\nPLT-DATA-1: "{PUT}"\n\nPLT-DATA-2: "GET answers VAL at that offset."',
         ("PLT-DATA-1", "PLT-DATA-2"), "PLT-DATA-2: 'GET answers VAL at that offset' is not in"),
    ],
    ids=["paraphrase", "elided-without-ellipsis", "out-of-order", "other-requirement",
         "marked-with-an-undeclared-id", "too-short", "mid-word", "no-docstring",
         "title-only", "unmarked", "marker-inside-a-paragraph", "not-in-double-quotes",
         "unknown-requirement", "a-wrong-quote-beside-a-right-one"],
)  # fmt: skip
def test_a_planted_mismatch_fails(docstring: str, declared: tuple[str, ...], says: str) -> None:
    why = check(planted(docstring, *declared))
    assert why is not None and says in why, why


def test_a_case_may_quote_each_requirement_it_declares_in_order() -> None:
    both = ("PLT-DATA-1", "PLT-DATA-2")
    one = 'T.\n\nPLT-DATA-1, PLT-DATA-2: "PUT <topic> <value> answers OK <offset> ... GET <topic>"'
    two = f'T.\n\nPLT-DATA-1: "{PUT}"\n\nPLT-DATA-2: "{GET}"'
    assert check(planted(one, *both)) is None
    assert check(planted(two, *both)) is None
    assert "declared order" in (check(planted(one, *reversed(both))) or "")
    assert "declared order" in (check(planted(two, *reversed(both))) or "")
    twice = f'T.\n\nPLT-DATA-1: "{PUT}"\n\nPLT-DATA-1: "{PUT}"'
    assert "once" in (check(planted(twice, *both)) or "")
    across = 'T.\n\nPLT-DATA-1, PLT-DATA-2: "offsets counting from 0 per topic. GET <topic>"'
    assert "is not in" in (check(planted(across, *both)) or "")
