"""How a case's ending becomes its verdict, and how a run keeps track of a lost target.

=========================================  =============  ===============
case ends with                             verdict        pytest outcome
=========================================  =============  ===============
return                                     PASS           passed
Violation of a MUST                        FAIL           failed
Violation of a SHOULD                      WARN           passed (failed with --conformance-strict)
Violation of a MAY (a convention)          UNSUPPORTED    skipped
Unsupported                                UNSUPPORTED    skipped
BadFraming (a reply that cannot be framed) the level of    failed
                                           the plug-in's
                                           reply_framing
TargetUnresponsive or anything else        ERROR          failed
=========================================  =============  ===============

A reply that cannot be framed breaks the plug-in's ``reply_framing`` requirement whatever
the case was about; when the answer to the probe on a fresh connection cannot be framed
either, the target is unusable and every later case ends at once as an ERROR that says so.

A violation decided on a close or a silence (``Evidence.ending``), and a connection that
failed under a case (a :class:`~conformance.client.ClientError`), stand only if the target
is still there: the case's own connections are closed first (a target may allow few per
client), then the target is probed on a fresh connection (twice; any answer counts).  A
target found gone makes the case an ERROR marked *lost*, and every later case too.

:class:`Losses` remembers, per process (each pytest-xdist worker has one), when each case
ended and when the target was found gone; the controller merges them into the results'
``target_lost``: the first case that found it gone, the last case (of any worker) that
ended before, and when.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import pytest

from conformance.client import BadFraming, ClientError
from conformance.evidence import NO_EVIDENCE, Evidence
from conformance.spec import Requirement
from conformance.suite.case import Unsupported, Violation
from conformance.suite.target import Target, TargetUnresponsive

LEVEL_VERDICT = {"MUST": "FAIL", "SHOULD": "WARN", "MAY": "UNSUPPORTED"}


class Verdict(NamedTuple):
    verdict: str
    violated: str | None
    message: str
    evidence: Evidence
    lost: bool


def verdict_of(
    requirements: Mapping[str, Requirement],
    target: Target | None,
    excinfo: pytest.ExceptionInfo[BaseException] | None,
    release: Callable[[], None] = lambda: None,
) -> Verdict:
    """The verdict of a case that ended with ``excinfo`` (None: it returned);
    ``release`` closes the case's connections before the target is probed."""

    def gone() -> str | None:
        if target is None:
            return None
        release()
        return target.gone()

    if excinfo is None:
        return Verdict("PASS", None, "", NO_EVIDENCE, False)
    exc = excinfo.value
    if isinstance(exc, Violation):
        why = gone() if exc.evidence.ending else None
        if why is not None:
            return Verdict("ERROR", None, why, exc.evidence, True)
        req = requirements.get(exc.requirement)
        verdict = LEVEL_VERDICT[req.level if req else "MUST"]
        if target is not None and exc.requirement == target.plugin.reply_framing:
            target.found_unusable()  # a suite that judges framing itself (Mini-Kafka's)
        return Verdict(verdict, exc.requirement, str(exc), exc.evidence, False)
    if isinstance(exc, Unsupported):
        return Verdict("UNSUPPORTED", exc.requirement, exc.reason, exc.evidence, False)
    if isinstance(exc, pytest.skip.Exception):
        return Verdict("UNSUPPORTED", None, str(exc), NO_EVIDENCE, False)
    if isinstance(exc, TargetUnresponsive):
        return Verdict("ERROR", None, str(exc), NO_EVIDENCE, True)
    message = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, ClientError):
        why = gone()
        if why is None and isinstance(exc, BadFraming) and target is not None:
            framed = _unframed(requirements, target, exc)
            if framed is not None:
                return framed
        return Verdict("ERROR", None, why or message, exc.evidence, why is not None)
    return Verdict("ERROR", None, message, NO_EVIDENCE, False)


def _unframed(
    requirements: Mapping[str, Requirement], target: Target, exc: BadFraming
) -> Verdict | None:
    """A reply the protocol's framing cannot frame: a violation of the plug-in's
    ``reply_framing`` requirement, decided on the bytes that did not frame.  When the
    target's answer to the probe on a fresh connection cannot be framed either, the target
    is unusable: every later case ends at once (:meth:`Target.found_unusable`)."""
    req = requirements.get(target.plugin.reply_framing or "")
    if req is None or target.revision not in req.revisions:
        return None
    target.found_unusable()
    verdict = LEVEL_VERDICT[req.level]
    return Verdict(verdict, req.id, f"a reply cannot be framed: {exc}", exc.evidence, False)


def compact(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A wire-log entry without its bytes: when, which connection, direction, length, summary."""
    out = {k: entry[k] for k in ("t", "conn", "dir", "len", "summary") if k in entry}
    out["hex"] = ""
    return out


@dataclass
class Losses:
    """When each case of this process ended, and when the target was found gone."""

    ended: dict[str, float] = field(default_factory=dict)
    lost: dict[str, Any] | None = None

    def case_ended(self, case_id: str) -> None:
        self.ended[case_id] = time.time()

    def target_lost(self, case_id: str, reason: str, at: float | None) -> None:
        """``case_id`` found the target gone (``at``: when it was found, wall clock)."""
        if self.lost is None:
            self.lost = {"case": case_id, "at": at or time.time(), "reason": reason}

    def forget(self, case_id: str) -> None:
        """``case_id`` is run again (``run --target-cmd``): its first try does not count."""
        self.ended.pop(case_id, None)

    def part(self) -> dict[str, Any]:
        """What a pytest-xdist worker hands the controller."""
        return {"ended": self.ended, "lost": self.lost}

    @staticmethod
    def merged(parts: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
        """The earliest loss of every part, ``after`` the last case (of any part) that
        ended before it; None when no part lost the target."""
        parts = list(parts)
        losses = [p["lost"] for p in parts if p.get("lost")]
        if not losses:
            return None
        first = min(losses, key=lambda x: float(x["at"]))
        before = [
            (t, cid)
            for p in parts
            for cid, t in (p.get("ended") or {}).items()
            if float(t) <= float(first["at"])
        ]
        after = max(before)[1] if before else None
        return {**first, "after": after}
