"""A copy-paste bug report per finding (``bugs.md``): requirement, source, case, versions,
request and reply with the judged fields, expected vs actual and the reproduce command."""

from __future__ import annotations

from pathlib import Path

from conformance.report.bugs import render_bugs, write_bugs
from conformance.report.render import write_reports
from tests.report.evidence_sample import LOST, fetch_case, kafka_results, with_evidence
from tests.support.report_sample import case, sample_results


def _sections(text: str) -> list[str]:
    return text.split("\n\n---\n\n")


def test_one_section_per_finding_with_everything_a_bug_needs() -> None:
    cases = [fetch_case(v) for v in (4, 5, 6)]
    text = render_bugs(kafka_results(cases))
    assert text.startswith("# Findings: kafka doc against tansu (10.0.0.1:9092)\n\n")
    (bug,) = _sections(text)
    assert "## FAIL KAF-FETCH-3: kafka/fetch/3 at v4–v6" in bug
    assert "**Requirement** KAF-FETCH-3 (MUST): each partition carries the high watermark" in bug
    assert "**Source**: protocol guide, Fetch API" in bug
    assert "**Case** `kafka/fetch/3`: title of kafka/fetch/3@v4" in bug
    assert "**Versions** v4–v6 (3 cases, the same finding)" in bug
    assert (
        "**Expected vs actual**: Fetch v4: high watermark 4, expected 3 (the same at v4–v6)" in bug
    )
    assert "**Request** (wire-log entry 1): +0.0010s #1 send 20 bytes send frame" in bug
    assert "```text\n0000  00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f  ................" in bug
    assert "| `header.request_api_version` | 4 | [0x06..0x08) |" in bug
    assert "**Reply** (wire-log entry 2): +0.0020s #1 recv 17 bytes recv frame" in bug
    assert "| `responses[0].partitions[0].high_watermark` | 4 | [0x08..0x10) |" in bug
    assert "```sh\nconformance run --protocol kafka kafka/fetch/3@v4\n```" in bug
    assert "replaced by `kafka/fetch/3@v5`, `kafka/fetch/3@v6`." in bug


def test_a_frame_judged_whole_a_missing_evidence_and_a_lost_target_are_said() -> None:
    (bug, *_rest) = _sections(render_bugs(with_evidence()))
    assert "Judged: the frame as a whole." in bug  # the oversize request
    (old, *_rest) = _sections(render_bugs(sample_results()))
    assert "The case named no evidence" in old
    lost = [case(f"kafka/g/{i}", "ERROR", ["KAF-ERR-1"], lost=True) for i in range(2)]
    text = render_bugs(kafka_results(lost, target_lost=LOST))
    assert "## ERROR: 2 cases lost\n\ntarget lost at +20.2 s, after case cursus/group/1" in text
    assert "Cases that could not run: `kafka/g/0`, `kafka/g/1`" in text


def test_a_target_cannot_end_a_code_fence_and_a_clean_run_says_none(tmp_path: Path) -> None:
    results = with_evidence()
    results["cases"][1]["reproduce"] = "echo ```` done"
    bug = _sections(render_bugs(results))[0]
    assert "`````sh\necho ```` done\n`````" in bug
    clean = sample_results()
    clean["cases"] = [c for c in clean["cases"] if c["verdict"] == "PASS"]
    assert "No findings" in render_bugs(clean)
    write_bugs(clean, tmp_path / "x" / "bugs.md")
    assert (tmp_path / "x" / "bugs.md").read_text().startswith("# Findings: ")
    assert "bugs.md" in write_reports(with_evidence(), tmp_path / "all")
    assert "## FAIL CUR-FRAME-3" in (tmp_path / "all" / "bugs.md").read_text()


def test_each_distinct_answer_of_a_finding_shows_its_own_frames() -> None:
    """Grouping masks numbers: 'high watermark 4' at v4-v5 and 'high watermark 9' at v6 are
    one finding, and the bug report shows the frames of each answer, not only the first."""
    cases = [fetch_case(4), fetch_case(5), fetch_case(6, hwm=9)]
    (bug,) = _sections(render_bugs(kafka_results(cases)))
    assert "### Request and reply (kafka/fetch/3@v4)" in bug
    assert "### Request and reply (kafka/fetch/3@v6)" in bug
    assert "For v6: Fetch v6: high watermark 9, expected 8" in bug
    assert "| `responses[0].partitions[0].high_watermark` | 9 | [0x08..0x10) |" in bug
    assert "### Request and reply (kafka/fetch/3@v5)" not in bug  # the same answer as v4
