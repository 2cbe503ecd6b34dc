"""What a conformance case is made of: its identity, and how it ends.

A case is a pytest test function decorated with :func:`case`, which names its
hierarchical case ID (``cursus/framing/3``) and the requirement IDs it checks
(``CUR-FRAME-3``).  Its docstring quotes the requirement.  It ends in a shared
verifier, which either returns or raises one of:

* :class:`Violation`: the target broke requirement ``requirement``; it names its
  evidence (:mod:`conformance.evidence`): the frames the check decided on and the
  fields it judged, which is what every report shows.  The verdict is
  FAIL when that requirement is a MUST, WARN when it is a SHOULD (WARN fails the run
  only under ``--conformance-strict``).
* :class:`Unsupported`: the target does not have an optional feature, or answers a
  reference-broker convention (level MAY) its own way.  Verdict UNSUPPORTED.

Any other exception means the case could not run: verdict ERROR.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn, TypeVar

import pytest

from conformance.evidence import NO_EVIDENCE, Evidence

F = TypeVar("F", bound=Callable[..., object])


class Violation(AssertionError):
    """The target broke ``requirement``; ``evidence`` is what the check decided on."""

    def __init__(self, requirement: str, message: str, evidence: Evidence) -> None:
        super().__init__(f"{requirement}: {message}")
        self.requirement = requirement
        self.message = message
        self.evidence = evidence


class Unsupported(Exception):
    """The target lacks an optional feature or follows another convention."""

    def __init__(
        self, reason: str, requirement: str | None = None, evidence: Evidence = NO_EVIDENCE
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.requirement = requirement
        self.evidence = evidence


def case(case_id: str, *requirements: str) -> Callable[[F], F]:
    """Mark a test function as conformance case ``case_id`` checking ``requirements``."""
    if not requirements:
        raise ValueError(f"case {case_id} names no requirement")

    def mark(fn: F) -> F:
        marked: F = pytest.mark.conformance(case_id=case_id, requirements=tuple(requirements))(fn)
        return marked

    return mark


def violated(requirement: str, message: str, evidence: Evidence) -> NoReturn:
    raise Violation(requirement, message, evidence)


def require(condition: object, requirement: str, message: str, evidence: Evidence) -> None:
    """Raise :class:`Violation` of ``requirement``, decided on ``evidence``, unless
    ``condition`` holds."""
    if not condition:
        raise Violation(requirement, message, evidence)


def unsupported(
    reason: str, requirement: str | None = None, evidence: Evidence = NO_EVIDENCE
) -> NoReturn:
    raise Unsupported(reason, requirement, evidence)
