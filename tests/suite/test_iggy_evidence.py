"""An Iggy verdict names its evidence: the request and the reply (or the event) it was
decided on and the fields it judged, by the names the wire log's fields carry (``status``,
then the decoded paths such as ``messages[0].checksum``).

Each run is ``conformance run --protocol iggy`` against the embedded reference broker with
one spec quirk and only the cases that quirk breaks (each run starts a broker: keep them
few).  A last run, with no quirk, checks that the doc revision runs its own cases.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.evidence_runs import QuirkRuns, judged, reports_dir, value

RUNS: dict[str, tuple[str, ...]] = {
    "checksum-zero": ("iggy/send/6",),
    "error-with-payload": ("iggy/framing/3",),
    "next-rereads-stored": ("iggy/poll/6",),
    "unknown-code-closes": ("iggy/framing/8",),
    "names-not-resolved": ("iggy/identifiers/1",),
}
"""Each quirk and the cases it makes FAIL."""

RUNNER = QuirkRuns("iggy", RUNS, timeout=2)
run, case = RUNNER.run, RUNNER.case
tmp = reports_dir("iggy-evidence")


def test_a_wrong_checksum_names_that_messages_checksum(tmp: Path) -> None:
    c = case("checksum-zero", tmp, "iggy/send/6")
    assert c["verdict"] == "FAIL" and c["violated"] == "IGG-SEND-6"
    assert "checksum 0, expected XXH3-64" in c["message"]
    (request, _), (reply, fields) = judged(c)
    assert request["dir"] == "send" and request["summary"].startswith("frame: POLL_MESSAGES")
    assert reply["dir"] == "recv" and fields == ["messages[0].checksum"]
    assert value(reply, "messages[0].checksum") == 0


def test_an_error_reply_with_a_payload_names_its_status_and_payload(tmp: Path) -> None:
    c = case("error-with-payload", tmp, "iggy/framing/3")
    assert c["violated"] == "IGG-FRAME-3" and "expected length 0" in c["message"]
    (request, _), (reply, fields) = judged(c)
    assert "DELETE_STREAM" in request["summary"]
    assert fields == ["status", "payload"] and value(reply, "status") == 1009


def test_next_from_the_stored_offset_names_the_strategy_and_the_offsets_read(tmp: Path) -> None:
    c = case("next-rereads-stored", tmp, "iggy/poll/6")
    assert c["violated"] == "IGG-POLL-6"
    assert "returned offsets 2, 3, expected 3, 4" in c["message"]
    (request, asked), (reply, fields) = judged(c)
    assert asked == ["strategy.kind"] and value(request, "strategy.kind") == 5
    assert fields == ["messages[0].offset", "messages[1].offset"]
    assert [value(reply, f) for f in fields] == [2, 3]


def test_a_close_on_an_unknown_code_names_the_request_and_the_close(tmp: Path) -> None:
    c = case("unknown-code-closes", tmp, "iggy/framing/8")
    assert c["verdict"] == "FAIL" and c["violated"] == "IGG-FRAME-7"
    (request, _), (event, fields) = judged(c)
    assert request["dir"] == "send" and event["dir"] == "event" and fields == []
    assert "closed" in event["summary"]


def test_a_name_not_resolved_names_the_empty_reply(tmp: Path) -> None:
    c = case("names-not-resolved", tmp, "iggy/identifiers/1")
    assert c["violated"] == "IGG-ID-1"
    (request, _), (reply, fields) = judged(c)
    assert "GET_STREAM" in request["summary"] and fields == ["status"]
    assert value(reply, "status") == 0


def test_the_doc_revision_runs_its_own_cases_and_not_classics(tmp: Path) -> None:
    results = run("doc", tmp, "--revision", "doc")
    ids = {c["case_id"] for c in results["cases"]}
    assert {"iggy/streams/6", "iggy/topics/8", "iggy/send/8"} <= ids
    assert not ids & {"iggy/login/1", "iggy/send/1", "iggy/headers/1", "iggy/framing/6"}
    assert not [c["case_id"] for c in results["cases"] if c["verdict"] == "ERROR"]
