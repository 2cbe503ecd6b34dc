"""Hand-made results with evidence, lost targets, compact and per-version cases, built on
``tests/support/report_sample.py`` (the format the suite writes: ``evidence``, ``lost``,
``target_lost``, ``wire_compact``)."""

from __future__ import annotations

from typing import Any

from tests.support.report_sample import case, req, sample_results

LOST = {
    "case": "cursus/group/2",
    "after": "cursus/group/1",
    "t": 20.25,
    "reason": "no TCP connection: connection refused",
}


def with_evidence() -> dict[str, Any]:
    """The sample, its FAIL naming the oversize request and the reply's reply_code."""
    results = sample_results()
    failing = results["cases"][1]
    failing["evidence"] = [{"entry": 0, "fields": []}, {"entry": 1, "fields": ["reply_code"]}]
    return results


def kafka_entry(
    direction: str, data: bytes, fields: list[list[Any]], t: float = 0.001
) -> dict[str, Any]:
    return {
        "t": t,
        "conn": 1,
        "dir": direction,
        "len": len(data),
        "hex": data.hex(),
        "truncated": False,
        "summary": f"{direction} frame",
        "fields": fields,
    }


def fetch_case(version: int, hwm: int = 4, **extra: Any) -> dict[str, Any]:
    """``kafka/fetch/3@v<version>`` failing on the reply's high watermark."""
    request = kafka_entry("send", bytes(range(20)), [["header.request_api_version", 6, 8, version]])
    reply = bytes(8) + hwm.to_bytes(8, "big") + b"\x02"
    fields = [
        ["header.correlation_id", 0, 4, 7],
        ["responses[0].partitions[0].error_code", 4, 6, 0],
        ["responses[0].partitions[0].high_watermark", 8, 16, hwm],
        ["responses[0].records.batch[0].magic", 16, 17, 2],
    ]
    cid = f"kafka/fetch/3@v{version}"
    made = case(
        cid,
        "FAIL",
        ["KAF-FETCH-3"],
        violated="KAF-FETCH-3",
        message=f"KAF-FETCH-3: Fetch v{version}: high watermark {hwm}, expected {hwm - 1}",
        reproduce=f"conformance run --protocol kafka {cid}",
        wire_log=[
            {"t": 0.0, "conn": 1, "dir": "event", "len": 0, "hex": "", "summary": "connected"},
            request,
            kafka_entry("recv", reply, fields, t=0.002),
        ],
        evidence=[
            {"entry": 1, "fields": ["header.request_api_version"]},
            {"entry": 2, "fields": ["responses[0].partitions[0].high_watermark"]},
        ],
    )
    made.update(extra)
    return made


def kafka_results(cases: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    results = sample_results()
    results.update(protocol="kafka", cases=cases, target_name="tansu", target="10.0.0.1:9092")
    results["requirements"] = [
        req(
            "KAF-FETCH-3",
            [],
            text="each partition carries the high watermark",
            source="protocol guide, Fetch API",
        ),
        req("KAF-GROUP-1", [], level="SHOULD", text="groups text"),
        req("KAF-ERR-1", [], text="error codes"),
    ]
    results.update(extra)
    return results
