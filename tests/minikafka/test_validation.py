"""``serve --protocol minikafka --validate`` judges clients by MK-CLI-* (SPEC.md, "client: ...").

Verdict truth, both ways: a broken client is reported with exactly the requirements its
frames break, each on the connection that broke it, and nothing else; a well-behaved
client, ours or the independent Java one (revision ``real``), gets no violation; the Java
client's CONSUME padding (FACTS.md 2.3) is named against ``doc``.  Faults: each one that
fired has a verdict saying what the client did next, and no acknowledged message is lost or
duplicated through them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from conformance.protocols.minikafka import codec
from tests.support import javastyle_minikafka
from tests.support.cli import conformance
from tests.support.minikafka_validation import (
    BROKEN_BASIC,
    BROKEN_MORE,
    Broken,
    ScenarioClient,
)
from tests.support.minikafka_wire import Conn
from tests.support.validating import Validated, validating

BROKE = re.compile(r"; broke ([A-Z0-9, -]+): ")
CLOSE_S = 5.0


def connections(v: Validated) -> dict[int, dict[str, Any]]:
    """Connection cases by the client's local port."""
    out = {}
    for c in v.results["cases"]:
        if "/client/connection/" in c["case_id"]:
            out[int(c["title"].rsplit(":", 1)[1])] = c
    return out


def broke(case: dict[str, Any]) -> set[str]:
    got = BROKE.search(case["message"])
    return set(got.group(1).split(", ")) if got else set()


def send_broken(v: Validated, broken: Broken) -> int:
    """``broken`` on a connection of its own, waited for (a reply, or the broker's close);
    the connection's local port."""
    with Conn(v.broker.host, v.broker.port) as c:
        port = int(c.sock.getsockname()[1])
        c.send(broken.raw)
        if broken.answered:
            reply = c.reply()
            assert isinstance(reply, codec.Failure | codec.ConsumeOk | codec.FlushOk), reply
        else:
            assert c.closed_within(CLOSE_S), f"{broken.name}: the broker kept the connection"
    return port


def check_each_breaks_its_own(v: Validated, sent: dict[int, Broken]) -> None:
    assert v.results, v.stderr[-2000:]
    by_port = connections(v)
    for port, broken in sent.items():
        case = by_port[port]
        assert broke(case) == {broken.breaks}, (broken.name, case["message"])
    assert v.broken() == {b.breaks for b in sent.values()}, v.stdout[-3000:]


def test_a_broken_client_is_reported_with_exactly_its_violations(tmp_path: Path) -> None:
    """The five of issue 24, one connection each: a length that does not count itself, an
    unknown type byte, a negative offset, a cut field, batch size 0."""
    with validating("minikafka", tmp_path / "r") as v:
        sent = {send_broken(v, b): b for b in BROKEN_BASIC}
    check_each_breaks_its_own(v, sent)
    verdicts = {c["case_id"].rsplit("/", 1)[1]: c["verdict"] for c in v.results["cases"]}
    assert [verdicts[i] for i in ("MK-CLI-1", "MK-CLI-2", "MK-CLI-6")] == ["FAIL"] * 3
    assert [verdicts[i] for i in ("MK-CLI-10", "MK-CLI-11")] == ["WARN"] * 2  # SHOULDs
    assert v.code == 1 and "broken MUST: MK-CLI-1, MK-CLI-2, MK-CLI-6" in v.stdout, v.stdout


def test_more_broken_frames_each_break_their_one_requirement(tmp_path: Path) -> None:
    with validating("minikafka", tmp_path / "r") as v:
        sent = {send_broken(v, b): b for b in BROKEN_MORE}
    check_each_breaks_its_own(v, sent)
    limit = v.case("minikafka/client/MK-CLI-5")
    assert limit["verdict"] == "UNSUPPORTED" and "exceeds the limit" in limit["message"]


def test_the_off_by_4_frame_leaves_the_stream_out_of_step(tmp_path: Path) -> None:
    """MK-CLI-1: the 4 bytes after a frame framed by its payload's length are no request:
    the broker refuses them as a length (over its limit: ``ello`` is 0x656c6c6f) and that
    is the same violation, not MK-CLI-5."""
    with validating("minikafka", tmp_path / "r") as v:
        send_broken(v, BROKEN_BASIC[0])
    case = v.case("minikafka/client/MK-CLI-1")
    assert case["message"].startswith("MK-CLI-1: broken 2 times (connection 1): PRODUCE: length")
    assert v.case("minikafka/client/MK-CLI-5")["verdict"] == "PASS"  # the PRODUCE fitted
    assert v.broken() == {"MK-CLI-1"}


# ------------------------------------------------------------ well-behaved clients

VALUES = [f"m{i}".encode() for i in range(10)]


@pytest.mark.parametrize("revision", ["doc", "real"])
def test_a_well_behaved_client_breaks_nothing(tmp_path: Path, revision: str) -> None:
    with validating("minikafka", tmp_path / "r", "--revision", revision) as v:
        client = ScenarioClient(v.broker.host, v.broker.port)
        try:
            assert client.produce("orders", VALUES) == list(range(10))
            client.flush()
            assert client.consume_all("orders", 3) == list(enumerate(VALUES))
            assert client.consume_all("nowhere", 3) == []
        finally:
            client.close()
    assert v.results, v.stderr[-2000:]
    verdicts = {c["case_id"]: c["verdict"] for c in v.results["cases"]}
    assert not {k: x for k, x in verdicts.items() if x not in ("PASS", "UNSUPPORTED")}
    assert v.broken() == set() and v.code == 0, v.stdout[-3000:]
    assert verdicts["minikafka/client/MK-CLI-12"] == "PASS"  # read on, checked
    assert verdicts["minikafka/client/connection/1"] == "PASS"


def test_reading_again_or_skipping_is_named(tmp_path: Path) -> None:
    """MK-CLI-12: a CONSUME that reads again what the last reply returned, then one that
    skips past its next offset, each named with the offsets."""
    with validating("minikafka", tmp_path / "r") as v, Conn(v.broker.host, v.broker.port) as c:
        for value in VALUES[:6]:
            c.produce("t", value)
        assert c.consume("t", 0, 2).next_offset == 2
        c.consume("t", 1, 2)  # reads offset 1 again
        c.consume("t", 5, 1)  # skips 3 and 4
    case = v.case("minikafka/client/MK-CLI-12")
    assert case["verdict"] == "WARN", case["message"]
    assert "at offset 1 reads again offsets 1..1" in case["message"], case["message"]
    assert v.broken() == {"MK-CLI-12"}


# ------------------------------------------------------------------ the Java client

JAVA_OPS = (
    "produce", "orders", "first", "produce", "orders", "", "produce", "other", "z",
    "consume", "orders", "0", "10", "consume", "orders", "2", "5",
    "consume", "nowhere", "0", "3", "flush",
)  # fmt: skip


@pytest.fixture(scope="module")
def classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return javastyle_minikafka.compile_into(tmp_path_factory.mktemp("javastyle_minikafka"))


@pytest.mark.parametrize("revision", ["real", "doc"])
def test_the_java_client_is_conformant_to_real_and_not_to_doc(
    classes: Path, tmp_path: Path, revision: str
) -> None:
    """The independent Java-style client (FACTS.md alone) pads every CONSUME with 3N+4 zero
    bytes: allowed in ``real`` (MK-CLI-4 passes), a MUST broken in ``doc`` (MK-CLI-3), and
    nothing else in either."""
    with validating(
        "minikafka", tmp_path / "r", "--revision", revision, "--client-name", "JavaStyleClient"
    ) as v:
        done = javastyle_minikafka.client(classes, v.broker.host, v.broker.port, *JAVA_OPS)
    assert done.returncode == 0, done.stdout + done.stderr
    assert v.results, v.stderr[-2000:]
    verdicts = {c["case_id"].removeprefix("minikafka/client/"): c for c in v.results["cases"]}
    if revision == "real":
        assert v.broken() == set() and v.code == 0, v.stdout[-3000:]
        assert verdicts["MK-CLI-4"]["verdict"] == "PASS"
        assert verdicts["connection/1"]["verdict"] == "PASS"
    else:
        assert v.broken() == {"MK-CLI-3"} and v.code == 1, v.stdout[-3000:]
        case = verdicts["MK-CLI-3"]
        assert case["verdict"] == "FAIL"
        assert case["message"].startswith("MK-CLI-3: broken 3 times (connection 1): CONSUME")
        assert (
            "CONSUME carries 22 bytes after its last field, all zero: 3N+4 for its topic of N=6 "
            "bytes, as the real client pads (FACTS.md 2.3)"
        ) in case["message"]
        assert "JavaStyleClient" in v.stdout


# ------------------------------------------------------------------------ faults

PLAN = """\
faults:
  - {on: PRODUCE, slow: 600, after: 2}
  - {on: CONSUME, error: UNKNOWN_TOPIC, after: 1}
  - {on: CONSUME, split: 5, after: 2}
  - {on: CONSUME, reset: 0.5, after: 3}
"""


def test_faults_each_get_a_verdict_and_no_acknowledged_message_is_lost(tmp_path: Path) -> None:
    """A slow PRODUCE reply, an error on the second CONSUME, a split reply to the third and
    a reset in the fourth: the scenario client goes on, retries the refused read, reads the
    split reply whole and reconnects after the reset; every fault gets PASS with what the
    client did next, and reading back gives each acknowledged message once."""
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    with validating("minikafka", tmp_path / "r", "--fault-plan", str(plan)) as v:
        client = ScenarioClient(v.broker.host, v.broker.port)
        try:
            acked = client.produce("orders", VALUES)
            client.flush()
            read = client.consume_all("orders", 3)
        finally:
            client.close()
        with Conn(v.broker.host, v.broker.port) as back:
            again = back.consume("orders", 0, 100)
    assert acked == list(range(10))
    assert read == list(enumerate(VALUES)), client.log
    assert [(c.offset, c.data) for c in again.messages] == read
    assert client.log == [
        "connected",
        "CONSUME 'orders' offset=3 batch=3: error \"unknown topic 'orders'\" -> again",
        "CONSUME 'orders' offset=6 batch=3: lost (closed after 26 of 56 bytes) -> reconnect",
        "connected",
    ]
    faults = v.faults()
    assert [f["fault"]["fault"].split(":")[0] for f in faults] == [
        "PRODUCE",
        "CONSUME",
        "CONSUME",
        "CONSUME",
    ], [f["message"] for f in faults]
    did = {f["title"]: (f["verdict"], f["fault"]["did"]) for f in faults}
    slow, error, split, reset = (f["fault"] for f in faults)
    assert all(f["verdict"] == "PASS" for f in faults), did
    assert "went on" in slow["did"], slow
    assert "retried" in error["did"] and any(
        "re-sent the same (orders@3)" in n for n in error["next"]
    )
    assert split["did"][0] == "went on", split
    assert "reconnected" in reset["did"], reset
    assert any("re-sent the same (orders@6)" in n for n in reset["next"]), reset
    assert v.broken() == set() and v.code == 0, v.stdout[-3000:]


def test_a_fault_plan_naming_an_error_a_request_cannot_carry_is_refused(tmp_path: Path) -> None:
    """``--fault PRODUCE:error=UNKNOWN_TOPIC``: UNKNOWN_TOPIC answers CONSUME only."""
    done = conformance(
        tmp_path, "serve", "--protocol", "minikafka", "--validate", "--port", "0",
        "--reports", str(tmp_path / "r"), "--fault", "PRODUCE:error=UNKNOWN_TOPIC", timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "UNKNOWN_TOPIC is not an answer to PRODUCE" in done.stderr


def test_fault_list_names_the_errors(tmp_path: Path) -> None:
    done = conformance(tmp_path, "serve", "--protocol", "minikafka", "--fault", "list", timeout=60)
    assert done.returncode == 0, done.stderr
    for name in ("UNKNOWN_TOPIC", "OFFSET_BEFORE_FIRST_SEGMENT", "LOG_DIRECTORY_FAILED"):
        assert name in done.stdout
    assert "MK-CLI-16" in done.stdout


JAVA_FAULTS = """\
faults:
  - {on: CONSUME, error: UNKNOWN_TOPIC}
  - {on: CONSUME, split: 4, after: 1}
  - {on: PRODUCE, slow: 400, after: 2}
  - {on: CONSUME, reset: 0.3, after: 2}
"""


def test_the_java_client_copes_with_all_but_the_reset(classes: Path, tmp_path: Path) -> None:
    """The Java-style client, like the real phase-2 one (FACTS.md 5.1, 5.2), reads split
    and late replies whole and goes on after an error reply, but never reconnects: the
    reset gets a WARN of MK-CLI-15 (a SHOULD), its other faults PASS."""
    plan = tmp_path / "plan.yaml"
    plan.write_text(JAVA_FAULTS)
    ops = (
        "produce", "orders", "first", "produce", "orders", "",
        "consume", "orders", "0", "10", "consume", "orders", "0", "10",
        "produce", "other", "z", "consume", "orders", "2", "5", "flush",
    )  # fmt: skip
    with validating(
        "minikafka", tmp_path / "r", "--revision", "real", "--fault-plan", str(plan)
    ) as v:
        done = javastyle_minikafka.client(classes, v.broker.host, v.broker.port, *ops)
    assert done.stdout.splitlines() == [
        "PRODUCE ok offset=0",
        "PRODUCE ok offset=1",
        "CONSUME error=unknown topic 'orders'",
        "CONSUME ok next=2 count=2 0:6669727374 1:",
        "PRODUCE ok offset=0",
        "IO Connection closed by server",
    ], done.stdout + done.stderr
    faults = {f["fault"]["fault"]: f for f in v.faults()}
    verdicts = {name.split(" (")[0]: f["verdict"] for name, f in faults.items()}
    assert verdicts == {
        "CONSUME: answer UNKNOWN_TOPIC": "PASS",
        "CONSUME: write the reply in 4 pieces": "PASS",
        "PRODUCE: hold the reply 400 ms": "PASS",
        "CONSUME: reset the connection after 0.3 of the reply": "WARN",
    }, [f["message"] for f in faults.values()]
    reset = next(f for n, f in faults.items() if n.startswith("CONSUME: reset"))
    assert reset["violated"] == "MK-CLI-15" and "reconnected" not in reset["fault"]["did"]
    assert reset["message"].startswith("MK-CLI-15: CONSUME 'orders' offset=2 batch=5 + 22"), reset
    assert v.code == 0, v.stdout[-3000:]  # a SHOULD: exit 1 only with --strict
