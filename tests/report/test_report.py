"""The report model's helpers and the HTML report, rendered from sample results.

The sample (``tests/support/report_sample.py``) has a case of every verdict and hostile
strings where a target controls the text: the page must escape them, stay self-contained
(its one script allowed by hash), put failures first, anchor by case and requirement ID,
show every kept byte, and never call an UNSUPPORTED case "violated".
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

import jsonschema

from conformance.report import (
    SCHEMA_FILE,
    broken_requirements,
    count_verdicts,
    natural_key,
    printable,
    reason_of,
    requirement_rollup,
    target_line,
    total_line,
)
from conformance.report.html import render_html, write_html
from conformance.report.render import ResultsError, load_results
from tests.report.evidence_sample import LOST, fetch_case, kafka_results, with_evidence
from tests.support.report_sample import HOSTILE, case, sample_results

# --- the model ----------------------------------------------------------------------------


def test_printable_makes_controls_visible_and_cuts_to_one_line() -> None:
    assert printable("a\x1b[31mb\x00") == "a\\x1b[31mb\\x00"
    assert printable("first\nsecond", one_line=True) == "first…"
    assert printable("x" * 10, limit=5) == "xxxx…"
    assert printable("\ud800\u202e") == "\\ud800\\u202e"
    assert printable(None) == ""


def test_counts_come_from_the_cases_and_broken_requirements_sort_naturally() -> None:
    results = sample_results()
    results["cases"].append(
        case("cursus/framing/10", "FAIL", ["CUR-FRAME-10"], violated="CUR-FRAME-10")
    )
    assert count_verdicts(results) == {
        "PASS": 1,
        "FAIL": 2,
        "WARN": 1,
        "UNSUPPORTED": 1,
        "ERROR": 1,
    }
    assert broken_requirements(results) == ["CUR-ACK-9", "CUR-FRAME-3", "CUR-FRAME-10"]
    assert sorted(["A-10", "A-9"], key=natural_key) == ["A-9", "A-10"]


def test_target_line_names_the_target_label_and_its_address() -> None:
    results = sample_results()
    assert target_line(results) == "cursus doc against embedded (127.0.0.1:9000)"
    results["target_name"] = "127.0.0.1:9000"
    assert target_line(results) == "cursus doc against 127.0.0.1:9000"
    results = {"counts": {"PASS": 50, "FAIL": 1, "WARN": 0, "UNSUPPORTED": 1, "ERROR": 0}}
    assert total_line(results) == "? ? against ?: 52 cases, 50 PASS, 1 FAIL, 1 UNSUPPORTED"


def test_reason_drops_the_requirement_the_report_shows_beside_it() -> None:
    failing = sample_results()["cases"][1]
    assert reason_of(failing).startswith("reply_code 60, expected 0; reply was <script>")
    assert reason_of(failing, limit=10) == "reply_cod…"
    assert reason_of({"message": "CUR-X-1: no", "violated": None}) == "CUR-X-1: no"


def test_rollup_is_the_worst_verdict_but_a_failure_only_counts_against_what_it_broke() -> None:
    results = sample_results()
    by_id = {c["case_id"]: c for c in results["cases"]}
    reqs = {r["id"]: r for r in results["requirements"]}
    assert requirement_rollup(reqs["CUR-FRAME-3"], by_id) == ("FAIL", ["cursus/framing/3"])
    assert requirement_rollup(reqs["CUR-FRAME-4"], by_id)[0] == "UNDECIDED"
    # the WARN case broke CUR-ACK-9, which it does not declare: CUR-ACK-4 stays undecided
    assert requirement_rollup(reqs["CUR-ACK-4"], by_id)[0] == "UNDECIDED"
    assert requirement_rollup(reqs["CUR-ACK-9"], by_id)[0] == "WARN"
    assert requirement_rollup(reqs["CUR-TLS-1"], by_id)[0] == "NOT CHECKABLE"
    assert requirement_rollup(reqs["CUR-LIST-9"], by_id) == ("NOT RUN", [])
    by_id["cursus/framing/1"]["requirements"].append("CUR-FRAME-3")
    assert requirement_rollup(reqs["CUR-FRAME-3"], by_id)[0] == "FAIL"


def test_the_sample_follows_the_schema_and_the_schema_can_refuse() -> None:
    schema = json.loads(SCHEMA_FILE.read_text())
    jsonschema.validate(sample_results(), schema)
    bad = sample_results()
    bad["cases"][3]["violated"] = "CUR-STREAM-2"  # an UNSUPPORTED case violated nothing
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(bad))
    assert (errors and "None" in errors[0].message) or "null" in str(errors[0].schema)


def test_load_results_refuses_other_files_and_versions(tmp_path: Path) -> None:
    good = tmp_path / "run"
    good.mkdir()
    (good / "results.json").write_text(json.dumps(sample_results()))
    assert load_results(good)["protocol"] == "cursus"
    cases_ = [
        ("missing.json", None, "no such file"),
        ("junk.json", "{not json", "not a readable JSON file"),
        ("other.json", json.dumps({"cases": []}), "not the results of `conformance run`"),
        ("v2.json", json.dumps(sample_results() | {"schema_version": 2}), "schema version 2"),
    ]
    for name, text, said in cases_:
        path = tmp_path / name
        if text is not None:
            path.write_text(text)
        try:
            load_results(path)
        except ResultsError as exc:
            assert said in str(exc) and name in str(exc)
        else:
            raise AssertionError(f"{name} was accepted")


# --- HTML ---------------------------------------------------------------------------------


def _section(page: str, section_id: str) -> str:
    found = re.search(rf'<section id="{section_id}">(.*?)</section>', page, re.S)
    assert found is not None, section_id
    return found.group(1)


def test_html_escapes_hostile_strings(tmp_path: Path) -> None:
    path = tmp_path / "out" / "report.html"
    write_html(sample_results(), path)
    page = path.read_text(encoding="utf-8")
    assert page.lower().count("<script") == 1  # the page's own, last
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page
    assert "\x1b" not in page and "\x00" not in page
    assert "ConnectionResetError: \\x1b[31mreset\\x00" in page
    assert not list(path.parent.glob(".*partial"))


def test_html_is_self_contained_and_its_policy_allows_exactly_its_script() -> None:
    results = sample_results()
    results["cases"][1]["message"] = 'see <img src="https://evil.example/x.png">'
    page = render_html(results)
    assert not re.search(r"""(?:src|href|action)\s*=\s*["']?\s*(?:https?:)?//""", page, re.I)
    assert not re.search(r"<(?:link|img|iframe|object)\b", page, re.I)
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert policy is not None and "default-src 'none'" in policy.group(1)
    script = re.search(r"<script>(.*?)</script>", page, re.S)
    assert script is not None
    digest = base64.b64encode(hashlib.sha256(script.group(1).encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in policy.group(1)
    internal = set(re.findall(r'href="#([^"]*)"', page))
    ids = set(re.findall(r'\bid="([^"]*)"', page))
    assert {"cursus/framing/3", "CUR-FRAME-3", "CUR-ACK-9"} <= internal
    assert internal <= ids, internal - ids  # every link inside the page lands somewhere


def test_failures_come_first_one_block_per_finding_with_reason_evidence_and_command() -> None:
    page = render_html(with_evidence())
    assert page.index('<section id="failures">') < page.index('<section id="coverage">')
    failures = _section(page, "failures")
    order = [
        failures.index(x)
        for x in (
            "finding-FAIL-cursus-framing-3",
            "finding-ERROR-cursus-group-1",
            "finding-WARN-cursus-ack-4",
        )
    ]
    assert order == sorted(order), "FAIL, then ERROR, then WARN"
    assert "reply_code 60, expected 0; reply was &lt;script&gt;" in failures
    assert "frames &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; must" in failures
    assert "conformance run --protocol cursus --revision doc cursus/framing/3" in failures
    assert "cursus/framing/1" not in failures and "cursus/stream/2" not in failures


def test_the_evidence_is_the_request_beside_the_reply_with_the_judged_field_marked() -> None:
    failures = _section(render_html(with_evidence()), "failures")
    pair = re.search(r'<div class="pair">(.*?)</div>\n</div>', failures, re.S)
    assert pair is not None
    sides = re.findall(r'<div class="side dir-(\w+)">', pair.group(1))
    assert sides == ["send", "recv"]  # side by side, the request first
    assert (
        '<b>request</b> <span class="mono">+0.0010s #1 send 6120 bytes oversize frame'
        in pair.group(1)
    )
    assert "<b>reply</b>" in pair.group(1) and "judged: the frame as a whole" in pair.group(1)
    judged = re.search(r'<table class="fields judged">(.*?)</table>', pair.group(1), re.S)
    assert judged is not None
    assert re.findall(r"<td class=\"mono\">([^<]*)</td>", judged.group(1)) == [
        "reply_code",
        "60",
        "[0x00..0x01)",
    ]
    assert "<mark>3c</mark> 73" in pair.group(1)  # exactly the judged byte
    assert pair.group(1).count("<mark>") == 1


def test_a_case_without_evidence_highlights_nothing_and_says_so() -> None:
    page = render_html(sample_results())
    failures = _section(page, "failures")
    assert "The case named no evidence" in failures and "<mark>" not in failures
    body = re.search(r'id="cursus/framing/3".*?</details>', page, re.S)
    assert body is not None
    assert "This case named no evidence" in body.group() and "<mark>" not in body.group()


def test_versions_failing_alike_are_one_block_with_a_bug_report() -> None:
    cases = [fetch_case(v) for v in (4, 5, 6, 7, 9)]
    page = render_html(kafka_results(cases))
    failures = _section(page, "failures")
    assert failures.count('<div class="group fail"') == 1
    assert '<span class="mono">kafka/fetch/3 at v4–v7, v9</span>' in failures
    assert "(the same at v4–v7, v9)" in failures
    assert '<td class="mono">0x02</td>' in failures  # magic in hex, in the field table
    box = re.search(r"<textarea[^>]*>(.*?)</textarea>", failures, re.S)
    assert box is not None
    assert "## FAIL KAF-FETCH-3: kafka/fetch/3 at v4–v7, v9" in box.group(1)
    assert 'class="copy"' in failures
    # per-case counts stay per case
    assert page.count('data-verdict="FAIL" data-level=') == 5


def test_a_lost_target_is_a_banner_and_one_block() -> None:
    lost = [case(f"kafka/g/{i}", "ERROR", ["KAF-ERR-1"], lost=True) for i in range(6)]
    results = kafka_results([fetch_case(4), *lost], target_lost=LOST, target_unresponsive=True)
    page = render_html(results)
    banner = re.search(r'<div class="alert lost" id="target-lost"><b>(.*?)</b></div>', page)
    assert banner is not None and banner.group(1).startswith("target lost at +20.2 s, after case")
    assert page.index('id="target-lost"') < page.index('<section id="failures">')
    failures = _section(page, "failures")
    assert failures.count('<div class="group error"') == 1 and "6 cases lost" in failures


def test_passing_cases_show_summaries_only_and_compact_logs_are_not_called_cut() -> None:
    results = with_evidence()
    passing = results["cases"][0]
    passing["wire_compact"] = True
    passing["wire_log"][0]["hex"] = ""
    page = render_html(results)
    body = re.search(r'id="cursus/framing/1".*?</details>', page, re.S)
    assert body is not None
    assert "+0.0012s #1 send 8 bytes LIST" in body.group()
    assert '<pre class="hex">' not in body.group() and "cut:" not in body.group()


def test_a_clean_run_says_so_where_the_failures_would_be() -> None:
    results = sample_results()
    results["cases"] = [c for c in results["cases"] if c["verdict"] in ("PASS", "UNSUPPORTED")]
    assert "No failures" in _section(render_html(results), "failures")


def test_cases_are_anchored_by_id_and_only_problems_open() -> None:
    page = render_html(sample_results())
    opens = re.findall(
        r'<details class="case" id="([^"]+)" data-verdict="(\w+)"[^>]*?( open)?>', page
    )
    assert [(cid, v, bool(o)) for cid, v, o in opens] == [
        ("cursus/framing/1", "PASS", False),
        ("cursus/framing/3", "FAIL", True),
        ("cursus/ack/4", "WARN", True),
        ("cursus/stream/2", "UNSUPPORTED", False),
        ("cursus/group/1", "ERROR", True),
    ]
    rows = re.findall(r'<tr id="([^"]+)">', _section(page, "requirements"))
    assert "CUR-FRAME-3" in rows and "CUR-TLS-1" in rows


def test_unsupported_is_not_called_violated_and_an_undeclared_broken_requirement_is_shown() -> None:
    page = render_html(sample_results())
    unsupported = re.search(r'id="cursus/stream/2".*?</details>', page, re.S)
    assert unsupported is not None
    assert "violated" not in unsupported.group() and "broke" not in unsupported.group()
    assert "not supported (CUR-STREAM-2)" in unsupported.group()
    warn = re.search(r'id="cursus/ack/4".*?</details>', page, re.S)
    assert warn is not None
    assert 'broke (a SHOULD): <a class="mono violated" href="#CUR-ACK-9">' in warn.group()
    assert "leader names the leader as <code>HOST:PORT</code>" in warn.group()  # Markdown code


def test_wire_log_shows_every_kept_byte_16_a_row_and_marks_the_cut() -> None:
    page = render_html(sample_results())
    body = re.search(r'id="cursus/framing/3".*?</details>', page, re.S)
    assert body is not None
    rows = re.findall(r'<span class="off">([0-9a-f]{4})</span>  ((?:[0-9a-f]{2} ?)+)', body.group())
    kept = [r for r in rows if len(r[1].split()) == 16]
    assert len(kept) >= 5120 // 16  # every one of the 5120 kept bytes
    assert kept[-1][0] == f"{5120 - 16:04x}" and kept[-1][1].split()[-1] == "ff"
    assert "cut: the log kept 5120 of 6120 bytes" in body.group()


def test_filters_coverage_and_plots_are_there() -> None:
    page = render_html(sample_results())
    form = re.search(r'<form id="filters" hidden>(.*?)</form>', page, re.S)
    assert form is not None
    for verdict in ("PASS", "FAIL", "WARN", "UNSUPPORTED", "ERROR"):
        assert f'name="verdict" value="{verdict}"' in form.group(1)
    assert "<option>CUR-ACK-9</option>" in form.group(
        1
    ) and "<option>SHOULD</option>" in form.group(1)
    coverage = _section(page, "coverage")
    assert "requirements per level" in coverage and "requirements per area" in coverage
    assert coverage.count("<svg") == 2 and "framing: 1 FAIL" in coverage


def test_html_survives_minimal_and_surrogate_results(tmp_path: Path) -> None:
    path = tmp_path / "r.html"
    write_html({"cases": [{"verdict": "bogus", "message": "\udcff"}]}, path)
    page = path.read_text(encoding="utf-8")
    assert ">ERROR<" in page and "\\udcff" in page
    assert HOSTILE not in page


def test_the_schema_describes_evidence_lost_targets_and_compact_logs() -> None:
    schema = json.loads(SCHEMA_FILE.read_text())
    results = with_evidence() | {"target_lost": LOST, "target_unresponsive": True}
    results["cases"][4]["lost"] = True
    results["cases"][0]["wire_compact"] = True
    results["cases"][0]["wire_log"][0]["hex"] = ""
    jsonschema.validate(results, schema)
    jsonschema.validate(results | {"target_lost": None}, schema)
    validator = jsonschema.Draft202012Validator(schema)
    bad = with_evidence()
    bad["cases"][1]["evidence"] = []  # a FAIL names at least one entry
    assert list(validator.iter_errors(bad))
    bad = with_evidence()
    bad["cases"][0]["lost"] = True  # only an ERROR is lost
    assert list(validator.iter_errors(bad))
    bad = with_evidence() | {"target_lost": {"case": "x", "after": None, "t": 1.0}}
    assert list(validator.iter_errors(bad))  # no reason
