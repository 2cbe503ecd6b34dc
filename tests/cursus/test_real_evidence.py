"""Revision real: the annotator reads the real layouts, and a verdict of a real case names its
evidence (the frames it decided on and the fields it judged, by the annotator's names).

Each run is ``conformance run --protocol cursus --revision real`` against the embedded broker
with one spec quirk of revision real and only the cases it breaks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance import protocols
from conformance.protocols.cursus import real_codec
from conformance.protocols.cursus.messages import Batch, Message
from conformance.spec import requirements
from tests.support.evidence_runs import QuirkRuns, evidence_problems, judged, reports_dir, value

ANNOTATE = protocols.get("cursus").annotate

RUNS: dict[str, tuple[str, ...]] = {
    "real-ack-keeps-empty-fields": ("cursus/rack/2",),
    "real-keepalive-text": ("cursus/rstreaming/3",),
    "real-consume-ignores-commit": ("cursus/rtext/8",),
}
RUNNER = QuirkRuns("cursus", {}, timeout=1)
tmp = reports_dir("real-evidence")


def run(quirk: str, tmp: Path) -> dict[str, Any]:
    return RUNNER.run(quirk, tmp, "--revision", "real", "--quirk", quirk, *RUNS[quirk])


def test_every_spec_quirk_of_revision_real_is_run() -> None:
    reqs = requirements("cursus")
    real = {
        q.name
        for q in protocols.get("cursus").quirks.values()
        if q.kind == "spec" and all(reqs[r].revisions == ("real",) for r in q.breaks)
    }
    assert real == set(RUNS)


@pytest.mark.parametrize("quirk", sorted(RUNS))
def test_each_failure_names_frames_and_fields_the_wire_log_has(quirk: str, tmp: Path) -> None:
    cases = run(quirk, tmp)["cases"]
    failed = [c for c in cases if c["verdict"] == "FAIL"]
    assert [c["case_id"] for c in failed] == list(RUNS[quirk])
    for c in failed:
        assert evidence_problems(c) == [], c["case_id"]


def test_an_ack_with_empty_fields_names_them(tmp: Path) -> None:
    (c,) = [c for c in run("real-ack-keeps-empty-fields", tmp)["cases"] if c["verdict"] == "FAIL"]
    assert "leader, error" in c["message"]
    (_, _), (reply, fields) = judged(c)
    assert fields == ["leader", "error"] and value(reply, "leader") == ""


def test_a_text_keepalive_names_the_frame(tmp: Path) -> None:
    (c,) = [c for c in run("real-keepalive-text", tmp)["cases"] if c["verdict"] == "FAIL"]
    assert c["violated"] == "CUR-RSTREAM-3" and "'KEEPALIVE'" in c["message"]


# ---------------------------------------------------------------- the annotator


def test_a_real_batch_is_annotated_by_the_real_layout() -> None:
    b = Batch("t", "3", "all", True, 1, 1, (Message(seq_num=1, key="k", payload=b"hi"),))
    a = ANNOTATE(real_codec.encode_batch(b), "request", [])
    got = {f.name: f.value for f in a.fields}
    assert a.summary == "real batch t/3 acks=all 1 message(s)"
    assert (got["partition"], got["acks.len"], got["message[0].payload"]) == (3, 3, "hi")


def test_an_envelope_and_its_keys_are_named() -> None:
    a = ANNOTATE(real_codec.envelope("JOIN_GROUP topic=t group=g member=m", "admin"), "request", [])
    assert [(f.name, f.value) for f in a.fields] == [
        ("topic_len", 5),
        ("envelope_topic", "admin"),
        ("command", "JOIN_GROUP"),
        ("topic", "t"),
        ("group", "g"),
        ("member", "m"),
    ]


def test_reply_words_keep_a_bracketed_value_whole_and_a_keepalive_is_empty() -> None:
    a = ANNOTATE(b"OK generation=1 member=m-1 assignments=[0 1]", "reply", [])
    assert [f.value for f in a.fields][-1] == "assignments=[0 1]"
    assert ANNOTATE(b"", "reply", []).summary == "empty frame (keepalive)"
