"""Known-failure baselines (conformance/baseline.py): written from a run, loaded back,
and a later run compared with it: expected, new, fixed, changed, stale."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.baseline import BaselineError, compare, load, summary_lines, write


def _results(**verdicts: str) -> dict[str, Any]:
    cases = [
        {"case_id": cid.replace("_", "/"), "verdict": v, "violated": "X-1", "message": "m"}
        for cid, v in verdicts.items()
    ]
    return {"protocol": "p", "revision": "doc", "target": "h:1", "cases": cases}


def test_a_written_baseline_loads_back_with_every_verdict(tmp_path: Path) -> None:
    path = tmp_path / "b.yaml"
    counts = write(path, _results(p_1="PASS", p_2="FAIL", p_3="WARN", p_4="UNSUPPORTED"))
    assert counts["FAIL"] == 1 and counts["PASS"] == 1
    b = load(path, "p", "doc")
    assert b.verdicts == {"p/1": "PASS", "p/2": "FAIL", "p/3": "WARN", "p/4": "UNSUPPORTED"}
    assert b.reasons["p/2"] == "m"


def test_the_same_failures_again_are_expected_and_exit_0(tmp_path: Path) -> None:
    write(tmp_path / "b.yaml", _results(p_1="PASS", p_2="FAIL", p_3="ERROR"))
    b = load(tmp_path / "b.yaml", "p", "doc")
    got = compare(b, _results(p_1="PASS", p_2="FAIL", p_3="ERROR")["cases"], [], strict=False)
    assert got["expected"] == ["p/2", "p/3"]
    assert got["new"] == got["fixed"] == got["stale"] == []
    assert got["exit_code"] == 0


def test_a_new_failure_or_a_fixed_one_exits_1(tmp_path: Path) -> None:
    write(tmp_path / "b.yaml", _results(p_1="PASS", p_2="FAIL"))
    b = load(tmp_path / "b.yaml", "p", "doc")
    new = compare(b, _results(p_1="FAIL", p_2="FAIL")["cases"], [], strict=False)
    assert new["new"] == ["p/1"] and new["exit_code"] == 1
    fixed = compare(b, _results(p_1="PASS", p_2="PASS")["cases"], [], strict=False)
    assert fixed["fixed"] == [{"case_id": "p/2", "was": "FAIL", "now": "PASS"}]
    assert fixed["exit_code"] == 1
    assert any("no longer failing" in line for _, line in summary_lines(fixed))


def test_cases_lost_with_the_target_are_not_judged_never_new_failures(tmp_path: Path) -> None:
    write(tmp_path / "b.yaml", _results(p_1="PASS", p_2="FAIL", p_3="PASS"))
    b = load(tmp_path / "b.yaml", "p", "doc")
    cases = _results(p_1="PASS", p_2="ERROR", p_3="ERROR")["cases"]
    for c in cases[1:]:
        c["lost"] = True
    got = compare(b, cases, [], strict=False)
    assert got["new"] == got["expected"] == got["fixed"] == []
    assert got["not_judged"] == ["p/2", "p/3"]
    assert got["exit_code"] == 1
    lines = [line for _, line in summary_lines(got)]
    assert any(line.startswith("not judged: the target went away") for line in lines)


def test_a_baseline_written_after_a_lost_target_leaves_the_lost_cases_out(tmp_path: Path) -> None:
    results = _results(p_1="PASS", p_2="FAIL", p_3="ERROR")
    results["cases"][2]["lost"] = True
    counts = write(tmp_path / "b.yaml", results)
    assert load(tmp_path / "b.yaml", "p", "doc").verdicts == {"p/1": "PASS", "p/2": "FAIL"}
    assert counts["ERROR"] == 0


def test_an_unlisted_case_must_not_fail_and_a_gone_one_is_stale(tmp_path: Path) -> None:
    write(tmp_path / "b.yaml", _results(p_1="PASS", p_9="FAIL"))
    b = load(tmp_path / "b.yaml", "p", "doc")
    got = compare(b, _results(p_1="PASS", p_5="FAIL")["cases"], ["p/1", "p/5"], strict=False)
    assert got["new"] == ["p/5"] and got["unlisted"] == ["p/5"]
    assert got["stale"] == ["p/9"]
    deselected = compare(b, _results(p_1="PASS")["cases"], ["p/1", "p/9"], strict=False)
    assert deselected["stale"] == [] and deselected["exit_code"] == 0


def test_warn_and_unsupported_changes_are_reported_not_failed(tmp_path: Path) -> None:
    write(tmp_path / "b.yaml", _results(p_1="WARN", p_2="PASS"))
    b = load(tmp_path / "b.yaml", "p", "doc")
    got = compare(b, _results(p_1="PASS", p_2="UNSUPPORTED")["cases"], [], strict=False)
    assert [c["case_id"] for c in got["changed"]] == ["p/1", "p/2"]
    assert got["exit_code"] == 0
    strict = compare(b, _results(p_1="WARN", p_2="WARN")["cases"], [], strict=True)
    assert strict["expected"] == ["p/1"] and strict["new"] == ["p/2"]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[1, 2", "not YAML"),
        ("protocol: p\nrevision: doc\n", "no 'cases'"),
        ("protocol: q\nrevision: doc\ncases: {}\n", "for protocol 'q'"),
        ("protocol: p\nrevision: apache\ncases: {}\n", "--revision apache"),
        ("protocol: p\nrevision: doc\ncases: {p/1: MAYBE}\n", "verdict 'MAYBE'"),
    ],
)
def test_a_baseline_that_cannot_be_used_says_why(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "b.yaml"
    path.write_text(text)
    with pytest.raises(BaselineError, match=says.replace("(", r"\(")):
        load(path, "p", "doc")
    with pytest.raises(BaselineError, match="cannot read"):
        load(tmp_path / "missing.yaml", "p", "doc")
