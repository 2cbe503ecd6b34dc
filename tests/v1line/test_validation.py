"""``serve --protocol v1line --validate`` end to end: a broken client gets exactly what it
broke, a well-behaved one nothing, and a client library under a fault plan gets a verdict
per fault saying what it did next, with no acknowledged record lost or duplicated."""

from __future__ import annotations

import socket
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import conformance
from tests.support.v1line_client import Client, fields, messages
from tests.support.v1line_validation import Connection, GroupConsumer, Producer
from tests.support.validating import Validated, validating

DEADLINE_S = 5.0


def _address(seen: Validated) -> tuple[str, int]:
    host, port = seen.address.rsplit(":", 1)
    return host, int(port)


class RawClient:
    """A deliberately careless client: raw lines on a socket, one reply read per line."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.sock = socket.create_connection(address, timeout=DEADLINE_S)
        self.buf = b""

    def send(self, line: str) -> str:
        self.sock.sendall(line.encode() + b"\n")
        for _ in range(100):
            if b"\n" in self.buf:
                break
            chunk = self.sock.recv(65536)
            assert chunk, f"the broker closed the connection after {line!r}"
            self.buf += chunk
        reply, _, self.buf = self.buf.partition(b"\n")
        return reply.decode()

    def close(self) -> None:
        self.sock.close()


def _case(seen: Validated, req: str) -> dict[str, Any]:
    return seen.case(f"v1line/client/{req}")


@pytest.mark.parametrize("revision", ["doc", "real"])
def test_a_broken_client_is_reported_with_exactly_what_it_broke(
    tmp_path: Path, revision: str
) -> None:
    with validating("v1line", tmp_path, "--revision", revision) as seen:
        alice, bob = RawClient(_address(seen)), RawClient(_address(seen))
        assert alice.send("V1|1|OFFSET|other orders 0") == "V1|1|OK|offset=0"
        assert alice.send("V1|2|PING").startswith("V1|0|ERR|BAD_REQUEST|")  # no trailing |
        assert alice.send("V1|3|FETCH|orders 0 0").startswith("V1|3|ERR|UNKNOWN_COMMAND|")
        assert alice.send("V1|4|CONSUME|orders 0 -5").startswith("V1|4|ERR|BAD_REQUEST|")
        first = int(fields(alice.send("V1|5|JOIN|grp orders alice"))["generation"])
        second = int(fields(bob.send("V1|1|JOIN|grp orders bob"))["generation"])
        assert second == first + 1
        # alice was not told about bob's join: her old generation is no violation yet
        stale = alice.send(f"V1|6|SYNC|grp orders alice {first}")
        assert "GENERATION_MISMATCH" in stale
        assert int(fields(alice.send("V1|7|JOIN|grp orders alice"))["generation"]) == second
        # now she was given the new one, and sends the old one: stale
        assert "GENERATION_MISMATCH" in alice.send(f"V1|8|HEARTBEAT|grp orders alice {first}")
        assert alice.send("V1|x9|OFFSET|other orders 0") == "V1|x9|OK|offset=0"
        alice.close()
        bob.close()
    assert seen.code == 1, seen.stderr
    assert seen.broken() == {
        "V1L-CLI-1",
        "V1L-CLI-4",
        "V1L-CLI-6",
        "V1L-CLI-9",
        "V1L-CLI-11",
    }
    expected = {
        "V1L-CLI-1": ("FAIL", "3 '|'-separated sections"),
        "V1L-CLI-4": ("WARN", "correlation id 'x9' is not a decimal number"),
        "V1L-CLI-6": ("FAIL", "'FETCH' is not a command"),
        "V1L-CLI-9": ("FAIL", "CONSUME offset -5 is negative"),
        "V1L-CLI-11": ("FAIL", f"generation {first} is stale"),
    }
    for req, (verdict, text) in expected.items():
        case = _case(seen, req)
        assert case["verdict"] == verdict, case["message"]
        assert "broken once (connection 1)" in case["message"]
        assert text in case["message"], case["message"]
    connection = seen.case("v1line/client/connection/1")
    assert connection["verdict"] == "FAIL"
    assert seen.case("v1line/client/connection/2")["verdict"] == "PASS"
    assert not seen.faults()
    assert seen.results["checker_failures"] == 0


@pytest.mark.parametrize("revision", ["doc", "real"])
def test_a_well_behaved_client_breaks_nothing(tmp_path: Path, revision: str) -> None:
    with validating("v1line", tmp_path, "--min-isr", "1", "--revision", revision) as seen:
        host, port = _address(seen)
        conn = Connection(host, port)
        producer = Producer(conn)
        for i in range(6):
            producer.produce("orders", f"k{i}", f"v{i}", acks=("1", "all", None)[i % 3])
        consumer = GroupConsumer(Connection(host, port), "grp", "orders", "alice")
        assert consumer.poll() == 6
        consumer.leave()
        with Client(host, port) as follower:
            role = follower.call(1, "SET_PARTITION_ROLE", "orders 1 follower")
            assert "role=follower" in role
            assert "|OK|" in follower.call(2, "REPLICA_FETCH", "orders 0 1 0")
            assert "|OK|" in follower.call(3, "REPLICA_FETCH", "orders 0 1 2")
            assert "role=leader" in follower.call(4, "SET_PARTITION_ROLE", "orders 1 leader")
            if revision == "doc":
                assert follower.call(5, "PING") == "V1|5|OK"
            else:  # real has no PING (V1L-PING-3): a well-behaved client sends none
                assert follower.call(5, "OFFSET", "nobody orders 0") == "V1|5|OK|offset=0"
        conn.close()
        consumer.conn.close()
    assert seen.code == 0, seen.stdout[-2000:]
    assert seen.broken() == set()
    verdicts = {
        c["case_id"].rsplit("/", 1)[-1]: c["verdict"]
        for c in seen.results["cases"]
        if "/client/V1L-" in c["case_id"]
    }
    exercised = {r for r, v in verdicts.items() if v == "PASS"}
    assert ("V1L-CLI-2" in verdicts) == (revision == "doc")  # doc's exact sections only
    assert exercised >= {f"V1L-CLI-{n}" for n in (1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13)}
    assert exercised >= {"V1L-CLI-14", "V1L-CLI-15", "V1L-CLI-16", "V1L-CLI-17"}
    # the reactions are judged only after faults: none fired, none exercised
    for req in ("V1L-CLI-18", "V1L-CLI-19", "V1L-CLI-20"):
        assert verdicts[req] == "UNSUPPORTED"


@pytest.mark.parametrize("revision", ["doc", "real"])
def test_a_ping_breaks_the_command_requirement_in_real_only(tmp_path: Path, revision: str) -> None:
    """V1L-CLI-6: PING is a command of doc; the real broker has none and answers it
    UNKNOWN_COMMAND (V1L-PING-3), so a client that sends it to real breaks the requirement."""
    with validating("v1line", tmp_path, "--revision", revision) as seen:
        client = RawClient(_address(seen))
        answer = "V1|1|OK" if revision == "doc" else "V1|1|ERR|UNKNOWN_COMMAND|unsupported command"
        assert client.send("V1|1|PING|") == answer
        assert client.send("V1|2|OFFSET|other orders 0") == "V1|2|OK|offset=0"
        client.close()
    if revision == "doc":
        assert seen.code == 0, seen.stdout[-2000:]
        assert seen.broken() == set()
        assert _case(seen, "V1L-CLI-6")["verdict"] == "PASS"
        return
    assert seen.code == 1, seen.stderr
    assert seen.broken() == {"V1L-CLI-6"}
    case = _case(seen, "V1L-CLI-6")
    assert case["verdict"] == "FAIL", case["message"]
    assert "broken once (connection 1)" in case["message"], case["message"]
    assert "'PING' is a command of the document only" in case["message"], case["message"]


def test_a_line_over_64_kib_breaks_the_line_limit_and_ends_the_connection(
    tmp_path: Path,
) -> None:
    with validating("v1line", tmp_path) as seen:
        with Client(*_address(seen)) as client:
            assert client.call(1, "PING") == "V1|1|OK"
            client.send(b"V1|2|PRODUCE|t k:" + b"x" * (70 * 1024) + b"\n")
            assert client.closed_within(DEADLINE_S)
        with Client(*_address(seen)) as again:
            assert again.call(1, "PING") == "V1|1|OK"
    assert seen.broken() == {"V1L-CLI-3"}
    case = _case(seen, "V1L-CLI-3")
    assert case["verdict"] == "FAIL"
    assert "over 64 KiB" in case["message"], case["message"]


def test_a_fault_plan_names_only_errors_the_command_can_carry(tmp_path: Path) -> None:
    listed = conformance(tmp_path, "serve", "--protocol", "v1line", "--fault", "list")
    assert listed.returncode == 0, listed.stderr
    for name in ("NOT_LEADER", "REPLICATION_TIMEOUT", "GENERATION_MISMATCH", "rebalance"):
        assert name in listed.stdout
    wrong = ("--validate", "--fault", "PRODUCE:error=GENERATION_MISMATCH", "--max-time", "1")
    refused = conformance(tmp_path, "serve", "--protocol", "v1line", "--port", "0", *wrong)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "GENERATION_MISMATCH is not an answer to PRODUCE" in refused.stderr
    unknown = ("--validate", "--fault", "PRODUCE:error=NOT_LEADER_OR_FOLLOWER")
    refused = conformance(tmp_path, "serve", "--protocol", "v1line", "--port", "0", *unknown)
    assert refused.returncode == 2
    assert "unknown error 'NOT_LEADER_OR_FOLLOWER'" in refused.stderr


PLAN = """\
faults:
  - {on: PRODUCE, error: NOT_LEADER, after: 1}
  - {on: PRODUCE, reset: 0.5, after: 4}
  - {on: CONSUME, split: 3}
  - {on: HEARTBEAT, slow: 300}
  - {on: HEARTBEAT, action: rebalance, after: 1}
  - {on: COMMIT, error: GENERATION_MISMATCH, after: 2}
"""

EXPECTED_REACTIONS = [
    ("PRODUCE", "answer NOT_LEADER", "retried"),
    ("PRODUCE", "reset the connection", "reconnected"),
    ("CONSUME", "write the reply in 3 pieces", "went on"),
    ("HEARTBEAT", "hold the reply 300 ms", "went on"),
    ("HEARTBEAT", "rebalance", "re-joined"),
    ("COMMIT", "answer GENERATION_MISMATCH", "re-joined"),
]


def _read_back(host: str, port: int, topic: str, partitions: int) -> dict[tuple[int, int], str]:
    log: dict[tuple[int, int], str] = {}
    with Client(host, port) as client:
        for p in range(partitions):
            items, _hw = messages(client.call(p + 1, "CONSUME", f"{topic} {p} 0"))
            log.update({(p, offset): value for offset, value in items})
    return log


def test_a_client_library_under_faults_gets_a_verdict_per_fault(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN, encoding="utf-8")
    reports = tmp_path / "reports"
    args = ("--fault-plan", str(plan), "--client-name", "tests.support.v1line_validation")
    with validating("v1line", reports, *args) as seen:
        host, port = _address(seen)
        producer = Producer(Connection(host, port))
        consumer = GroupConsumer(Connection(host, port), "grp", "orders", "alice")
        for i in range(6):
            producer.produce("orders", f"key{i}", f"value{i}")
        for _ in range(4):
            consumer.poll()
        for i in range(6, 9):
            producer.produce("orders", f"key{i}", f"value{i}")
        for _ in range(3):
            consumer.poll()
        consumer.leave()
        log = _read_back(host, port, "orders", 3)
        producer.conn.close()
        consumer.conn.close()
    assert seen.code == 0, seen.stdout[-3000:]
    assert seen.broken() == set(), seen.stdout[-3000:]

    faults = seen.faults()
    assert len(faults) == len(EXPECTED_REACTIONS), [f["title"] for f in faults]
    for kind, what, tag in EXPECTED_REACTIONS:
        (case,) = [c for c in faults if c["fault"]["fault"].startswith(f"{kind}: {what}")]
        fault = case["fault"]
        assert case["verdict"] == "PASS", case["message"]
        assert tag in fault["did"], fault
        assert fault["next"], fault

    # (d) nothing acknowledged lost or duplicated, however the faults fell
    assert producer.retried_errors == ["NOT_LEADER"]
    assert len(producer.unanswered) == 1  # the reset PRODUCE: stored, then sent again
    acked = producer.acked
    assert sorted(v for _, _, _, v in acked) == sorted(f"value{i}" for i in range(9))
    assert len({(p, o) for _, p, o, _ in acked}) == len(acked)
    for _, p, o, v in acked:
        assert log.get((p, o)) == v, f"acknowledged {v} at {p}/{o}, read back {log.get((p, o))}"
    copies = Counter(log.values())
    assert {v for v, n in copies.items() if n > 1} <= set(producer.unanswered)
    processed = [(p, o) for p, o, _ in consumer.processed]
    assert len(set(processed)) == len(processed), "the consumer read a record twice"
    assert {(p, o) for _, p, o, _ in acked} <= set(processed), "an acknowledged record unread"
    assert consumer.rejoins == 2


CARELESS_PLAN = """\
faults:
  - {on: PRODUCE, error: NOT_LEADER}
  - {on: HEARTBEAT, error: GENERATION_MISMATCH}
"""


def test_a_client_that_ignores_the_faults_is_told_so(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(CARELESS_PLAN, encoding="utf-8")
    args = ("--fault-plan", str(plan))
    with (
        validating("v1line", tmp_path / "reports", *args) as seen,
        Client(*_address(seen)) as client,
    ):
        # NOT_LEADER: the record is dropped, the next one (another partition) sent
        assert "NOT_LEADER" in client.call(1, "PRODUCE", "orders a:lost")
        assert "|OK|" in client.call(2, "PRODUCE", "orders c:next")
        generation = fields(client.call(3, "JOIN", "grp orders alice"))["generation"]
        assert "GENERATION_MISMATCH" in client.call(
            4, "HEARTBEAT", f"grp orders alice {generation}"
        )
        # ... and the member carries on with the refused generation, no JOIN
        assert "|OK|" in client.call(5, "HEARTBEAT", f"grp orders alice {generation}")
        assert client.call(6, "PING") == "V1|6|OK"
    assert seen.code == 0, seen.stdout[-2000:]  # only SHOULDs broken: WARN
    assert seen.broken() == {"V1L-CLI-14", "V1L-CLI-18"}
    assert "the broker answered GENERATION_MISMATCH" in _case(seen, "V1L-CLI-14")["message"]
    verdicts = {c["fault"]["fault"].split(" (")[0]: c for c in seen.faults()}
    ignored = verdicts["PRODUCE: answer NOT_LEADER"]
    assert ignored["verdict"] == "WARN", ignored["message"]
    assert ignored["fault"]["expected"] == ["retried", "reconnected"]
    assert "retried" not in ignored["fault"]["did"]
    stale = verdicts["HEARTBEAT: answer GENERATION_MISMATCH"]
    assert stale["verdict"] == "WARN", stale["message"]
    assert "re-joined" not in stale["fault"]["did"]
    assert "sent something illegal" in stale["fault"]["did"]
