"""The campaign runner: cases in flight over several connections, canary pauses, windows."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from conformance import fuzz
from conformance.fuzz import campaign, events, harness
from conformance.fuzz.case import FuzzCase, FuzzProtocol
from conformance.fuzz.target import External

PROTO = fuzz.protocol("cursus")
LIST = PROTO.frame(b"LIST")


def test_the_cases_of_a_seed_do_not_depend_on_the_connections(clean: External) -> None:
    """Which bytes each case sends, and where the canary runs, is the same for 1 and 8."""
    one = campaign.run_range(PROTO, clean, 3, 0, 300, campaign.Options(canary_every=100))
    eight = campaign.run_range(
        PROTO, clean, 3, 0, 300, campaign.Options(canary_every=100, connections=8)
    )
    assert [(r.index, r.mutator, r.sent) for r in one] == [
        (r.index, r.mutator, r.sent) for r in eight
    ]
    assert [r.index for r in eight if r.canary] == [99, 199, 299]
    assert all(r.canary == "ok" and not r.finding for r in eight if r.canary)


def test_the_canary_runs_with_no_case_in_flight(
    clean: External, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A canary check never overlaps a case, however many connections are in use."""
    in_flight = 0
    most = 0
    seen: list[int] = []
    lock = threading.Lock()
    execute, check = harness.execute, harness.Canary.check

    def counted(*args: Any) -> harness.Result:
        nonlocal in_flight, most
        with lock:
            in_flight += 1
            most = max(most, in_flight)
        try:
            return execute(*args)
        finally:
            with lock:
                in_flight -= 1

    def checked(self: harness.Canary) -> str:
        seen.append(in_flight)
        return check(self)

    monkeypatch.setattr(harness, "execute", counted)
    monkeypatch.setattr(harness.Canary, "check", checked)
    campaign.run_range(PROTO, clean, 4, 0, 400, campaign.Options(canary_every=50, connections=8))
    assert len(seen) == 8
    assert seen == [0] * 8
    assert most > 1  # the cases did run side by side


def row(index: int, outcome: str, finding: str = "") -> campaign.Row:
    return campaign.Row(
        index, 0, "valid", "structure", LIST, 1, outcome, 0, finding, "", "", False, 0.0, -1.0
    )


def test_a_crash_with_cases_in_flight_suspects_every_one_of_them() -> None:
    """The window of a CRASH holds the cases in flight with it, the ABORTED ones after it too."""
    rows = [row(i, harness.ANSWERED) for i in range(10)]
    rows[6] = row(6, harness.CRASH, "CRASH")
    rows[7] = row(7, harness.ABORTED)
    rows[9] = row(9, harness.ABORTED)
    (event,) = events.events(PROTO, rows, connections=4)
    assert (event.finding, event.index) == ("CRASH", 6)
    assert event.window == (3, 4, 5, 6, 7, 8, 9)


def test_with_one_connection_a_crash_on_its_own_connection_suspects_only_itself() -> None:
    """Nothing else was in flight: the window is the case alone, as before concurrency."""
    rows = [row(i, harness.ANSWERED) for i in range(5)] + [row(5, harness.CRASH, "CRASH")]
    (event,) = events.events(PROTO, rows, connections=1)
    assert event.window == (5,)


def test_a_target_that_goes_down_and_cannot_restart_ends_the_range(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One CRASH row, the cases in flight ABORTED, nothing started after them."""
    started: list[int] = []

    def fake(
        proto: FuzzProtocol,
        case: FuzzCase,
        host: str,
        port: int,
        d: float,
        looks: harness.Looks = harness.CONFIRMED,
    ) -> Any:
        started.append(case.index)
        if case.index >= 20:
            return harness.Result(harness.REFUSED, 0, 0.0, "connect: refused")
        return harness.Result(harness.ANSWERED, 1, 0.0)

    monkeypatch.setattr(harness, "execute", fake)
    monkeypatch.setattr(harness.Canary, "check", lambda self: "")
    target = External("127.0.0.1", 9)
    rows = campaign.run_range(PROTO, target, 0, 0, 250, campaign.Options(connections=4))
    down = [r for r in rows if r.finding]
    assert [(r.index, r.finding) for r in down] == [(20, "CRASH")]
    assert {r.outcome for r in rows if r.index > 20} == {harness.ABORTED}
    assert max(started) < 20 + 4  # nothing was started once the target was seen down
    assert len(rows) == len(started)
