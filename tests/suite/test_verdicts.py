"""How a case's ending becomes a graded verdict, and verdicts an exit code."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from conformance.client import PeerClosed
from conformance.spec import requirements
from conformance.suite.case import Unsupported, Violation, case
from conformance.suite.plugin import _selected, _verdict
from conformance.suite.results import exit_code
from conformance.suite.target import TargetUnresponsive

STATE = SimpleNamespace(requirements=requirements("cursus"), target=None)


def verdict_of(exc: BaseException | None) -> tuple[str, str | None, str]:
    if exc is None:
        return _verdict(STATE, None)  # type: ignore[arg-type]
    try:
        raise exc
    except BaseException:
        info = pytest.ExceptionInfo.from_current()
    return _verdict(STATE, info)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("exc", "verdict", "violated"),
    [
        (None, "PASS", None),
        (Violation("CUR-FRAME-3", "x"), "FAIL", "CUR-FRAME-3"),  # MUST
        (Violation("CUR-ERR-3", "x"), "WARN", "CUR-ERR-3"),  # SHOULD
        (Violation("CUR-CONV-2", "x"), "UNSUPPORTED", "CUR-CONV-2"),  # MAY: never FAIL
        (Unsupported("no gzip", "CUR-COMP-1"), "UNSUPPORTED", "CUR-COMP-1"),
        (TargetUnresponsive("gone"), "ERROR", None),
        (PeerClosed("reset"), "ERROR", None),
        (KeyError("bug"), "ERROR", None),
    ],
)
def test_case_endings_map_to_graded_verdicts(
    exc: BaseException | None, verdict: str, violated: str | None
) -> None:
    got, req, _ = verdict_of(exc)
    assert (got, req) == (verdict, violated)


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
