"""JUnit XML from the report model, read back with junitparser (what CI servers read)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from junitparser import Error, Failure, JUnitXml, Skipped, TestCase, TestSuite

from conformance.report import lost_line
from conformance.report.junit import write_junit, write_unreachable
from tests.report.evidence_sample import LOST, fetch_case, kafka_results, with_evidence
from tests.support.report_sample import case, sample_results


def _read(results: dict[str, Any], tmp_path: Path) -> tuple[TestSuite, dict[str, TestCase]]:
    path = tmp_path / "junit.xml"
    write_junit(results, path)
    xml = JUnitXml.fromfile(str(path))
    suites = list(xml)
    assert len(suites) == 1
    suite = suites[0]
    by_id = {tc.name.split(": ", 1)[0]: tc for tc in suite}
    return suite, by_id


def _props(tc: TestCase) -> dict[str, str]:
    return {p.get("name", ""): p.get("value", "") for p in tc._elem.iter("property")}


def test_names_are_case_ids_and_titles_and_the_suite_is_protocol_and_target(
    tmp_path: Path,
) -> None:
    suite, by_id = _read(sample_results(), tmp_path)
    assert suite.name == "cursus embedded"
    assert list(by_id) == [
        "cursus/framing/1",
        "cursus/framing/3",
        "cursus/ack/4",
        "cursus/stream/2",
        "cursus/group/1",
    ]
    assert by_id["cursus/framing/3"].name == "cursus/framing/3: title of cursus/framing/3"
    assert by_id["cursus/framing/3"].classname == "cursus.framing"
    renamed = sample_results() | {"target_name": "mybroker 2.1"}
    assert _read(renamed, tmp_path)[0].name == "cursus mybroker 2.1"


def test_each_verdict_has_its_junit_outcome(tmp_path: Path) -> None:
    suite, by_id = _read(sample_results(), tmp_path)
    assert by_id["cursus/framing/1"].is_passed
    (failure,) = by_id["cursus/framing/3"].result
    assert isinstance(failure, Failure) and failure.type == "CUR-FRAME-3"
    assert failure.message.startswith("CUR-FRAME-3: reply_code 60, expected 0")
    assert "frames <script>alert('x')</script> must" in (failure.text or "")
    assert "reproduce: conformance run" in (failure.text or "")
    (warn,) = by_id["cursus/ack/4"].result  # WARN is not a plain pass: a skip CI shows
    assert isinstance(warn, Skipped) and warn.type == "WARN"
    assert warn.message == "WARN: CUR-ACK-9 (SHOULD) broken: [bold]not bold[/] ack late"
    (skipped,) = by_id["cursus/stream/2"].result
    assert isinstance(skipped, Skipped) and skipped.type == "UNSUPPORTED"
    assert skipped.message.startswith("UNSUPPORTED: ")
    (error,) = by_id["cursus/group/1"].result
    assert isinstance(error, Error)
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (5, 1, 1, 2)


def test_strict_fails_a_warn_and_a_known_failure_is_an_xfail(tmp_path: Path) -> None:
    results = sample_results() | {"strict": True}
    results["cases"][1]["expected"] = True
    suite, by_id = _read(results, tmp_path)
    (warn,) = by_id["cursus/ack/4"].result
    assert isinstance(warn, Failure) and warn.type == "CUR-ACK-9"
    (known,) = by_id["cursus/framing/3"].result
    assert isinstance(known, Skipped) and known.type == "xfail"  # not UNSUPPORTED's type
    assert known.message.startswith("known failure (FAIL, baseline): CUR-FRAME-3: ")
    props = _props(by_id["cursus/framing/3"])
    assert props["known_failure"] == "true"
    assert (suite.failures, suite.skipped) == (1, 2)


def test_a_failure_holds_its_evidence_and_system_out_the_whole_kept_wire_log(
    tmp_path: Path,
) -> None:
    _, by_id = _read(with_evidence(), tmp_path)
    (failure,) = by_id["cursus/framing/3"].result
    assert "evidence:\n+0.0010s #1 send 6120 bytes oversize frame" in (failure.text or "")
    assert "  > reply_code = 60  [0x00..0x01)" in (failure.text or "")
    out = by_id["cursus/framing/3"].system_out or ""
    assert "+0.0010s #1 send 6120 bytes oversize frame" in out
    assert "13f0  f0 f1 f2 f3 f4 f5 f6 f7 f8 f9 fa fb fc fd fe ff" in out  # byte 5119
    assert "(cut: the log kept 5120 of 6120 bytes)" in out
    assert "+0.0030s #1 event closed by target" in out
    assert "\x1b" not in (by_id["cursus/group/1"].system_out or "")
    passing = by_id["cursus/framing/1"].system_out or ""
    assert passing.endswith("wire log (summaries):\n+0.0012s #1 send 8 bytes LIST")


def test_a_lost_target_is_a_suite_property_and_each_lost_case_says_so(tmp_path: Path) -> None:
    lost = [
        case(f"kafka/g/{i}", "ERROR", ["KAF-ERR-1"], lost=True, message="gone") for i in range(3)
    ]
    results = kafka_results([fetch_case(4), *lost], target_lost=LOST, target_unresponsive=True)
    suite, by_id = _read(results, tmp_path)
    said = lost_line(results)
    assert said is not None and said.startswith("target lost at +20.2 s, after case cursus/group/1")
    assert {p.name: p.value for p in suite.properties()}["target_lost"] == said
    (error,) = by_id["kafka/g/1"].result
    assert isinstance(error, Error) and error.type == "target-lost"
    assert error.message == f"{said}; this case could not run: gone"
    assert _props(by_id["kafka/g/1"])["target_lost"] == said
    assert (suite.tests, suite.failures, suite.errors) == (4, 1, 3)


def test_an_unreachable_target_is_one_error_testcase(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    write_unreachable(
        path, "kafka", "127.0.0.1:1", "tansu", "cannot reach target 127.0.0.1:1: Connection refused"
    )
    (suite,) = list(JUnitXml.fromfile(str(path)))
    (tc,) = list(suite)
    assert suite.name == "kafka tansu" and (suite.tests, suite.errors) == (1, 1)
    assert tc.name == "kafka/target: the target is reachable"
    (error,) = tc.result
    assert isinstance(error, Error) and error.type == "unreachable"
    assert error.message == "cannot reach target 127.0.0.1:1: Connection refused"
