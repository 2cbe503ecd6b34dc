"""Failing cases grouped like bug reports: one finding per case, requirement and reason."""

from __future__ import annotations

from conformance.report import lost_line
from conformance.report.findings import (
    broken_by_level,
    compact_versions,
    findings,
    normalised,
    split_id,
)
from tests.report.evidence_sample import LOST, fetch_case, kafka_results
from tests.support.report_sample import case


def test_versions_compact_into_ranges() -> None:
    assert compact_versions(["v4", "v5", "v6", "v7", "v9"]) == "v4–v7, v9"
    assert compact_versions(["v16", "v4", "v5"]) == "v4–v5, v16"
    assert compact_versions(["v3"]) == "v3"
    assert split_id("kafka/fetch/2@v4") == ("kafka/fetch/2", "v4")
    assert split_id("cursus/ack/5") == ("cursus/ack/5", "")


def test_the_reason_is_normalised_by_its_own_version_then_numbers() -> None:
    assert normalised("Fetch v16: high watermark 5, expected 4", "v16") == (
        "Fetch v*: high watermark #, expected #"
    )
    assert normalised("v1 and v16", "v1") == "v* and v#"  # only the whole token is the version


def test_the_names_and_ids_a_case_makes_for_itself_do_not_split_a_finding() -> None:
    v0 = "Fetch v0 of topic nowhere-028b82a1c5: no partition 0 of topic nowhere-028b82a1c5"
    v1 = "Fetch v1 of topic nowhere-aae86b0a8d: no partition 0 of topic nowhere-aae86b0a8d"
    assert normalised(v0, "v0") == normalised(v1, "v1")
    assert normalised("topic 15338e89-e3b3-41b0-b33c-24c87085b167", "") == "topic #"
    assert normalised("group facade and deadbeef", "") == "group facade and deadbeef"  # words


def test_one_case_at_many_versions_failing_alike_is_one_finding() -> None:
    cases = [fetch_case(v) for v in (4, 5, 6, 7, 9)] + [fetch_case(16, hwm=9)]
    cases.append(fetch_case(8, message="KAF-FETCH-3: Fetch v8: no partition in the reply"))
    (group, other) = findings(kafka_results(cases))
    assert group.heading == "kafka/fetch/3 at v4–v7, v9, v16"
    assert group.reasons() == [
        ("Fetch v4: high watermark 4, expected 3", "v4–v7, v9"),
        ("Fetch v16: high watermark 9, expected 8", "v16"),
    ]
    assert other.heading == "kafka/fetch/3@v8"
    assert other.reasons() == [("Fetch v8: no partition in the reply", "v8")]


def test_a_different_requirement_or_verdict_is_another_finding_and_order_is_worst_first() -> None:
    warn = fetch_case(5, verdict="WARN", violated="KAF-GROUP-1")
    error = case("kafka/x/1", "ERROR", ["KAF-ERR-1"], message="tool broke")
    found = findings(kafka_results([warn, fetch_case(4), error, fetch_case(6)]))
    assert [(f.verdict, f.heading) for f in found] == [
        ("FAIL", "kafka/fetch/3 at v4, v6"),
        ("ERROR", "kafka/x/1"),
        ("WARN", "kafka/fetch/3@v5"),
    ]


def test_lost_errors_are_one_finding_and_the_loss_is_one_line() -> None:
    lost = [
        case(f"kafka/g/{i}", "ERROR", ["KAF-ERR-1"], lost=True, message=f"gone {i}")
        for i in range(5)
    ]
    results = kafka_results([fetch_case(4), *lost], target_lost=LOST, target_unresponsive=True)
    found = findings(results)
    assert [f.heading for f in found] == ["kafka/fetch/3@v4", "5 cases lost"]
    assert found[1].lost and len(found[1].cases) == 5
    assert lost_line(results) == (
        "target lost at +20.2 s, after case cursus/group/1 (first noticed by case "
        "cursus/group/2): no TCP connection: connection refused"
    )
    assert lost_line(results | {"target_lost": LOST | {"after": None}}) is not None
    assert "before any case ended" in str(
        lost_line(results | {"target_lost": LOST | {"after": None}})
    )


def test_known_failures_are_found_apart_and_every_broken_requirement_by_level() -> None:
    warn = fetch_case(5, verdict="WARN", violated="KAF-GROUP-1")
    results = kafka_results([fetch_case(4, expected=True), warn])
    assert [f.heading for f in findings(results)] == ["kafka/fetch/3@v5"]
    assert [f.heading for f in findings(results, known=True)] == ["kafka/fetch/3@v4"]
    assert broken_by_level(results) == {"MUST": ["KAF-FETCH-3"], "SHOULD": ["KAF-GROUP-1"]}


def test_lost_cases_are_listed_with_each_case_s_versions_together() -> None:
    from conformance.report.findings import compact_ids

    ids = ["kafka/groups/2", "kafka/groups/7@v4", "kafka/groups/7@v5", "kafka/groups/7@v9"]
    assert compact_ids(ids) == ["kafka/groups/2", "kafka/groups/7 at v4–v5, v9"]
