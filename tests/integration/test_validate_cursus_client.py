"""The official Cursus client (``cursus-client`` 0.1.1) validated by ``serve --protocol
cursus --validate``, in both revisions.

Under ``--revision real`` and a fault plan (a NOT_LEADER on a batch, a reset during a
later batch's reply, a slow METADATA, a JOIN_GROUP reply in five pieces, a GEN_MISMATCH on
a heartbeat) its Producer produces idempotently and its Consumer reads the topic in a
group.  It copes with every fault: it re-sends the refused batch and the one whose reply
was cut, reads the slow and split replies, and re-joins after GEN_MISMATCH; every
acknowledged message is in the log once and is read once.  What it breaks are findings
about it, kept here so that a change is noticed:

* CUR-CLI-5 (MUST): its LEAVE_GROUP carries no ``generation=`` (cursus/protocol/
  command.py ``leave_group``), which the real broker requires: its leave always fails;
* CUR-CLI-11 (SHOULD): it flags batches idempotent but creates the topic without
  ``idempotent=true``, and the real standalone broker deduplicates by the topic's flag only;
* CUR-CLI-12 (MUST), with ``Acks.NONE``: the real broker answers an acks-0 batch with a
  bare ``OK``, which the client cannot parse as a JSON ack, so it sends the stored batch
  again (the log then holds it twice).

Under ``--revision doc`` the same client breaks CUR-CLI-2 (its text commands come in the
real envelope, ``00 00 JOIN_GROUP topic=...``, where the document has positional
commands) and CUR-CLI-6 (its batches carry an i32 partition and a u8 acks length where the
document has u16-length strings), and gets nothing done.

Not covered here: the client's gzip (one-sided: FACTS 1.3) and its polling consumer.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from pathlib import Path

import pytest
from cursus import Acks, Producer, ProducerConfig

from tests.support.cursus_validation import run_official_client, stored
from tests.support.validating import validating

pytestmark = [pytest.mark.slow]

PLAN = """\
faults:
  - {on: BATCH, error: NOT_LEADER}
  - {on: METADATA, slow: 300}
  - {on: JOIN_GROUP, split: 5}
  - {on: HEARTBEAT, error: GEN_MISMATCH, after: 1}
  - {on: BATCH, reset: 0.5, after: 2}
"""
REACTIONS = {
    "BATCH: answer NOT_LEADER": "re-sent the same",
    "METADATA: hold the reply 300 ms": "reconnected",
    "JOIN_GROUP: write the reply in 5 pieces": "refreshed metadata",
    "HEARTBEAT: answer GEN_MISMATCH": "re-joined",
    "BATCH: reset the connection after 0.5": "re-sent the same",
}
COUNT = 30


def _plan(tmp_path: Path) -> Path:
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN, encoding="utf-8")
    return plan


def test_cursus_client_under_faults_in_revision_real(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    args = ("--revision", "real", "--fault-plan", str(_plan(tmp_path)))
    with validating("cursus", reports, *args, "--client-name", "cursus-client") as seen:
        run = run_official_client(seen.address, "orders", COUNT)
        log = stored(seen.address, "orders", 2)
    assert run.errors == []
    assert run.acked == COUNT
    # nothing acknowledged is lost or duplicated, in the log or in what the group read
    assert sorted(log) == sorted(s.encode() for s in run.sent)
    places = [(p, o) for p, o, _ in run.read]
    assert len(places) == len(set(places)), Counter(places).most_common(3)
    assert {payload for _, _, payload in run.read} == set(run.sent)

    assert seen.code == 1, seen.stdout[-3000:]
    assert seen.broken() == {"CUR-CLI-5", "CUR-CLI-11"}
    leave = seen.case("cursus/client/CUR-CLI-5")
    assert leave["verdict"] == "FAIL"
    assert "LEAVE_GROUP lacks generation=" in leave["message"]
    idem = seen.case("cursus/client/CUR-CLI-11")
    assert idem["verdict"] == "WARN"
    assert "did not ask idempotent=true" in idem["message"]
    faults = seen.faults()
    assert len(faults) == len(REACTIONS)
    for fault in faults:
        what = next(w for w in REACTIONS if w in fault["message"])
        assert fault["verdict"] == "PASS", fault["message"]
        assert REACTIONS[what] in fault["message"], fault["message"]
    assert seen.results["checker_failures"] == 0
    assert (reports / "report.html").exists() and (reports / "junit.xml").exists()
    assert "broken MUST: CUR-CLI-5; broken SHOULD: CUR-CLI-11" in seen.stdout


def test_cursus_client_resends_an_acks_0_batch_the_broker_stored(tmp_path: Path) -> None:
    with validating("cursus", tmp_path, "--revision", "real") as seen:
        producer = Producer(
            ProducerConfig(
                topic="fire",
                brokers=[seen.address],
                partitions=1,
                acks=Acks.NONE,
                linger_ms=5,
                max_retries=1,
                flush_timeout_ms=1500,
            )
        )
        producer.send("only-once")
        with contextlib.suppress(Exception):  # it never reads an ack it can parse
            producer.flush()
        producer.close()
        log = stored(seen.address, "fire", 1)
    assert producer.unique_ack_count == 0
    assert log.count(b"only-once") >= 2
    case = seen.case("cursus/client/CUR-CLI-12")
    assert case["verdict"] == "FAIL"
    assert "was sent before at acks 0 and answered OK" in case["message"]
    assert "CUR-CLI-12" in seen.broken()


def test_cursus_client_breaks_the_documents_layouts_in_revision_doc(tmp_path: Path) -> None:
    with validating(
        "cursus", tmp_path, "--revision", "doc", "--client-name", "cursus-client"
    ) as seen:
        run = run_official_client(
            seen.address, "orders", 3, max_retries=0, flush_timeout_ms=1500, linger_s=0.5
        )
    assert run.acked == 0 and run.read == []
    assert any("join group failed" in e for e in run.errors), run.errors
    assert seen.code == 1
    assert seen.broken() == {"CUR-CLI-2", "CUR-CLI-6"}
    commands = seen.case("cursus/client/CUR-CLI-2")["message"]
    assert "\\x00\\x05adminCREATE" in commands or "\\x00\\x00" in commands, commands
    assert "does not fit the document's layout" in seen.case("cursus/client/CUR-CLI-6")["message"]
