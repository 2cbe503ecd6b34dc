"""Sample results for the report tests: one case of every verdict, hostile strings where a
target controls the text, an oversized wire-log entry and a field the reason names."""

from __future__ import annotations

from typing import Any

from conformance.report import SCHEMA_ID, SCHEMA_VERSION, requirement_rollup

HOSTILE = "<script>alert('x')</script>"


def case(case_id: str, verdict: str, reqs: list[str], **extra: Any) -> dict[str, Any]:
    case: dict[str, Any] = {
        "case_id": case_id,
        "nodeid": f"conformance/suite/cursus/test_x.py::{case_id.replace('/', '_')}",
        "title": f"title of {case_id}",
        "area": case_id.split("/")[1],
        "requirements": reqs,
        "level": "MUST",
        "verdict": verdict,
        "violated": None,
        "unsupported": None,
        "message": "",
        "reproduce": f"conformance run --protocol cursus --revision doc {case_id}",
        "duration_s": 0.01,
        "wire_log": [],
    }
    case.update(extra)
    return case


def req(req_id: str, cases: list[str], level: str = "MUST", **extra: Any) -> dict[str, Any]:
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
    big = bytes(range(256)) * 20  # 5120 bytes kept of a 6120-byte frame
    cases = [
        case(
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
        case(
            "cursus/framing/3",
            "FAIL",
            ["CUR-FRAME-3", "CUR-FRAME-4"],
            violated="CUR-FRAME-3",
            message=f"CUR-FRAME-3: reply_code 60, expected 0; reply was {HOSTILE}\nsecond line",
            wire_log=[
                {
                    "t": 0.001,
                    "conn": 1,
                    "dir": "send",
                    "len": len(big) + 1000,
                    "hex": big.hex(),
                    "truncated": True,
                    "summary": "oversize frame",
                },
                {
                    "t": 0.002,
                    "conn": 1,
                    "dir": "recv",
                    "len": 5,
                    "hex": "3c7363723e",
                    "truncated": False,
                    "summary": HOSTILE,
                    "fields": [["reply_code", 0, 1, 60], ["rest", 1, 5, "scr>"]],
                },
                {
                    "t": 0.003,
                    "conn": 1,
                    "dir": "event",
                    "len": 0,
                    "hex": "",
                    "summary": "closed by target",
                },
            ],
        ),
        case(
            "cursus/ack/4",
            "WARN",
            ["CUR-ACK-4"],
            level="SHOULD",
            violated="CUR-ACK-9",
            message="[bold]not bold[/] ack late",
        ),
        case(
            "cursus/stream/2",
            "UNSUPPORTED",
            ["CUR-STREAM-2"],
            unsupported="CUR-STREAM-2",
            message="target has no STREAM",
        ),
        case(
            "cursus/group/1",
            "ERROR",
            ["CUR-GROUP-1"],
            message="ConnectionResetError: \x1b[31mreset\x00",
        ),
    ]
    requirements = [
        req("CUR-FRAME-1", ["cursus/framing/1"]),
        req("CUR-FRAME-3", ["cursus/framing/3"], text=f"frames {HOSTILE} must"),
        req("CUR-FRAME-4", ["cursus/framing/3"]),
        req("CUR-ACK-4", ["cursus/ack/4"], level="SHOULD"),
        req("CUR-ACK-9", [], level="SHOULD", text="leader names the leader as `HOST:PORT`"),
        req("CUR-STREAM-2", ["cursus/stream/2"]),
        req("CUR-GROUP-1", ["cursus/group/1"]),
        req("CUR-TLS-1", [], not_checkable="needs a certificate"),
        req("CUR-LIST-9", ["cursus/list/9"]),
    ]
    by_id = {c["case_id"]: c for c in cases}
    for row in requirements:
        row["verdict"] = requirement_rollup(row, by_id)[0]
    return {
        "schema": SCHEMA_ID,
        "schema_version": SCHEMA_VERSION,
        "tool": "broker-conformance",
        "version": "0.1.0",
        "protocol": "cursus",
        "revision": "doc",
        "target": "127.0.0.1:9000",
        "target_name": "embedded",
        "target_software": None,
        "embedded": True,
        "selection": [],
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
