"""The requirement registry, read from each protocol's SPEC.md (and its parts,
``SPEC-<area>.md`` beside it, read after it in name order).

SPEC.md format (one requirement)::

    ## area
    ### CUR-FRAME-3 | MUST | doc
    Requirement: the rule, in our words.
    Source: the sentence of the seed document it rests on.
    Not checkable: why no case can check it (optional).

A section whose area starts with ``client`` (``## client: framing``) holds requirements a
*client* must meet, checked by ``serve --validate`` (:mod:`conformance.validate`) and never
by a case of the suite: :func:`requirements` gives the broker's,
:func:`client_requirements` the client's.

A malformed SPEC.md is a bug in the tool, reported as :class:`SpecError` naming the
file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from conformance import protocols

LEVELS = ("MUST", "SHOULD", "MAY")
_HEADING = re.compile(
    r"^### ([A-Z][A-Z0-9]*-[A-Z0-9]+-\d+) \| (MUST|SHOULD|MAY) \| ([a-z0-9_.,-]+)$"
)
_FIELDS = {"Requirement": "text", "Source": "source", "Not checkable": "not_checkable"}


class SpecError(ValueError):
    pass


@dataclass(frozen=True)
class Requirement:
    id: str
    level: str
    revisions: tuple[str, ...]
    area: str
    text: str
    source: str
    not_checkable: str | None = None

    @property
    def party(self) -> str:
        """``client`` for a requirement a client must meet, else ``broker``."""
        return "client" if self.area.startswith("client") else "broker"


def parse(text: str, origin: str = "SPEC.md") -> dict[str, Requirement]:
    reqs: dict[str, Requirement] = {}
    area = ""
    current: dict[str, str] | None = None
    head: tuple[str, str, tuple[str, ...], str, int] | None = None

    def finish() -> None:
        if head is None or current is None:
            return
        rid, level, revs, req_area, line_no = head
        for key in ("text", "source"):
            if not current.get(key):
                raise SpecError(f"{origin}:{line_no}: {rid} has no {key!r} line")
        reqs[rid] = Requirement(
            rid,
            level,
            revs,
            req_area,
            current["text"],
            current["source"],
            current.get("not_checkable"),
        )

    for no, line in enumerate(text.splitlines(), 1):
        if line.startswith("## "):
            finish()
            head, current = None, None
            area = line[3:].strip()
        elif line.startswith("### "):
            finish()
            m = _HEADING.match(line)
            if not m:
                raise SpecError(
                    f"{origin}:{no}: heading {line!r} is not '### ID | LEVEL | revisions'"
                )
            if m.group(1) in reqs:
                raise SpecError(f"{origin}:{no}: {m.group(1)} is defined twice")
            head = (m.group(1), m.group(2), tuple(m.group(3).split(",")), area, no)
            current = {}
        elif current is not None and ":" in line:
            key, _, value = line.partition(":")
            if key in _FIELDS:
                current[_FIELDS[key]] = value.strip()
    finish()
    return reqs


@cache
def _all(protocol: str) -> dict[str, Requirement]:
    plugin = protocols.get(protocol)
    where = plugin.package.replace(".", "/")
    reqs: dict[str, Requirement] = {}
    for name, text in plugin.spec_parts():
        for rid, req in parse(text, f"{where}/{name}").items():
            if rid in reqs:
                raise SpecError(f"{where}/{name}: {rid} is defined twice (also in an earlier part)")
            reqs[rid] = req
    return reqs


@cache
def requirements(protocol: str) -> dict[str, Requirement]:
    """Every requirement a broker of ``protocol`` must meet, by ID (what the suite checks)."""
    return {k: r for k, r in _all(protocol).items() if r.party == "broker"}


@cache
def client_requirements(protocol: str) -> dict[str, Requirement]:
    """Every requirement a client of ``protocol`` must meet, by ID (``serve --validate``)."""
    return {k: r for k, r in _all(protocol).items() if r.party == "client"}
