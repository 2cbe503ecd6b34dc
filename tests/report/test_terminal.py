"""What ``conformance run`` prints at the end: a block per problem, then one summary line."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from conformance.report.terminal import print_summary
from tests.support.report_sample import case, sample_results


def _printed(results: dict[str, Any], width: int = 100, **kwargs: Any) -> str:
    out = io.StringIO()
    print_summary(results, Console(file=out, width=width, color_system=None), **kwargs)
    return out.getvalue()


def test_one_block_per_problem_worst_first_then_one_summary_line() -> None:
    text = _printed(sample_results())
    heads = [line for line in text.splitlines() if line and not line.startswith(" ")]
    assert heads[0] == "FAIL cursus/framing/3  CUR-FRAME-3 (MUST)  title of cursus/framing/3"
    assert heads[1].startswith("ERROR cursus/group/1")
    assert heads[2].startswith("WARN cursus/ack/4  CUR-ACK-9 (SHOULD)")
    assert heads[-1] == (
        "FAILED cursus doc against embedded (127.0.0.1:9000): 5 cases, 1 PASS, 1 FAIL, 1 WARN, "
        "1 UNSUPPORTED, 1 ERROR; broken: CUR-ACK-9, CUR-FRAME-3; 3.2 s"
    )
    assert "cursus/framing/1" not in text and "cursus/stream/2" not in text


def test_a_block_holds_reason_rule_decisive_frame_field_and_command() -> None:
    text = _printed(sample_results())
    block = text[: text.index("ERROR cursus/group/1")]
    assert "  reason reply_code 60, expected 0; reply was <script>alert('x')</script>…" in block
    assert "  rule   frames <script>alert('x')</script> must" in block
    assert "  frame  +0.0020s #1 recv 5 B <script>alert('x')</script>" in block
    assert "0000  3c 73 63 72 3e" in block and "<scr>" in block
    assert "field reply_code = 60  [0..1)" in block
    assert "  again  conformance run --protocol cursus --revision doc cursus/framing/3" in block


def test_markup_and_controls_from_the_target_are_printed_as_text() -> None:
    text = _printed(sample_results())
    assert "[bold]not bold[/] ack late" in text
    assert "\x1b" not in text and "\\x1b[31mreset\\x00" in text


def test_quiet_prints_only_the_summary_line() -> None:
    text = _printed(sample_results(), quiet=True)
    assert text.count("\n") == 1 and text.startswith("FAILED cursus doc against embedded")


def test_lines_follow_a_narrow_terminal_but_the_summary_and_command_stay_whole() -> None:
    results = sample_results()
    results["target_unresponsive"] = True
    results["cases"][1]["reproduce"] = "conformance run --quirk a-long-quirk-name cursus/framing/3"
    lines = _printed(results, width=60).splitlines()
    wrapped = [line for line in lines if not line.startswith(("FAILED", "target", "  again"))]
    assert all(len(line) <= 60 for line in wrapped), [x for x in wrapped if len(x) > 60]
    assert "FAIL cursus/framing/3  CUR-FRAME-3 (MUST)" in lines  # the title on its own line
    assert any(line.startswith("FAILED ") and line.endswith("; 3.2 s") for line in lines)
    assert "  again  conformance run --quirk a-long-quirk-name cursus/framing/3" in lines
    assert any("stopped answering" in line and line.endswith("deadlines") for line in lines)
    assert not any(line != line.rstrip() for line in lines)  # no trailing blanks in a CI log
    assert "0000  3c 73 63 72 3e" in "\n".join(lines)  # 8 bytes a row below 90 columns


@pytest.mark.parametrize("verdict", ["PASS", "UNSUPPORTED"])
def test_a_clean_run_prints_one_passed_line(verdict: str) -> None:
    results = sample_results()
    results["cases"] = [case("cursus/framing/1", verdict, ["CUR-FRAME-1"])]
    results["exit_code"] = 0
    assert _printed(results).splitlines() == [
        f"PASSED cursus doc against embedded (127.0.0.1:9000): 1 cases, "
        f"{'1 PASS' if verdict == 'PASS' else '0 PASS, 1 UNSUPPORTED'}; 3.2 s"
    ]


def test_known_failures_are_not_blocks_and_the_baseline_says_so() -> None:
    results = sample_results()
    results["cases"][1]["expected"] = True
    results["baseline"] = {"file": "base.yaml", "expected": ["cursus/framing/3"]}
    text = _printed(results)
    assert "FAIL cursus/framing/3" not in text
    assert "baseline base.yaml: 1 known failure(s) failed as expected" in text
    assert "1 of them known failures (baseline)" in text
    quiet = _printed(results, quiet=True).splitlines()
    assert len(quiet) == 2 and quiet[0].startswith("baseline base.yaml: 1 known failure(s)")


def test_cases_with_the_same_reason_are_listed_by_id_after_the_third() -> None:
    results = sample_results()
    dead = "target 127.0.0.1:9000 is unresponsive: no reply within 5s"
    results["cases"] = [case(f"cursus/x/{i}", "ERROR", ["CUR-X-1"], message=dead) for i in range(9)]
    text = _printed(results)
    assert text.count("is unresponsive") == 3
    assert "... 6 more ERROR with the same reason: cursus/x/3 cursus/x/4" in text


def test_defaults_to_a_console_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    print_summary(sample_results())
    assert "broken: CUR-ACK-9, CUR-FRAME-3" in capsys.readouterr().out
