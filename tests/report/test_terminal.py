"""What ``conformance run`` prints at the end: a block per finding, then one summary line."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from conformance.report.terminal import print_summary
from tests.report.evidence_sample import LOST, fetch_case, kafka_results, with_evidence
from tests.support.report_sample import case, sample_results


def _printed(results: dict[str, Any], width: int = 100, **kwargs: Any) -> str:
    out = io.StringIO()
    print_summary(results, Console(file=out, width=width, color_system=None), **kwargs)
    return out.getvalue()


def test_one_block_per_problem_worst_first_then_one_summary_line() -> None:
    text = _printed(with_evidence())
    heads = [line for line in text.splitlines() if line and not line.startswith(" ")]
    assert heads[0] == "FAIL cursus/framing/3  CUR-FRAME-3 (MUST)  title of cursus/framing/3"
    assert heads[1].startswith("ERROR cursus/group/1")
    assert heads[2].startswith("WARN cursus/ack/4  CUR-ACK-9 (SHOULD)")
    assert heads[-1] == (
        "FAILED cursus doc against embedded (127.0.0.1:9000): 5 cases, 1 PASS, 1 FAIL, 1 WARN, "
        "1 UNSUPPORTED, 1 ERROR; broken MUST: CUR-FRAME-3; broken SHOULD: CUR-ACK-9; 3.2 s"
    )
    assert "cursus/framing/1" not in text and "cursus/stream/2" not in text


def test_a_block_shows_the_request_then_the_reply_with_the_judged_field() -> None:
    text = _printed(with_evidence())
    block = text[: text.index("ERROR cursus/group/1")]
    assert "  reason reply_code 60, expected 0; reply was <script>alert('x')</script>…" in block
    assert "  rule   frames <script>alert('x')</script> must" in block
    send = block.index("  send   +0.0010s #1 send 6120 bytes oversize frame")
    recv = block.index("  recv   +0.0020s #1 recv 5 bytes <script>alert('x')</script>")
    assert send < recv  # the request, then its reply
    assert "         0000  00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f" in block
    assert "(5120 bytes kept; every row in the HTML report)" in block
    assert "(cut: the log kept 5120 of 6120 bytes)" in block
    assert "0000  3c 73 63 72 3e" in block and "<scr>" in block
    assert "         field reply_code = 60  [0x00..0x01)" in block
    assert "rest = " not in block  # only the judged field
    assert "  again  conformance run --protocol cursus --revision doc cursus/framing/3" in block


def test_the_judged_bytes_and_only_they_are_styled() -> None:
    out = io.StringIO()
    console = Console(file=out, width=100, color_system="standard", force_terminal=True)
    print_summary(kafka_results([fetch_case(4)]), console)
    rows = [line for line in out.getvalue().splitlines() if "0000  " in line]
    reply = rows[1]  # the request's row, then the reply's
    styled = "\x1b[1;30;43m"
    assert reply.count(styled) == 8  # the 8 bytes of high_watermark, each styled
    assert reply.index(styled) == reply.index("0000") + len("0000  \x1b[0m") + 8 * 3
    assert rows[0].count(styled) == 2  # the request's judged api version


def test_a_case_without_evidence_says_so_and_highlights_nothing() -> None:
    text = _printed(sample_results())  # the sample names no evidence
    block = text[: text.index("ERROR cursus/group/1")]
    assert "  frames the case named no evidence; its wire log (every byte in the HTML" in block
    assert "         +0.0020s #1 recv 5 bytes <script>alert('x')</script>" in block
    assert "field " not in block


def test_versions_failing_alike_are_one_block_and_distinct_reasons_are_listed() -> None:
    cases = [fetch_case(v) for v in (4, 5, 6, 7, 9)] + [fetch_case(16, hwm=9)]
    text = _printed(kafka_results(cases))
    assert text.count("FAIL kafka/fetch/3") == 1
    assert "FAIL kafka/fetch/3 at v4–v7, v9, v16  KAF-FETCH-3 (MUST)" in text
    assert "  reason v4–v7, v9: Fetch v4: high watermark 4, expected 3" in text
    assert "         v16: Fetch v16: high watermark 9, expected 8" in text
    assert "         the frames of kafka/fetch/3@v4:" in text
    assert "field responses[0].partitions[0].high_watermark = 4  [0x08..0x10)" in text
    same = _printed(kafka_results([fetch_case(4), fetch_case(5)]))
    assert "  reason Fetch v4: high watermark 4, expected 3 (the same at v4–v5)" in same


def test_every_broken_requirement_is_listed_must_and_should_apart() -> None:
    many = [
        case(f"cursus/x/{i}", "FAIL", [f"CUR-X-{i}"], violated=f"CUR-X-{i}", message=f"m{i}")
        for i in range(30)
    ]
    text = _printed(sample_results() | {"cases": many})
    summary = text.splitlines()[-1]
    assert "more" not in summary and summary.count("CUR-X-") == 30
    assert "broken MUST: CUR-X-0, CUR-X-1, CUR-X-2," in summary
    assert text.count("\nFAIL cursus/x/") + text.startswith("FAIL cursus/x/") == 30


def test_a_lost_target_is_one_block_naming_when_and_after_which_case() -> None:
    lost = [
        case(f"kafka/g/{i}", "ERROR", ["KAF-ERR-1"], lost=True, message="gone") for i in range(40)
    ]
    results = kafka_results([fetch_case(4), *lost], target_lost=LOST, target_unresponsive=True)
    text = _printed(results, width=200)
    assert text.count("ERROR ") == 1 and "ERROR 40 cases lost" in text
    assert (
        "  reason target lost at +20.2 s, after case cursus/group/1 (first noticed by case "
        "cursus/group/2): no TCP connection: connection refused"
    ) in text
    assert "  cases  kafka/g/0; kafka/g/1; kafka/g/2" in text
    assert "stopped answering" not in text  # the lost line says it instead


def test_markup_and_controls_from_the_target_are_printed_as_text() -> None:
    text = _printed(sample_results())
    assert "[bold]not bold[/] ack late" in text
    assert "\x1b" not in text and "\\x1b[31mreset\\x00" in text


def test_quiet_prints_only_the_summary_line() -> None:
    text = _printed(sample_results(), quiet=True)
    assert text.count("\n") == 1 and text.startswith("FAILED cursus doc against embedded")


def test_lines_follow_a_narrow_terminal_but_the_summary_and_command_stay_whole() -> None:
    results = with_evidence()
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
    assert "         0000  3c 73 63 72 3e           <scr>" in lines  # 8 bytes a row


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


def test_defaults_to_a_console_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    print_summary(sample_results())
    assert "broken MUST: CUR-FRAME-3; broken SHOULD: CUR-ACK-9" in capsys.readouterr().out
