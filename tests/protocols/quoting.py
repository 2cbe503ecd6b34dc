"""Does a conformance case's docstring quote the requirement it checks?  The rule, used by
tests/protocols/test_quoted_requirements.py (whose docstring states it for readers).

A docstring's first paragraph is the case's title (reports show its first line); the
quotation is a paragraph of its own, a *quote paragraph*: the IDs of the requirements it
quotes, comma-separated, a colon, a space, then the quotation in double quotes::

    CUR-BATCH-6: "a batch that ... is refused and nothing of it is stored."

A docstring passes when it has at least one quote paragraph and every quote paragraph
passes; the IDs its quote paragraphs name, read in order, are IDs the case declares, each
named once and in the order the case declares them.  A paragraph is a quote paragraph by
its opening ``ID:`` alone, so one that opens so but holds no quotation in double quotes
fails.

A quotation is checked against the texts of the IDs its paragraph names.  Both are
compared after taking out Markdown backticks and collapsing runs of whitespace; the
quotation's own trailing punctuation does not count.  An ellipsis (``...`` or ``…``)
marks an elided part: it cuts the quotation into pieces, each stripped of spaces and of
the punctuation at the cut.  Every piece must occur, in order and without overlapping, in
the texts of the named requirements, taken in the order named (a piece never spans two
requirements); a piece starts and ends at word boundaries, and only its first letter may
differ in case (a quotation may begin a sentence).  At least :data:`MIN_WORDS` words must
be quoted, or the whole of a shorter requirement.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping, Sequence
from typing import Any

from conformance.spec import Requirement

MIN_WORDS = 5
_ID = r"[A-Z][A-Z0-9]*-[A-Z0-9]+-\d+"
_MARKED = re.compile(rf"({_ID}(?:, {_ID})*): (.*)", re.DOTALL)
_QUOTED = re.compile(r'"(.*)"', re.DOTALL)
_ELLIPSIS = re.compile(r"\.\.\.|…")
_AT_CUT = " .,;:"
_TRAILING = " .,;:!"
_APART = "\x00"
"""Between two requirements' texts: no piece can match across it."""


def normalized(text: str) -> str:
    return " ".join(text.replace("`", "").split())


def paragraphs(fn: Any) -> list[str]:
    """The paragraphs of ``fn``'s docstring, the lines of each joined by one space."""
    doc = (inspect.getdoc(fn) or "").strip()
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", doc) if p.strip()]


def quotations(paras: Sequence[str]) -> list[tuple[tuple[str, ...], str | None]]:
    """Each quote paragraph's IDs and its quotation (None if not in double quotes)."""
    out: list[tuple[tuple[str, ...], str | None]] = []
    for p in paras:
        m = _MARKED.fullmatch(p)
        if m is not None:
            quoted = _QUOTED.fullmatch(m.group(2))
            out.append((tuple(m.group(1).split(", ")), quoted and quoted.group(1)))
    return out


def _pattern(piece: str) -> re.Pattern[str]:
    head, rest = piece[0], re.escape(piece[1:])
    first = f"[{head.lower()}{head.upper()}]" if head.isalpha() else re.escape(head)
    before = r"(?<!\w)" if head.isalnum() else ""
    after = r"(?!\w)" if piece[-1].isalnum() else ""
    return re.compile(before + first + rest + after)


def mismatch(quote: str, named: Sequence[str], reqs: Mapping[str, Requirement]) -> str | None:
    """None if ``quote`` quotes the requirements ``named`` (IDs, in that order) by the
    rule above, else why not, in one line."""
    texts = [normalized(reqs[r].text) for r in named if r in reqs]
    if not texts:
        return f"none of {', '.join(named)} is in SPEC.md"
    source = _APART.join(texts)
    pieces = [p.strip(_AT_CUT) for p in _ELLIPSIS.split(normalized(quote).rstrip(_TRAILING))]
    pieces = [p for p in pieces if p]
    if not pieces:
        return "the quotation is empty"
    at = 0
    for i, piece in enumerate(pieces):
        found = _pattern(piece).search(source, at)
        if found is None:
            where = f"the text of {', '.join(named)}"
            return f"{piece!r} is not in {where}" + (f" after {pieces[i - 1]!r}" if i else "")
        at = found.end()
    words = sum(len(p.split()) for p in pieces)
    shortest = min(len(t.split()) for t in texts)
    if words < min(MIN_WORDS, shortest):
        return f"only {words} word(s) quoted: quote at least {MIN_WORDS}"
    return None


def docstring_mismatch(
    paras: Sequence[str], declared: Sequence[str], reqs: Mapping[str, Requirement]
) -> str | None:
    """None if the docstring ``paras`` (its paragraphs) quotes the requirements the case
    ``declared`` by the rule above, else why not, in one line."""
    quotes = quotations(paras)
    if not quotes:
        return 'the docstring has no quote paragraph (ID: "quotation")'
    named = [r for ids, _ in quotes for r in ids]
    foreign = [r for r in named if r not in declared]
    if foreign:
        return f"{', '.join(foreign)} quoted, but the case declares {', '.join(declared)}"
    order = [declared.index(r) for r in named]
    if order != sorted(set(order)):
        return f"quoted {', '.join(named)}: name each once, in the declared order"
    for ids, quote in quotes:
        if quote is None:
            return f"{', '.join(ids)}: the quotation is not in double quotes"
        why = mismatch(quote, ids, reqs)
        if why is not None:
            return f"{', '.join(ids)}: {why}"
    return None
