"""How a case's ending becomes a graded verdict, and verdicts an exit code."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from conformance.client import PeerClosed
from conformance.evidence import Evidence
from conformance.spec import requirements
from conformance.suite.case import Unsupported, Violation, case
from conformance.suite.plugin import _selected
from conformance.suite.results import exit_code
from conformance.suite.target import TargetUnresponsive
from conformance.suite.verdicts import Losses, verdict_of

STATE = SimpleNamespace(requirements=requirements("cursus"), target=None)


EV = Evidence.of(1, 2).on("status")


def ending(
    exc: BaseException | None, state: Any = STATE, release: Any = lambda: None
) -> tuple[str, str | None, str, Evidence, bool]:
    if exc is None:
        return verdict_of(state.requirements, state.target, None)
    try:
        raise exc
    except BaseException:
        info = pytest.ExceptionInfo.from_current()
    return verdict_of(state.requirements, state.target, info, release)


@pytest.mark.parametrize(
    ("exc", "verdict", "violated"),
    [
        (None, "PASS", None),
        (Violation("CUR-FRAME-3", "x", EV), "FAIL", "CUR-FRAME-3"),  # MUST
        (Violation("CUR-ERR-3", "x", EV), "WARN", "CUR-ERR-3"),  # SHOULD
        (Violation("CUR-CONV-2", "x", EV), "UNSUPPORTED", "CUR-CONV-2"),  # MAY: never FAIL
        (Unsupported("no gzip", "CUR-COMP-1"), "UNSUPPORTED", "CUR-COMP-1"),
        (TargetUnresponsive("gone"), "ERROR", None),
        (PeerClosed("reset"), "ERROR", None),
        (KeyError("bug"), "ERROR", None),
    ],
)
def test_case_endings_map_to_graded_verdicts(
    exc: BaseException | None, verdict: str, violated: str | None
) -> None:
    got, req, _, _, _ = ending(exc)
    assert (got, req) == (verdict, violated)


def test_a_violation_keeps_the_evidence_it_names() -> None:
    _, _, _, evidence, lost = ending(Violation("CUR-FRAME-3", "x", EV))
    assert evidence.as_list() == [{"entry": 1, "fields": []}, {"entry": 2, "fields": ["status"]}]
    assert not lost


class _Target:
    """A target whose probe says it is gone (``why``) or answers (None)."""

    plugin = SimpleNamespace(reply_framing=None)
    """(The suite plugin asks which requirement an unframeable reply breaks.)"""

    def __init__(self, why: str | None) -> None:
        self.why, self.probes = why, 0

    def gone(self) -> str | None:
        self.probes += 1
        return self.why


@pytest.mark.parametrize("how", ["close", "timeout"])
def test_a_close_or_silence_from_a_target_that_went_away_is_an_error(how: str) -> None:
    target = _Target("target 127.0.0.1:1 is unresponsive: connection refused")
    state = SimpleNamespace(requirements=STATE.requirements, target=target)
    closed = Violation(
        "CUR-FRAME-3", "closed the connection instead", Evidence.of(1, 2, ending=how)
    )
    verdict, req, message, _, lost = ending(closed, state)
    assert (verdict, req, lost, target.probes) == ("ERROR", None, True, 1)
    assert "unresponsive" in message


def test_a_close_from_a_target_still_there_stays_a_fail() -> None:
    target = _Target(None)
    state = SimpleNamespace(requirements=STATE.requirements, target=target)
    closed = Violation("CUR-FRAME-3", "closed", Evidence.of(1, 2, ending="close"))
    verdict, req, _, _, lost = ending(closed, state)
    assert (verdict, req, lost, target.probes) == ("FAIL", "CUR-FRAME-3", False, 1)


def test_the_case_s_connections_are_closed_before_the_probe() -> None:
    order: list[str] = []

    class Target(_Target):
        def gone(self) -> str | None:
            order.append("probe")
            return None

    state = SimpleNamespace(requirements=STATE.requirements, target=Target(None))
    closed = Violation("CUR-FRAME-3", "closed", Evidence.of(1, 2, ending="close"))
    ending(closed, state, release=lambda: order.append("release"))
    assert order == ["release", "probe"]


def test_a_loss_is_after_the_last_case_any_worker_ended_before_it() -> None:
    gw0 = {"ended": {"a/1": 10.0, "a/3": 30.0}, "lost": {"case": "a/4", "at": 31.0, "reason": "r"}}
    gw1 = {"ended": {"a/2": 20.0, "a/5": 30.5, "a/6": 40.0}, "lost": None}
    late = {"ended": {}, "lost": {"case": "a/7", "at": 45.0, "reason": "r"}}
    merged = Losses.merged([gw0, gw1, late])
    assert merged == {"case": "a/4", "at": 31.0, "reason": "r", "after": "a/5"}
    assert Losses.merged([gw1]) is None


def test_a_verdict_on_a_reply_does_not_probe() -> None:
    target = _Target("gone")
    state = SimpleNamespace(requirements=STATE.requirements, target=target)
    verdict, _, _, _, _ = ending(Violation("CUR-FRAME-3", "x", EV), state)
    assert (verdict, target.probes) == ("FAIL", 0)


def test_warn_fails_the_run_only_when_strict() -> None:
    counts = {"PASS": 5, "FAIL": 0, "WARN": 1, "UNSUPPORTED": 2, "ERROR": 0}
    assert exit_code(counts, strict=False) == 0
    assert exit_code(counts, strict=True) == 1
    assert exit_code({**counts, "WARN": 0, "ERROR": 1}, strict=False) == 1
    assert exit_code({**counts, "WARN": 0, "FAIL": 1}, strict=False) == 1


@pytest.mark.parametrize(
    ("select", "expected"),
    [
        ([], True),
        (["cursus"], True),
        (["cursus/framing"], True),
        (["cursus/framing/1"], True),
        (["cursus/framing/"], True),
        (["cursus/frame"], False),  # a prefix matches whole path segments only
        (["cursus/framing/3"], False),
        (["CUR-FRAME-1"], True),
        (["CUR-FRAME-2"], False),
    ],
)
def test_selection_by_case_id_prefix_or_requirement(select: list[str], expected: bool) -> None:
    assert _selected("cursus/framing/1", ("CUR-FRAME-1",), select) is expected


def test_a_case_must_name_a_requirement() -> None:
    with pytest.raises(ValueError, match="names no requirement"):
        case("cursus/x/1")
