"""Every case of every registered protocol has a title that is a whole sentence: the
reports show it as the case's headline, so it must never stop mid-sentence."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.suite.plugin import title_of
from tests.protocols.registered import NAMES, extra_protocols_registered
from tests.support.suite_cases import Case, of_protocol


def params() -> list[Any]:
    with extra_protocols_registered():
        return [pytest.param(c, id=c.case_id) for n in NAMES for c in of_protocol(n)]


@pytest.mark.parametrize("c", params())
def test_the_title_is_a_whole_sentence(c: Case) -> None:
    title = title_of(c.fn.__doc__ or "")
    assert title, f"{c.case_id} has no docstring"
    assert title.endswith((".", "?", "!")), f"{c.case_id}: the title stops mid-sentence: {title!r}"
    assert len(title) <= 200, f"{c.case_id}: a title of {len(title)} characters: {title!r}"


@pytest.mark.parametrize(
    ("doc", "title"),
    [
        ('One line.\n\n    REQ-1: "x"', "One line."),
        (
            "A title that goes on\n    to a second line.\n\n    Then more.",
            "A title that goes on to a second line.",
        ),
        ("First sentence. Second one.\n\n    More.", "First sentence."),
        ("Names '.', '..' and v1.2 are fine.", "Names '.', '..' and v1.2 are fine."),
    ],
)
def test_the_title_is_the_first_sentence_whole(doc: str, title: str) -> None:
    assert title_of(doc) == title
