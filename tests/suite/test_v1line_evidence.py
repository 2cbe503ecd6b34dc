"""A V1 line verdict names its evidence: the request line and the reply line (or the event)
it was decided on and the fields it judged, by the annotator's names (``status``, ``code``,
``correlation_id`` and the ``key`` of each ``key=value`` in a reply; ``command`` and each
arg by its name in a request).

Each run is ``conformance run --protocol v1line`` against the embedded reference broker
with one spec quirk and only the cases that quirk breaks, in ``doc`` unless the quirk
applies in ``real`` only (each run starts a broker: keep them few).  Over every spec quirk,
every FAIL or WARN names entries that exist, opens with a request that was sent, and judges
fields the entries hold.

Verdict truth, last: the reference broker with one behaviour changed that the document (or,
in ``real``, the real broker) allows gets no FAIL from the cases that once failed it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conformance import protocols
from tests.support.cli import conformance
from tests.support.evidence_runs import QuirkRuns, evidence_problems, judged, reports_dir, value

RUNS: dict[str, tuple[str, ...]] = {
    "parse-error-echoes-cid": ("v1line/envelope/6", "v1line/envelope/11"),
    "answers-ping": ("v1line/ping/3",),
    "unknown-command-bad-request": ("v1line/envelope/14",),
    "acks-all-no-wait": ("v1line/replication/8", "v1line/replication/9"),
    "consume-past-hw": ("v1line/consume/2",),
    "follower-accepts-produce": ("v1line/replication/4",),
    "commit-any-partition": ("v1line/offsets/3",),
    "range-deals-round-robin": ("v1line/groups/6",),
    "isr-never-shrinks": ("v1line/replication/11", "v1line/replication/17"),
}
"""Each spec quirk and the cases it makes FAIL."""
REVISION_OF = {"answers-ping": "real"}
"""The revision a spec quirk runs in when not ``doc`` (the default): ``answers-ping`` breaks
V1L-PING-3, a requirement of ``real`` only (in ``doc`` PING is answered OK anyway)."""

RUNNER = QuirkRuns(
    "v1line",
    {
        quirk: (*(("--revision", REVISION_OF[quirk]) if quirk in REVISION_OF else ()), *cases)
        for quirk, cases in RUNS.items()
    },  # (the run's arguments: its revision, then its cases)
    timeout=2,
)
run, case = RUNNER.run, RUNNER.case
tmp = reports_dir("v1line-evidence")


def test_every_spec_quirk_is_run() -> None:
    spec = {q.name for q in protocols.get("v1line").quirks.values() if q.kind == "spec"}
    assert set(RUNS) == spec


def test_a_parse_error_echoing_the_cid_names_the_correlation_ids(tmp: Path) -> None:
    c = case("parse-error-echoes-cid", tmp, "v1line/envelope/11")
    assert c["verdict"] == "FAIL" and c["violated"] == "V1L-ENV-11"
    assert "correlation id '7', expected '0'" in c["message"]
    (request, asked), (reply, fields) = judged(c)
    assert request["dir"] == "send" and asked == ["correlation_id"]
    assert value(request, "correlation_id") == "7" and value(request, "version") == "V2"
    assert reply["dir"] == "recv" and fields == ["correlation_id"]
    assert value(reply, "correlation_id") == "7"


def test_a_ping_answered_in_real_names_the_status(tmp: Path) -> None:
    c = case("answers-ping", tmp, "v1line/ping/3")
    assert c["verdict"] == "FAIL" and c["violated"] == "V1L-PING-3"
    assert "expected ERR UNKNOWN_COMMAND" in c["message"], c["message"]
    (request, _), (reply, fields) = judged(c)
    assert request["dir"] == "send" and value(request, "command") == "PING"
    assert fields == ["status"] and value(reply, "status") == "OK"


def test_an_unknown_command_answered_bad_request_names_the_code(tmp: Path) -> None:
    c = case("unknown-command-bad-request", tmp, "v1line/envelope/14")
    assert c["violated"] == "V1L-ENV-14" and "error code BAD_REQUEST, expected" in c["message"]
    (request, _), (reply, fields) = judged(c)
    assert value(request, "command") == "FETCH_ALL"
    assert fields == ["code"] and value(reply, "code") == "BAD_REQUEST"


def test_acks_all_answered_at_once_names_the_ack_mode_and_the_status(tmp: Path) -> None:
    c = case("acks-all-no-wait", tmp, "v1line/replication/8")
    assert c["violated"] == "V1L-REPL-8" and "expected ERR REPLICATION_TIMEOUT" in c["message"]
    (request, asked), (reply, fields) = judged(c)
    assert asked == ["acks"] and value(request, "acks") == "acks=all"
    assert fields == ["status"] and value(reply, "status") == "OK"
    c = case("acks-all-no-wait", tmp, "v1line/replication/9")
    assert c["violated"] == "V1L-REPL-9" and "(in-sync followers)" in c["message"]
    (request, _), (reply, fields) = judged(c)
    assert value(request, "acks") == "acks=all" and fields == ["offset", "hw"]
    assert int(value(reply, "hw")) < int(value(reply, "offset"))


def test_a_record_above_hw_names_the_messages_and_the_hw(tmp: Path) -> None:
    c = case("consume-past-hw", tmp, "v1line/consume/2")
    assert c["violated"] == "V1L-CONS-2" and "expected no record above offset" in c["message"]
    (fetch, reported), (_, isr), (request, asked), (reply, fields) = judged(c)
    assert value(fetch, "command") == "REPLICA_FETCH" and reported == ["replica_id", "offset"]
    assert isr == ["isr", "hw"] and value(fetch, "replica_id") == "1"
    assert value(request, "command") == "CONSUME" and asked == ["partition", "offset"]
    assert fields == ["messages", "hw"]
    hw = int(value(reply, "hw"))
    offsets = [int(item.split(":")[0]) for item in value(reply, "messages").split(",")]
    assert max(offsets) > hw


def test_a_follower_that_appends_names_the_status_of_the_produce(tmp: Path) -> None:
    c = case("follower-accepts-produce", tmp, "v1line/replication/4")
    assert c["violated"] == "V1L-REPL-4" and "expected ERR NOT_LEADER" in c["message"]
    (request, _), (reply, fields) = judged(c)
    assert value(request, "command") == "PRODUCE"
    assert fields == ["status"] and value(reply, "status") == "OK"


def test_a_range_dealt_round_robin_names_every_members_assignment(tmp: Path) -> None:
    c = case("range-deals-round-robin", tmp, "v1line/groups/6")
    assert c["violated"] == "V1L-GRP-6" and "assigned=[0 2], expected [0 1]" in c["message"]
    frames = judged(c)
    assert [e["dir"] for e, _ in frames] == ["send", "recv", "send", "recv"]
    assert [f for _, f in frames] == [[], ["assigned"], [], ["assigned"]]


def test_a_follower_kept_in_the_isr_names_both_isr_lists(tmp: Path) -> None:
    c = case("isr-never-shrinks", tmp, "v1line/replication/11")
    assert c["violated"] == "V1L-REPL-11" and "still lists replica 1" in c["message"]
    frames = judged(c)
    assert [value(e, "command") for e, _ in frames if e["dir"] == "send"] == ["REPLICA_FETCH"] * 2
    assert [f for e, f in frames if e["dir"] == "recv"] == [["isr"], ["isr"]]
    c = case("isr-never-shrinks", tmp, "v1line/replication/17")
    assert c["violated"] == "V1L-REPL-9" and "expected OK (min ISR 2" in c["message"]
    (request, _), (reply, fields) = judged(c)
    assert value(request, "acks") == "acks=all" and fields == ["status", "code"]
    assert value(reply, "code") == "REPLICATION_TIMEOUT"


# ------------------------------------------------------------------ every verdict


def test_every_failure_of_every_spec_quirk_names_evidence_that_exists(tmp: Path) -> None:
    broken: dict[str, dict[str, Any]] = {}
    for quirk in RUNS:
        for c in run(quirk, tmp)["cases"]:
            if c["verdict"] in ("FAIL", "WARN"):
                broken[f"{quirk}: {c['case_id']}"] = c
    assert len(broken) >= len(RUNS), sorted(broken)
    problems = {k: p for k, c in broken.items() if (p := evidence_problems(c))}
    assert not problems, problems


def test_the_evidence_check_catches_what_it_is_for() -> None:
    log = [
        {"dir": "send", "conn": 1, "summary": "req", "hex": "56317c317c50494e477c"},
        {"dir": "recv", "conn": 1, "summary": "rep", "hex": "56317c317c4f4b"},
    ]
    log[0]["fields"] = [["command", 5, 9, "PING"]]
    log[1]["fields"] = [["status", 5, 7, "OK"]]
    good = {"wire_log": log, "evidence": [{"entry": 0, "fields": []}, {"entry": 1, "fields": []}]}
    assert evidence_problems(good) == [
        "no field judged, and the verdict is not on a close or silence"
    ]
    good["evidence"][1]["fields"] = ["status"]
    assert evidence_problems(good) == []
    for evidence in (
        [],
        [{"entry": 0, "fields": []}, {"entry": 1, "fields": ["code"]}],
        [{"entry": 1, "fields": ["status"]}],
        [{"entry": 0, "fields": []}, {"entry": 7, "fields": []}],
    ):
        assert evidence_problems({"wire_log": log, "evidence": evidence}), evidence


def test_each_revision_runs_its_own_cases_and_passes_the_reference_broker(tmp: Path) -> None:
    for revision, own, others in (
        ("doc", {"v1line/envelope/10", "v1line/groups/3", "v1line/replication/13",
                 "v1line/ping/1", "v1line/ping/2"},
         {"v1line/envelope/13", "v1line/groups/2", "v1line/replication/16", "v1line/ping/3"}),
        ("real", {"v1line/envelope/13", "v1line/groups/2", "v1line/replication/16",
                  "v1line/ping/3"},
         {"v1line/envelope/10", "v1line/groups/3", "v1line/replication/13", "v1line/ping/1",
          "v1line/ping/2"}),
    ):  # fmt: skip
        cases = run(revision, tmp, "--revision", revision)["cases"]
        ids = {c["case_id"] for c in cases}
        assert own <= ids and not ids & others, (revision, sorted(ids))
        assert {c["verdict"] for c in cases} == {"PASS"}, [
            (c["case_id"], c["message"]) for c in cases if c["verdict"] != "PASS"
        ]


# ------------------------------------------------------------------ verdict truth

VARIANT_PATCHES = """
import sys, time
from conformance.cli import main
from conformance.protocols.v1line import handler as H
from conformance.protocols.v1line.broker_groups import GroupCommands, Refused
from conformance.server import Outcome

variant = sys.argv.pop(1)
if variant == "close-after-parse-error":
    handle = H.V1Session.handle
    def closing(self, frame):
        out = handle(self, frame)
        parse_error = out.replies[:1] and out.replies[0].startswith(b"V1|0|ERR|")
        return Outcome(out.replies, close=True) if parse_error else out
    H.V1Session.handle = closing
elif variant == "additive-key":
    ok = H.V1Session.ok
    H.V1Session.ok = lambda self, request, values: ok(self, request, {**values, "broker": "b1"})
elif variant == "round-robin-placement":
    dealt = iter(range(10**9))
    H.fnv1a32 = lambda data: next(dealt)
elif variant == "reject-negative-fetch-offset":
    fetch = H.V1Session.do_replica_fetch
    def refusing(self, request, topic, partition, replica_id, offset):
        if offset < 0:
            raise Refused("BAD_REQUEST", "invalid offset")
        return fetch(self, request, topic, partition, replica_id, offset)
    H.V1Session.do_replica_fetch = refusing
elif variant == "join-no-create":
    join = GroupCommands.do_join
    def joining(self, request, group, topic, consumer, assignor):
        if not self.frontend.partition_count(topic, create=False):
            raise Refused("BAD_REQUEST", "unknown topic")
        return join(self, request, group, topic, consumer, assignor)
    GroupCommands.do_join = joining
elif variant == "err-then-close-long-line":
    H.V1Frontend.framing_error = lambda self, exc: Outcome(
        [b"V1|0|ERR|BAD_REQUEST|line too long\\n"], close=True
    )
elif variant == "stalled-acks-all":
    poll = H.AcksAllWait.poll
    def stalled(self, now):
        if not getattr(self, "stalled", False):
            object.__setattr__(self, "stalled", True)
            time.sleep(0.45)
            now = time.monotonic()
        return poll(self, now)
    H.AcksAllWait.poll = stalled
else:
    raise SystemExit(f"unknown variant {variant}")
sys.exit(main(["serve", "--protocol", "v1line", *sys.argv[1:]]))
"""
"""The reference broker with one behaviour changed that the document (or the real broker, in
``real``) allows: closing after a parse error (``doc``), an extra key in replies ("may evolve
additively"), records dealt round robin (V1L-PROD-9 is a SHOULD), a negative REPLICA_FETCH
offset refused, JOIN of a topic nobody produced to refused, an error line before closing on a
line over 64 KiB, and a broker stalled past the acks=all timeout."""

VARIANTS = {
    "close-after-parse-error": ("doc", "v1line/envelope", "v1line/ping"),
    "additive-key": ("doc", "v1line/consume", "v1line/groups"),
    "round-robin-placement": ("doc", "v1line/replication", "v1line/consume/2"),
    "reject-negative-fetch-offset": ("doc", "v1line/replication/11", "v1line/replication/12"),
    "join-no-create": ("doc", "v1line/groups", "v1line/offsets", "v1line/envelope/16"),
    "err-then-close-long-line": ("real", "v1line/envelope/13"),
    "stalled-acks-all": ("doc", "v1line/replication/9", "v1line/replication/17"),
}
"""Each variant: the revision it runs in and the cases it once failed wrongly."""
TIMING = (
    "--ack-timeout-ms",
    "400",
    "--replica-lag-timeout-ms",
    "500",
    "--session-timeout-ms",
    "600",
)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_broker_the_document_allows_fails_no_case(tmp_path: Path, variant: str) -> None:
    revision, *cases = VARIANTS[variant]
    script = tmp_path / "variant.py"
    script.write_text(VARIANT_PATCHES)
    out = tmp_path / "broker.out"
    args = [sys.executable, str(script), variant, "--port", "0", "--revision", revision, *TIMING]
    with out.open("wb") as f:
        proc = subprocess.Popen(args, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        end = time.monotonic() + 20
        while (m := re.search(r"serving v1line on (\S+:\d+)", out.read_text())) is None:
            assert proc.poll() is None and time.monotonic() < end, out.read_text()
            time.sleep(0.02)
        reports = tmp_path / "reports"
        run = conformance(
            tmp_path, "run", "--protocol", "v1line", "--revision", revision,
            "--target", m.group(1), *TIMING, "--reports", str(reports), "-q", *cases,
        )  # fmt: skip
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
        proc.wait(10)
    ran = json.loads((reports / "results.json").read_text())["cases"]
    assert ran, run.stdout + run.stderr
    wrong = {c["case_id"]: c["message"] for c in ran if c["verdict"] in ("FAIL", "ERROR")}
    assert not wrong, wrong
