"""A Cursus verdict names its evidence: the request and the reply (or the event) it was
decided on and the fields it judged, by the names the wire log's fields carry.

Each run is ``conformance run`` against the embedded reference broker with one spec
quirk and only the cases that quirk breaks (each run starts a broker: keep them few).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance import protocols
from conformance.client import WireLog
from conformance.evidence import Evidence
from conformance.protocols.cursus import codec
from conformance.protocols.cursus.messages import BatchAck
from conformance.report import wire
from conformance.suite.cursus.reads import Read
from conformance.suite.wire_context import WireContext
from tests.support.evidence_runs import QuirkRuns, judged, reports_dir, value

RUNS: dict[str, tuple[str, ...]] = {
    "ack-last-offset-off-by-one": ("cursus/ack/5",),
    "ack-seq-from-messages": ("cursus/ack/7",),
    "consume-from-zero": ("cursus/text/6", "cursus/batch/1", "cursus/batch/10"),
    "leave-without-rebalance": ("cursus/groups/3",),
    "heartbeat-hides-rebalance": ("cursus/groups/4",),
    "error-prefix-lowercase": ("cursus/errors", "cursus/conventions/7"),
    "create-single-partition": ("cursus/text/5", "cursus/groups/2"),
    "magic-first-byte-only": ("cursus/text/3", "cursus/text/4"),
    "hang-on-empty-frame": ("cursus/errors/6",),
}
"""Each quirk and the cases it makes FAIL or WARN."""

RUNNER = QuirkRuns("cursus", RUNS, timeout=1)
run, case = RUNNER.run, RUNNER.case
tmp = reports_dir("evidence")


def test_a_wrong_last_offset_names_last_offset_in_that_ack(tmp: Path) -> None:
    c = case("ack-last-offset-off-by-one", tmp, "cursus/ack/5")
    assert c["verdict"] == "FAIL" and "last_offset 3, expected 2" in c["message"]
    (request, asked), (reply, fields) = judged(c)
    assert request["dir"] == "send" and "3 message(s)" in request["summary"] and asked == []
    assert reply["dir"] == "recv" and reply["summary"].startswith('\'{"status":"OK"')
    assert fields == ["last_offset"] and value(reply, "last_offset") == 3


def test_an_ack_seq_range_names_the_header_range_and_the_acks(tmp: Path) -> None:
    c = case("ack-seq-from-messages", tmp, "cursus/ack/7")
    (request, asked), (reply, fields) = judged(c)
    assert request["dir"] == "send" and request["summary"].startswith("frame: batch")
    assert asked == fields == ["seq_start", "seq_end"]
    assert (value(request, "seq_start"), value(request, "seq_end")) == (100, 102)
    assert (value(reply, "seq_start"), value(reply, "seq_end")) == (7, 9)


def test_consume_from_the_wrong_offset_names_the_asked_offset_and_the_offsets_read(
    tmp: Path,
) -> None:
    c = case("consume-from-zero", tmp, "cursus/text/6")
    assert c["violated"] == "CUR-TEXT-4"
    (request, asked), (reply, fields) = judged(c)
    assert request["summary"].endswith(" 0 2'") and asked == ["offset"]
    assert value(request, "offset") == "2"
    assert reply["dir"] == "recv" and reply["summary"].startswith("batch ")
    assert fields == [f"message[{i}].offset" for i in range(5)]
    assert [value(reply, f) for f in fields] == [0, 1, 2, 3, 4]


def test_a_silence_names_the_request_and_the_deadline(tmp: Path) -> None:
    c = case("hang-on-empty-frame", tmp, "cursus/errors/6")
    assert c["verdict"] == "WARN"
    (request, asked), (event, fields) = judged(c)
    assert request["dir"] == "send" and request["summary"] == "frame: empty frame" and asked == []
    assert event["dir"] == "event" and "deadline" in event["summary"] and fields == []


def test_a_member_that_left_names_the_sync_and_its_ok(tmp: Path) -> None:
    c = case("leave-without-rebalance", tmp, "cursus/groups/3")
    (request, asked), (reply, fields) = judged(c)
    assert request["summary"].startswith("frame: 'SYNC_GROUP") and asked == ["memberId"]
    assert fields == ["word0"] and value(reply, "word0") == "OK"


def test_a_comparison_names_both_acks_and_only_fields_the_log_holds() -> None:
    log = WireLog(annotate=WireContext(protocols.get("cursus")).fields)
    reads = []
    for offset in (1, 2):
        sent = log.add(1, "send", codec.frame(b"CONSUME t 0 0"))
        ack = codec.encode_ack(BatchAck("OK", offset))
        reads.append(Read(ack, Evidence.of(sent, log.add(1, "recv", ack)), ack, log))
    both = reads[0].at("last_offset", "no_such_field") + reads[1].at("last_offset")
    assert both.as_list() == [
        {"entry": 0, "fields": []},
        {"entry": 1, "fields": ["last_offset"]},
        {"entry": 2, "fields": []},
        {"entry": 3, "fields": ["last_offset"]},
    ]
    assert reads[0].at(asked=("offset",)).frames[0].fields == ("offset",)


def _has(entry: dict[str, Any], name: str) -> bool:
    """``name`` stands for at least one field ``entry`` has, by the reports' own rule
    (:func:`conformance.report.wire.resolved`: the field itself, an array's count, the
    fields under a struct), so a report highlights something for it."""
    fields = wire.entry(entry).fields
    listed = {f.name for f in fields}
    return any(n in listed for n in wire.resolved((name,), fields))


@pytest.mark.parametrize("quirk", sorted(RUNS))
def test_every_failure_names_frames_and_fields_the_wire_log_has(quirk: str, tmp: Path) -> None:
    found = [c for c in run(quirk, tmp)["cases"] if c["verdict"] in ("FAIL", "WARN")]
    assert found, f"{quirk} broke none of {RUNS[quirk]}"
    for c in found:
        where, log = c["case_id"], c["wire_log"]
        assert c["evidence"], f"{where}: no evidence"
        assert all(0 <= j["entry"] < len(log) for j in c["evidence"]), where
        frames = judged(c)
        assert frames[0][0]["dir"] == "send", f"{where}: evidence does not start at a request"
        sent: set[int] = set()
        for entry, fields in frames:
            if entry["dir"] == "send":
                sent.add(entry["conn"])
            else:  # a reply or an event is shown beside the request that provoked it
                assert entry["dir"] in ("recv", "event") and entry["conn"] in sent, where
            missing = [f for f in fields if not _has(entry, f)]
            assert not missing, f"{where}: {missing} not among the fields of {entry['summary']}"
        last, judged_last = frames[-1]
        if last["dir"] == "recv" and last.get("fields"):
            assert judged_last, f"{where}: the reply is named but none of its fields"
