"""``serve --protocol cursus --validate`` with raw clients: a deliberately broken client
is reported with exactly the client requirements it broke, a well-behaved one with none,
in both revisions."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from conformance.protocols.cursus import codec, real_codec
from conformance.protocols.cursus.messages import OkReply
from tests.support.cursus_validation import RawClient, address_of, batch, encoded, lying_count, text
from tests.support.validating import Validated, validating

BROKEN = {
    "doc": {
        "CUR-CLI-1": "the connection ended inside a frame",
        "CUR-CLI-2": "unknown command 'FETCH'",
        "CUR-CLI-6": "does not fit the document's layout",
        "CUR-CLI-10": "3..4 were never sent",
        "CUR-CLI-13": "is stale",
    },
    "real": {
        "CUR-CLI-1": "the connection ended inside a frame",
        "CUR-CLI-4": "holds no command the real broker knows",
        "CUR-CLI-7": "does not fit the real layout",
        "CUR-CLI-10": "3..4 were never sent",
        "CUR-CLI-13": "is stale",
    },
}


def _case(seen: Validated, req: str) -> dict[str, Any]:
    return seen.case(f"cursus/client/{req}")


def _ok(revision: str, reply: bytes) -> OkReply:
    got = real_codec.decode_reply(reply) if revision == "real" else codec.decode_reply(reply)
    assert isinstance(got, OkReply), reply
    return got


def _join(client: RawClient, revision: str, topic: str, group: str) -> tuple[str, int]:
    if revision == "real":
        command = f"JOIN_GROUP topic={topic} group={group} member=alice"
    else:
        command = f"JOIN_GROUP {topic} {group} alice"
    joined = _ok(revision, client.ask(text(revision, command)))
    return str(joined.get("member")), int(str(joined.get("generation")))


def _create(client: RawClient, revision: str, topic: str) -> None:
    command = (
        f"CREATE topic={topic} partitions=2 idempotent=true"
        if revision == "real"
        else f"CREATE {topic} 2"
    )
    assert client.ask(text(revision, command)).startswith(b"OK")


@pytest.mark.parametrize("revision", ["doc", "real"])
def test_a_broken_client_is_reported_with_exactly_what_it_broke(
    tmp_path: Path, revision: str
) -> None:
    with validating("cursus", tmp_path, "--revision", revision) as seen:
        address = address_of(seen.address)
        alice = RawClient(address)
        _create(alice, revision, "orders")
        ack = alice.ask(encoded(revision, batch(revision, "orders", range(1, 3))))
        assert b'"status":"OK"' in ack.replace(b" ", b"")
        alice.ask(encoded(revision, batch(revision, "orders", range(5, 7))))  # 3..4 skipped
        assert b"ERROR" in alice.ask(lying_count(revision, "orders"))
        member, generation = _join(alice, revision, "orders", "grp")
        if revision == "real":
            stale = f"HEARTBEAT topic=orders group=grp member={member} generation={generation - 1}"
        else:
            stale = f"HEARTBEAT orders grp alice {member} {generation - 1}"
        refused = alice.ask(text(revision, stale))
        assert b"GEN_MISMATCH" in refused or b"REBALANCE_REQUIRED" in refused
        if revision == "doc":
            assert alice.ask(b"FETCH orders 0 0").startswith(b"ERROR")
        else:
            alice.send(real_codec.envelope("FETCH topic=orders"))  # the broker closes
        RawClient(address).cut_frame(100, b"LIST")
        time.sleep(0.3)  # the broker sees that connection end before it is stopped
        last = RawClient(address)
        assert last.ask(text(revision, "LIST")).startswith((b"OK", b"["))
        last.close()
        alice.close()
    assert seen.code == 1, seen.stdout[-3000:]
    assert seen.broken() == set(BROKEN[revision])
    for req, words in BROKEN[revision].items():
        case = _case(seen, req)
        assert case["verdict"] == "FAIL", case["message"]
        assert words in case["message"], case["message"]
    assert seen.results["checker_failures"] == 0


@pytest.mark.parametrize("revision", ["doc", "real"])
def test_a_well_behaved_client_breaks_nothing(tmp_path: Path, revision: str) -> None:
    with validating("cursus", tmp_path, "--revision", revision) as seen:
        client = RawClient(address_of(seen.address))
        _create(client, revision, "orders")
        for first in (1, 4, 1):  # the third is a retry of the first
            b = batch(revision, "orders", range(first, first + 3))
            assert b'"OK"' in client.ask(encoded(revision, b))
        member, generation = _join(client, revision, "orders", "grp")
        if revision == "real":
            commands = [
                f"SYNC_GROUP topic=orders group=grp member={member} generation={generation}",
                f"HEARTBEAT topic=orders group=grp member={member} generation={generation}",
                f"COMMIT_OFFSET topic=orders partition=1 group=grp offset=2 member={member} "
                f"generation={generation}",
                f"BATCH_COMMIT topic=orders group=grp member={member} generation={generation} "
                "P0:3,P1:2",
                f"LEAVE_GROUP topic=orders group=grp member={member} generation={generation}",
            ]
        else:
            commands = [
                f"SYNC_GROUP orders grp {member} {generation}",
                f"HEARTBEAT orders grp alice {member} {generation}",
                f"BATCH_COMMIT orders grp {member} {generation} 0:3,1:2",
                "CONSUME orders 0 0",
                "LEAVE_GROUP orders grp alice",
            ]
        for command in commands:
            reply = client.ask(text(revision, command))
            assert not reply.startswith(b"ERROR"), (command, reply)
        client.close()
    assert seen.code == 0, seen.stdout[-3000:]
    assert seen.broken() == set()
    verdicts = {
        c["case_id"].rsplit("/", 1)[-1]: c["verdict"]
        for c in seen.results["cases"]
        if "/client/CUR-" in c["case_id"]
    }
    exercised = {r for r, v in verdicts.items() if v == "PASS"}
    common = {
        "CUR-CLI-1",
        "CUR-CLI-8",
        "CUR-CLI-9",
        "CUR-CLI-10",
        "CUR-CLI-13",
        "CUR-CLI-14",
        "CUR-CLI-15",
    }
    own = {"CUR-CLI-4", "CUR-CLI-5", "CUR-CLI-7", "CUR-CLI-11", "CUR-CLI-12"}
    assert exercised >= common | (own if revision == "real" else {"CUR-CLI-2", "CUR-CLI-3"})
    for req in ("CUR-CLI-16", "CUR-CLI-17", "CUR-CLI-18", "CUR-CLI-19"):
        assert verdicts[req] == "UNSUPPORTED"


@pytest.mark.parametrize("revision", ["doc", "real"])
def test_faults_get_a_verdict_on_what_the_client_did_next(tmp_path: Path, revision: str) -> None:
    """A rebalance (the engine's: a stranger joins and leaves) before a HEARTBEAT makes
    the broker refuse it as stale, and the client re-joins: PASS; a NOT_LEADER on a batch
    the client sends again: PASS; a GEN_MISMATCH on SYNC_GROUP the client ignores: WARN."""
    faults = (
        "--fault",
        "HEARTBEAT:action=rebalance",
        "--fault",
        "BATCH:error=NOT_LEADER",
        "--fault",
        "SYNC_GROUP:error=GEN_MISMATCH",
    )
    with validating("cursus", tmp_path, "--revision", revision, *faults) as seen:
        client = RawClient(address_of(seen.address))
        _create(client, revision, "orders")
        first = encoded(revision, batch(revision, "orders", range(1, 3)))
        assert b"NOT_LEADER" in client.ask(first)
        assert b'"OK"' in client.ask(first)
        member, generation = _join(client, revision, "orders", "grp")
        if revision == "real":
            beat = f"HEARTBEAT topic=orders group=grp member={member} generation={generation}"
        else:
            beat = f"HEARTBEAT orders grp alice {member} {generation}"
        refused = client.ask(text(revision, beat))
        assert b"GEN_MISMATCH" in refused or b"REBALANCE_REQUIRED" in refused, refused
        member, generation = _join(client, revision, "orders", "grp")
        if revision == "real":
            sync = f"SYNC_GROUP topic=orders group=grp member={member} generation={generation}"
        else:
            sync = f"SYNC_GROUP orders grp {member} {generation}"
        assert b"GEN_MISMATCH" in client.ask(text(revision, sync))
        assert client.ask(text(revision, "LIST")).startswith((b"OK", b"["))
        client.close()
    assert seen.broken() == {"CUR-CLI-17"}
    assert seen.code == 0, seen.stdout[-3000:]  # a SHOULD: WARN
    verdicts = {f["message"].split(";")[0]: f for f in seen.faults()}
    assert len(verdicts) == 3, list(verdicts)
    for fault in seen.faults():
        message = fault["message"]
        if "rebalance" in message:
            assert fault["verdict"] == "PASS" and "re-joined" in message, message
        elif "NOT_LEADER" in message:
            assert fault["verdict"] == "PASS" and "re-sent the same" in message, message
        else:
            assert fault["verdict"] == "WARN", message
            assert "did: went on, closed the connection" in message, message


def test_a_gzip_batch_is_read_inflated_when_the_broker_inflates(tmp_path: Path) -> None:
    """With ``--compression gzip`` the broker inflates a gzip payload (CUR-RCONV-6), and so
    does the checker: the batch inside is judged, not the gzip bytes as a command."""
    with validating("cursus", tmp_path, "--revision", "real", "--compression", "gzip") as seen:
        client = RawClient(address_of(seen.address))
        _create(client, "real", "orders")
        body = encoded("real", batch("real", "orders", range(1, 4)))
        assert b'"OK"' in client.ask(codec.gzip_body(body))
        client.close()
    assert seen.broken() == set() and seen.code == 0, seen.stdout[-3000:]
    assert seen.case("cursus/client/CUR-CLI-7")["verdict"] == "PASS"
