"""Minimizing a finding: keep only what still reproduces.

Within a budget of attempts and seconds: extra connections dropped, all writes merged into
one, then whole frames dropped, then each frame's payload made smaller, first by the
protocol's own structure (a message dropped, a string emptied: :mod:`.shrink`), then by
removing chunks of bytes (the length prefix recomputed); chunks are removed from any
unframed tail too (delta debugging, halving the chunk size).  Each attempt runs on a target
in a known state: an embedded broker is restarted whenever the previous attempt may have
changed it (a crash, a corruption); a target given by address is used as it is.  A
CORRUPTION found over many cases is first narrowed to the case after which a canary fails.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from conformance.errors import ProtocolError
from conformance.fuzz import harness
from conformance.fuzz.campaign import setup
from conformance.fuzz.case import FuzzCase, FuzzProtocol
from conformance.fuzz.events import Event
from conformance.fuzz.findings import (
    LEAK_NOT_REPLAYED,
    Reproducer,
    SetupFailed,
    judge,
    reproduces,
)
from conformance.fuzz.shrink import shrinks
from conformance.fuzz.target import Target, TargetLost
from conformance.plugin import SessionRefused

MAX_ATTEMPTS = 200
MAX_SECONDS = 60.0
"""A minimization's budget: attempts, and seconds."""


@dataclass
class _Budget:
    """Attempts and seconds left to a minimization, and why it lost its target, if it did."""

    attempts: int = MAX_ATTEMPTS
    end: float = field(default_factory=lambda: time.monotonic() + MAX_SECONDS)
    lost: str = ""

    def spend(self) -> bool:
        self.attempts -= 1
        return not self.lost and self.attempts >= 0 and time.monotonic() < self.end

    def trying(self, still: Callable[[FuzzCase], bool]) -> Callable[[FuzzCase], bool]:
        """``still``, False once the target is lost (remembering why)."""

        def attempt(case: FuzzCase) -> bool:
            if self.lost:
                return False
            try:
                return still(case)
            except TargetLost as exc:
                self.lost = str(exc)
                return False

        return attempt


def _fresh(
    proto: FuzzProtocol, target: Target, deadline: float, force: bool, back_s: float
) -> None:
    """Bring ``target`` to a known state, then set it up: restarted if asked (and the fuzzer
    can), brought back if it does not serve.  TargetLost if it cannot be."""
    if (target.restartable and force) or not harness.serves(
        proto, target.host, target.port, deadline, target.looks
    ):
        target.bring_back(proto, back_s, deadline)
    try:
        setup(proto, target, deadline)
    except (OSError, TimeoutError, ProtocolError, SessionRefused):
        target.bring_back(proto, back_s, deadline)  # it died after the last look: once more
        try:
            setup(proto, target, deadline)
        except (OSError, TimeoutError, ProtocolError, SessionRefused) as exc:
            raise TargetLost(
                f"{target.describe()} did not take the set-up requests: {exc}"
            ) from None


def _single(
    proto: FuzzProtocol,
    target: Target,
    finding: str,
    deadline: float,
    back_s: float,
    panic: str = "",
) -> Callable[[FuzzCase], bool]:
    def still(case: FuzzCase) -> bool:
        _fresh(proto, target, deadline, False, back_s)
        return judge(proto, case, finding, target, deadline, panic)[0]

    return still


def _after_canary(
    proto: FuzzProtocol, target: Target, deadline: float, back_s: float
) -> Callable[[FuzzCase], bool]:
    def still(case: FuzzCase) -> bool:
        _fresh(proto, target, deadline, True, back_s)
        harness.execute(proto, case, target.host, target.port, deadline)
        return bool(harness.Canary(proto, target.host, target.port, "min", deadline).check())

    return still


def shrink(
    proto: FuzzProtocol,
    case: FuzzCase,
    still: Callable[[FuzzCase], bool],
    budget: _Budget | None = None,
) -> FuzzCase:
    """The smallest variant of ``case`` that ``still`` reproduces, within the budget (the
    best so far when the budget runs out or the target is lost)."""
    budget = budget or _Budget()
    still = budget.trying(still)

    def attempt(c: FuzzCase) -> bool:
        return c != case and budget.spend() and still(c)

    if case.abandon and attempt(replace(case, abandon=())):
        case = replace(case, abandon=())
    merged = replace(case, writes=(case.sent,), gap_s=0.0)
    if len(case.writes) > 1 and attempt(merged):
        case = merged
    if len(case.writes) != 1:
        return case
    pieces = _pieces(proto, case.sent)
    i = 0
    while i < len(pieces) and len(pieces) > 1:  # drop whole frames
        trial = pieces[:i] + pieces[i + 1 :]
        if attempt(replace(case, writes=(_join(proto, trial),))):
            pieces = trial
        else:
            i += 1
    for i in range(len(pieces)):  # shrink inside each piece: by its structure, then bytes
        framed, data = pieces[i]
        progress = framed
        while progress:
            progress = False
            for smaller in shrinks(data, proto.annotate(data)):
                trial = [*pieces[:i], (framed, smaller), *pieces[i + 1 :]]
                if attempt(replace(case, writes=(_join(proto, trial),))):
                    data, pieces, progress = smaller, trial, True
                    break
        chunk = max(len(data) // 2, 1)
        while chunk >= 1 and data:
            at, shrunk = 0, False
            while at < len(data):
                cut = data[:at] + data[at + chunk :]
                trial = [*pieces[:i], (framed, cut), *pieces[i + 1 :]]
                if attempt(replace(case, writes=(_join(proto, trial),))):
                    data, pieces, shrunk = cut, trial, True
                else:
                    at += chunk
            if not shrunk:
                chunk //= 2
    return replace(case, writes=(_join(proto, pieces),))


def _pieces(proto: FuzzProtocol, sent: bytes) -> list[tuple[bool, bytes]]:
    """``sent`` as (framed, payload) pieces: whole frames, then any unframed tail."""
    deframer = proto.new_deframer()
    try:
        frames = deframer.feed(sent)
    except Exception:
        return [(False, sent)]
    used = sum(len(proto.frame(f)) for f in frames)
    out = [(True, f) for f in frames]
    if used < len(sent):
        out.append((False, sent[used:]))
    return out


def _join(proto: FuzzProtocol, pieces: list[tuple[bool, bytes]]) -> bytes:
    return b"".join(proto.frame(data) if framed else data for framed, data in pieces)


def draft(
    proto: FuzzProtocol,
    event: Event,
    cases: dict[int, FuzzCase],
    seed: int,
    deadline: float,
    quirks: list[str],
    options: dict[str, Any] | None = None,
    revision: str = "",
) -> Reproducer:
    """The reproducer of ``event`` as it ran, not minimized (``cases``: the window's
    cases by index).  A CRASH or STOPPED keeps every case of its window: the cases in
    flight with it, and those just before it."""
    window = [cases[i] for i in event.window]
    single = event.finding not in ("CORRUPTION", "LEAK", "CRASH", "STOPPED", "PANIC")
    repro = Reproducer(
        finding=event.finding,
        requirement=event.requirement,
        protocol=proto.name,
        seed=seed,
        index=event.index,
        mutator=event.mutator,
        check="canary" if event.finding in ("CORRUPTION", "LEAK") else "case",
        cases=[cases[event.index]] if single else window,
        deadline_s=deadline,
        broker_quirks=quirks,
        options=dict(options or {}),
        revision=revision,
        panic=event.panic,
        original={
            "bytes": sum(len(c.sent) + sum(map(len, c.abandon)) for c in window),
            "writes": sum(len(c.writes) for c in window),
        },
    )
    if event.finding == "LEAK":
        repro.check = "leak"
        repro.detail = LEAK_NOT_REPLAYED
    return repro


def minimize(
    proto: FuzzProtocol, target: Target, repro: Reproducer, back_s: float = 30.0
) -> tuple[Reproducer, bool | None]:
    """``repro`` minimized against ``target`` and checked once more: (the reproducer,
    whether it still reproduces; None when the target was lost before the check).

    The culprit of several cases is looked for first (the case the finding was seen on,
    then the others, latest first); then it is shrunk.  A target the fuzzer cannot
    restart is waited for (up to ``back_s`` seconds) after each attempt that brings it
    down; if it does not come back, the best reproducer so far is kept, with a note."""
    if repro.check == "leak":
        return repro, None
    deadline = repro.deadline_s
    budget = _Budget()
    shrunk = False
    as_ran = (list(repro.cases), repro.index, repro.mutator, repro.target_output)
    if repro.check == "case":
        judged = _single(proto, target, repro.finding, deadline, back_s, repro.panic)
        still = budget.trying(judged)
        culprit: FuzzCase | None = repro.cases[0]
        if len(repro.cases) > 1:  # which case brought the target down?
            seen = [c for c in repro.cases if c.index == repro.index]
            others = [c for c in reversed(repro.cases) if c.index != repro.index]
            culprit = next((c for c in (*seen, *others) if still(c)), None)
            if culprit is not None:
                repro.index, repro.mutator = culprit.index, culprit.mutator
        elif culprit is not None and not still(culprit):  # not shown again: nothing to shrink
            culprit = None
        if culprit is not None:
            repro.cases, shrunk = [shrink(proto, culprit, still, budget)], True
    elif target.restartable:
        found = _culprit(proto, target, repro.cases, deadline, back_s, budget)
        if found is not None:
            repro.index, repro.mutator = found.index, found.mutator
            again = _after_canary(proto, target, deadline, back_s)
            repro.cases, shrunk = [shrink(proto, found, again, budget)], True
    repro.minimized = len(repro.cases) == 1 and not budget.lost and shrunk
    if budget.lost:
        repro.note = f"minimization stopped, the target was lost: {budget.lost}; {MINIMIZE_LATER}"
        repro.detail = "not checked again: the target was lost"
        return repro, None
    try:
        _fresh(proto, target, deadline, True, back_s)
        ok, detail = reproduces(proto, repro, target)
    except (SetupFailed, TargetLost) as exc:
        ok, detail = False, str(exc)
    if not ok and shrunk:  # a smaller variant that fails its final check is not kept
        repro.cases, repro.index, repro.mutator, repro.target_output = as_ran
        repro.minimized = False
        repro.detail = f"the minimized case did not reproduce in the final check: {detail}"
        repro.note = "not minimized: the minimized case did not reproduce in the final check"
        return repro, ok
    repro.detail = detail if ok else f"did not reproduce after minimizing: {detail}"
    if ok and repro.finding in ("CRASH", "STOPPED", "PANIC"):
        repro.target_output = target.output() or repro.target_output
    if repro.minimized:
        repro.note = ""
    elif repro.check == "canary" and not target.restartable:
        repro.note = (
            "not minimized: a CORRUPTION is minimized on a broker the fuzzer can restart "
            "(the embedded broker, or --target-cmd)"
        )
    elif len(repro.cases) > 1:
        repro.note = (
            "not minimized: no case of the window shows the finding on its own "
            "(the cases are kept in the order they ran)"
        )
    elif not ok:
        repro.note = (
            "not minimized: the case did not show the finding again when replayed "
            "(a flaky finding, or one that needs the state the campaign left)"
        )
    return repro, ok


MINIMIZE_LATER = (
    "minimize it once the target serves again: "
    "conformance replay --minimize FILE --target HOST:PORT (or --target-cmd CMD)"
)


def _culprit(
    proto: FuzzProtocol,
    target: Target,
    window: list[FuzzCase],
    deadline: float,
    back_s: float,
    budget: _Budget,
) -> FuzzCase | None:
    """The case of ``window`` after which a canary first fails, if it corrupts on its own.

    The window is replayed in order on a fresh broker with a canary after every case."""
    try:
        _fresh(proto, target, deadline, True, back_s)
    except TargetLost as exc:
        budget.lost = str(exc)
        return None
    canary = harness.Canary(proto, target.host, target.port, "scan", deadline)
    for case in window:
        harness.execute(proto, case, target.host, target.port, deadline)
        if canary.check():
            again = budget.trying(_after_canary(proto, target, deadline, back_s))
            return case if again(case) else None
    return None
