"""Does a conformance case's docstring quote the requirement it checks?  The rule, used by
tests/protocols/test_quoted_requirements.py (whose docstring states it for readers).

The *requirement line* is the docstring's first paragraph, its lines joined.  Both it and
the SPEC.md text are compared after taking out Markdown backticks and collapsing runs of
whitespace; the line's own trailing punctuation does not count.  An ellipsis (``...`` or
``…``) marks an elided part: it cuts the line into pieces, each stripped of spaces and of
the punctuation at the cut.  Every piece must occur, in order and without overlapping, in
the texts of the requirements the case declares, taken in the order it declares them (a
piece never spans two requirements); a piece starts and ends at word boundaries, and only
its first letter may differ in case (a quotation may begin a sentence).  At least
:data:`MIN_WORDS` words must be quoted, or the whole of a shorter requirement.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping, Sequence
from typing import Any

from conformance.spec import Requirement

MIN_WORDS = 5
_ELLIPSIS = re.compile(r"\.\.\.|…")
_AT_CUT = " .,;:"
_TRAILING = " .,;:!"
_APART = "\x00"
"""Between two requirements' texts: no piece can match across it."""


def normalized(text: str) -> str:
    return " ".join(text.replace("`", "").split())


def requirement_line(fn: Any) -> str:
    """The first paragraph of ``fn``'s docstring, its lines joined ('' if none)."""
    doc = inspect.getdoc(fn) or ""
    return " ".join(doc.strip().split("\n\n")[0].split())


def _pattern(piece: str) -> re.Pattern[str]:
    head, rest = piece[0], re.escape(piece[1:])
    first = f"[{head.lower()}{head.upper()}]" if head.isalpha() else re.escape(head)
    before = r"(?<!\w)" if head.isalnum() else ""
    after = r"(?!\w)" if piece[-1].isalnum() else ""
    return re.compile(before + first + rest + after)


def mismatch(line: str, declared: Sequence[str], reqs: Mapping[str, Requirement]) -> str | None:
    """None if ``line`` quotes the requirements ``declared`` (IDs) by the rule above, else
    why not, in one line."""
    texts = [normalized(reqs[r].text) for r in declared if r in reqs]
    if not texts:
        return f"none of {', '.join(declared)} is in SPEC.md"
    source = _APART.join(texts)
    pieces = [p.strip(_AT_CUT) for p in _ELLIPSIS.split(normalized(line).rstrip(_TRAILING))]
    pieces = [p for p in pieces if p]
    if not pieces:
        return "the docstring has no requirement line"
    at = 0
    for i, piece in enumerate(pieces):
        found = _pattern(piece).search(source, at)
        if found is None:
            where = f"the text of {', '.join(declared)}"
            return f"{piece!r} is not in {where}" + (f" after {pieces[i - 1]!r}" if i else "")
        at = found.end()
    words = sum(len(p.split()) for p in pieces)
    shortest = min(len(t.split()) for t in texts)
    if words < min(MIN_WORDS, shortest):
        return f"only {words} word(s) quoted: quote at least {MIN_WORDS}"
    return None
