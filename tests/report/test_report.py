"""The HTML report and the terminal summary, rendered from sample results.

The sample has a case of every verdict and hostile strings where a target controls
the text (messages, wire-log summaries, even a quirk name): the report must escape
them, stay self-contained, and the summary must name what failed.
"""

from __future__ import annotations

import copy
import io
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from conformance.report import (
    broken_requirements,
    count_verdicts,
    natural_key,
    printable,
    requirement_rollup,
    total_line,
)
from conformance.report.html import (
    HEX_ENTRY_LIMIT,
    HEX_LINE_BYTES,
    hex_lines,
    render_html,
    wire_entry,
    write_html,
)
from conformance.report.table import print_summary

HOSTILE = "<script>alert('x')</script>"


def _case(case_id: str, verdict: str, reqs: list[str], **extra: Any) -> dict[str, Any]:
    case: dict[str, Any] = {
        "case_id": case_id,
        "nodeid": f"conformance/suite/cursus/test_x.py::{case_id.replace('/', '_')}",
        "title": f"title of {case_id}",
        "area": case_id.split("/")[1],
        "requirements": reqs,
        "level": "MUST",
        "verdict": verdict,
        "violated": None,
        "message": "",
        "duration_s": 0.01,
        "wire_log": [],
    }
    case.update(extra)
    return case


def _req(req_id: str, cases: list[str], level: str = "MUST", **extra: Any) -> dict[str, Any]:
    req: dict[str, Any] = {
        "id": req_id,
        "level": level,
        "area": "framing",
        "text": f"text of {req_id}",
        "source": f"seed sentence for {req_id}",
        "cases": cases,
        "not_checkable": None,
    }
    req.update(extra)
    return req


def sample_results() -> dict[str, Any]:
    """Results with one case per verdict, hostile strings and an oversized wire log entry."""
    big = bytes(range(256)) * 20  # 5120 bytes, over the 4 KiB cut
    cases = [
        _case(
            "cursus/framing/1",
            "PASS",
            ["CUR-FRAME-1"],
            wire_log=[
                {
                    "t": 0.0012,
                    "conn": 1,
                    "dir": "send",
                    "len": 8,
                    "hex": "000000044c495354",
                    "summary": "LIST",
                },
            ],
        ),
        _case(
            "cursus/framing/3",
            "FAIL",
            ["CUR-FRAME-3", "CUR-FRAME-4"],
            violated="CUR-FRAME-3",
            message=f"reply was {HOSTILE}\nsecond line",
            wire_log=[
                {
                    "t": 0.001,
                    "conn": 1,
                    "dir": "send",
                    "len": len(big),
                    "hex": big.hex(),
                    "summary": "oversize frame",
                },
                {
                    "t": 0.002,
                    "conn": 1,
                    "dir": "recv",
                    "len": 5,
                    "hex": "3c7363723e",
                    "summary": HOSTILE,
                },
                {
                    "t": 0.003,
                    "conn": 1,
                    "dir": "event",
                    "len": None,
                    "hex": "",
                    "summary": "closed by target",
                },
            ],
        ),
        _case(
            "cursus/ack/4",
            "WARN",
            ["CUR-ACK-4"],
            level="SHOULD",
            violated="CUR-ACK-4",
            message="[bold]not bold[/] ack late",
        ),
        _case("cursus/stream/2", "UNSUPPORTED", ["CUR-STREAM-2"], message="target has no STREAM"),
        _case(
            "cursus/group/1",
            "ERROR",
            ["CUR-GROUP-1"],
            message="ConnectionResetError: \x1b[31mreset\x00",
        ),
    ]
    requirements = [
        _req("CUR-FRAME-1", ["cursus/framing/1"]),
        _req("CUR-FRAME-3", ["cursus/framing/3"], text=f"frames {HOSTILE} must"),
        _req("CUR-FRAME-4", ["cursus/framing/3"]),
        _req("CUR-ACK-4", ["cursus/ack/4"], level="SHOULD"),
        _req("CUR-STREAM-2", ["cursus/stream/2"]),
        _req("CUR-GROUP-1", ["cursus/group/1"]),
        _req("CUR-TLS-1", [], not_checkable="needs a certificate"),
        _req("CUR-LIST-9", ["cursus/list/9"]),
    ]
    return {
        "tool": "broker-conformance",
        "version": "0.1.0",
        "protocol": "cursus",
        "revision": "doc",
        "target": "127.0.0.1:9000",
        "embedded": True,
        "quirks": [HOSTILE],
        "strict": False,
        "started": "2026-11-23T10:00:00Z",
        "duration_s": 3.2,
        "target_unresponsive": False,
        "counts": {"PASS": 1, "FAIL": 1, "WARN": 1, "UNSUPPORTED": 1, "ERROR": 1},
        "exit_code": 1,
        "cases": cases,
        "requirements": requirements,
    }


def _summary(results: dict[str, Any], **kwargs: Any) -> str:
    out = io.StringIO()
    print_summary(results, Console(file=out, width=200, color_system=None), **kwargs)
    return out.getvalue()


# --- shared helpers -----------------------------------------------------------------------


def test_printable_makes_controls_visible_and_cuts_to_one_line() -> None:
    assert printable("a\x1b[31mb\x00") == "a\\x1b[31mb\\x00"
    assert printable("first\nsecond", one_line=True) == "first…"
    assert printable("x" * 10, limit=5) == "xxxx…"
    assert printable("\ud800\u202e") == "\\ud800\\u202e"
    assert printable(None) == ""


def test_counts_come_from_the_cases_and_broken_requirements_sort_naturally() -> None:
    results = sample_results()
    results["cases"].append(
        _case("cursus/framing/10", "FAIL", ["CUR-FRAME-10"], violated="CUR-FRAME-10")
    )
    assert count_verdicts(results) == {
        "PASS": 1,
        "FAIL": 2,
        "WARN": 1,
        "UNSUPPORTED": 1,
        "ERROR": 1,
    }
    assert broken_requirements(results) == ["CUR-ACK-4", "CUR-FRAME-3", "CUR-FRAME-10"]
    assert sorted(["A-10", "A-9"], key=natural_key) == ["A-9", "A-10"]


def test_counts_fall_back_to_the_counts_field_without_cases() -> None:
    results = {
        "protocol": "cursus",
        "revision": "doc",
        "target": "h:1",
        "counts": {"PASS": 50, "FAIL": 1, "WARN": 0, "UNSUPPORTED": 1, "ERROR": 0},
    }
    assert total_line(results) == "cursus doc against h:1: 52 cases, 50 PASS, 1 FAIL, 1 UNSUPPORTED"


def test_rollup_is_the_worst_verdict_but_a_failure_only_counts_against_what_it_broke() -> None:
    results = sample_results()
    by_id = {c["case_id"]: c for c in results["cases"]}
    reqs = {r["id"]: r for r in results["requirements"]}
    assert requirement_rollup(reqs["CUR-FRAME-3"], by_id) == ("FAIL", ["cursus/framing/3"])
    assert requirement_rollup(reqs["CUR-FRAME-4"], by_id)[0] == "UNDECIDED"
    assert requirement_rollup(reqs["CUR-ACK-4"], by_id)[0] == "WARN"
    assert requirement_rollup(reqs["CUR-TLS-1"], by_id)[0] == "NOT CHECKABLE"
    assert requirement_rollup(reqs["CUR-LIST-9"], by_id) == ("NOT RUN", [])
    # a passing second case does not hide a failure
    by_id["cursus/framing/1"]["requirements"].append("CUR-FRAME-3")
    assert requirement_rollup(reqs["CUR-FRAME-3"], by_id)[0] == "FAIL"


# --- HTML ---------------------------------------------------------------------------------


def test_html_escapes_hostile_strings(tmp_path: Path) -> None:
    path = tmp_path / "out" / "report.html"
    write_html(sample_results(), path)
    page = path.read_text(encoding="utf-8")
    assert "<script" not in page.lower()
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page
    assert "\x1b" not in page and "\x00" not in page
    assert "ConnectionResetError: \\x1b[31mreset\\x00" in page
    assert not list(path.parent.glob(".*partial"))


def test_html_is_self_contained() -> None:
    results = sample_results()
    results["cases"][1]["message"] = 'see <img src="https://evil.example/x.png">'
    page = render_html(results)
    assert not re.search(r"""(?:src|href|action)\s*=\s*["']?\s*(?:https?:)?//""", page, re.I)
    assert not re.search(r"<(?:link|script|img|iframe|object)\b", page, re.I)
    assert "<style>" in page
    assert "default-src 'none'" in page
    internal = re.findall(r'href="([^"]*)"', page)
    assert internal and all(h.startswith("#case-") for h in internal)
    assert all(f'id="{h[1:]}"' in page for h in internal)


def test_html_header_counts_and_requirement_rollups() -> None:
    page = render_html(sample_results())
    for verdict in ("PASS", "FAIL", "WARN", "UNSUPPORTED", "ERROR"):
        assert f"1 {verdict}</span>" in page
    assert "127.0.0.1:9000" in page and "2026-11-23T10:00:00Z" in page and "3.20 s" in page
    row = re.search(r'<td class="mono">CUR-FRAME-4</td>.*?</tr>', page, re.S)
    assert row is not None and "UNDECIDED" in row.group() and "FAIL" not in row.group()
    row = re.search(r'<td class="mono">CUR-FRAME-3</td>.*?</tr>', page, re.S)
    assert row is not None and ">FAIL<" in row.group()
    assert "broken requirements: CUR-ACK-4, CUR-FRAME-3" in page


def test_html_folds_passing_cases_and_opens_the_others() -> None:
    page = render_html(sample_results())
    opens = re.findall(r'<details class="case" id="case-(\d+)"( open)?>', page)
    assert [(i, bool(o)) for i, o in opens] == [
        ("0", False),
        ("1", True),
        ("2", True),
        ("3", True),
        ("4", True),
    ]


def test_html_wire_log_wraps_and_cuts_hex() -> None:
    page = render_html(sample_results())
    assert "0000  00 00 00 04 4c 49 53 54" in page
    assert f"hex cut: first {HEX_ENTRY_LIMIT} of 5120 bytes shown" in page
    assert "1.2 ms" in page and "closed by target" in page
    view = wire_entry({"hex": (bytes(range(256)) * 20).hex(), "len": 5120})
    assert len(view["hex"]) == HEX_ENTRY_LIMIT // HEX_LINE_BYTES
    assert view["hex"][-1].startswith(f"{HEX_ENTRY_LIMIT - HEX_LINE_BYTES:04x}  e0 e1")


def test_hex_lines_hold_32_bytes_and_show_ascii() -> None:
    lines = hex_lines(b"A" * 33)
    assert len(lines) == 2
    assert lines[0] == "0000  " + " ".join(["41"] * 32) + "  " + "A" * 32
    assert lines[1].startswith("0020  41 ") and lines[1].endswith("  A")


def test_wire_entry_notes_bad_hex_and_a_shortened_log() -> None:
    assert wire_entry({"hex": "zz<b>", "len": 2})["notes"][0].startswith("the log's hex is not")
    assert wire_entry({"hex": "0102", "len": 10})["notes"] == ["the log kept 2 of 10 bytes"]


def test_html_survives_minimal_and_surrogate_results(tmp_path: Path) -> None:
    path = tmp_path / "r.html"
    write_html({"cases": [{"verdict": "bogus", "message": "\udcff"}]}, path)
    page = path.read_text(encoding="utf-8")
    assert ">ERROR<" in page and "\\udcff" in page
    assert "The results list no requirements." in page


# --- terminal summary ---------------------------------------------------------------------


def test_summary_lists_problems_totals_and_broken_requirements() -> None:
    text = _summary(sample_results())
    assert "cursus/framing/3" in text and "FAIL" in text
    assert "cursus/framing/1" not in text  # PASS cases only with verbose
    assert (
        "cursus doc against 127.0.0.1:9000: 5 cases, 1 PASS, 1 FAIL, 1 WARN, "
        "1 UNSUPPORTED, 1 ERROR" in text
    )
    assert "broken requirements: CUR-ACK-4, CUR-FRAME-3" in text
    assert "[bold]not bold[/] ack late" in text  # printed as is, not as markup
    assert "reply was <script>alert('x')</script>…" in text
    assert "\x1b" not in text
    assert "stopped answering" not in text


def test_summary_orders_worst_first_and_verbose_lists_every_case() -> None:
    text = _summary(sample_results())
    order = [
        text.index(c)
        for c in ("cursus/framing/3", "cursus/group/1", "cursus/ack/4", "cursus/stream/2")
    ]
    assert order == sorted(order)
    verbose = _summary(sample_results(), verbose=True)
    assert "cursus/framing/1" in verbose and "PASS" in verbose


def test_summary_says_when_the_target_stopped_answering() -> None:
    results = sample_results()
    results["target_unresponsive"] = True
    assert "target 127.0.0.1:9000 stopped answering" in _summary(results)


def test_summary_lines_stay_whole_on_a_narrow_console() -> None:
    results = sample_results()
    results["target_unresponsive"] = True
    out = io.StringIO()
    print_summary(results, Console(file=out, width=60, color_system=None))
    lines = out.getvalue().splitlines()
    assert any(
        line.endswith(": 5 cases, 1 PASS, 1 FAIL, 1 WARN, 1 UNSUPPORTED, 1 ERROR") for line in lines
    )
    assert any("stopped answering" in line and line.endswith("deadlines") for line in lines)


@pytest.mark.parametrize("verdict", ["PASS", "UNSUPPORTED"])
def test_clean_run_has_no_table_and_no_broken_line(verdict: str) -> None:
    results = copy.deepcopy(sample_results())
    results["cases"] = [_case("cursus/framing/1", verdict, ["CUR-FRAME-1"])]
    text = _summary(results)
    assert "broken requirements" not in text
    assert text.strip().splitlines()[-1].startswith("cursus doc against 127.0.0.1:9000: 1 cases")
    assert ("cursus/framing/1" in text) == (verdict != "PASS")


def test_summary_defaults_to_a_console_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    print_summary(sample_results())
    assert "broken requirements: CUR-ACK-4, CUR-FRAME-3" in capsys.readouterr().out


def test_summary_collapses_many_cases_with_the_same_message() -> None:
    results = sample_results()
    dead = "target 127.0.0.1:9000 is unresponsive: no reply within 5s"
    results["cases"] = [
        _case(f"cursus/x/{i}", "ERROR", ["CUR-X-1"], message=dead) for i in range(9)
    ]
    text = _summary(results)
    assert text.count("is unresponsive") == 3
    assert "and 6 more ERROR case(s) with the same message" in text
    assert _summary(results, verbose=True).count("is unresponsive") == 9
