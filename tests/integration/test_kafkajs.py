"""KafkaJS 2.2.4 (npm ``kafkajs``: an independent Kafka client in JavaScript) against the
reference broker, in both revisions: topic admin, an idempotent producer with acks -1 (also
retrying after a lost reply), a consumer group of two members; then transactions (commit,
abort, producer fencing) and SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), which run once the
broker advertises the APIs they need (until then each is an expected failure naming the
missing API, asked of the broker through ApiVersions, never a silent skip).

KafkaJS comes from tests/support/kafkajs/package-lock.json through ``npm ci`` into a cache
directory (tests/support/kafkajs/__init__.py); without node or npm, or with the registry
unreachable, the tests fail under ``CI`` and are skipped elsewhere, saying why. Each script
runs within a deadline and prints JSON lines; every claim in them is checked against the
broker's log read back over our own client (tests/support/kafkajs/readback.py).

KafkaJS 2.2.4 sends only non-flexible versions (ApiVersions v2, Metadata v6, CreateTopics v3,
InitProducerId v1, Produce v7, FindCoordinator v2, JoinGroup v5, SyncGroup v3, OffsetFetch
v4, ListOffsets v3, Fetch v11, OffsetCommit v5, Heartbeat v3, LeaveGroup v3; for
transactions AddPartitionsToTxn v1, AddOffsetsToTxn v1, TxnOffsetCommit v1, EndTxn v1; for
SASL SaslHandshake v1 and SaslAuthenticate v1), each the highest it has within the broker's
advertised range, so revision doc (header v0 everywhere) can serve all of it.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import broker as support
from tests.support import kafkajs as kj
from tests.support.kafkajs import readback

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("kafkajs")]

COUNT = 30
PARTITIONS = 3
DEADLINE_S = 60.0
TXN_COUNT = 5
TRANSACTIONS = {
    24: "AddPartitionsToTxn",
    25: "AddOffsetsToTxn",
    26: "EndTxn",
    28: "TxnOffsetCommit",
}
SASL = {17: "SaslHandshake", 36: "SaslAuthenticate"}
MECHANISMS = ("plain", "scram-sha-256", "scram-sha-512")
USER, PASSWORD = "kafkajs-user", "kafkajs-secret"
SASL_SERVE_ARGS = ("--sasl-username", USER, "--sasl-password", PASSWORD)
"""How the broker is told to require SASL (the Kafka plug-in's serve options; every
mechanism is enabled by default)."""

Node = tuple[str, Path]


def _unavailable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


@pytest.fixture(scope="session")
def node() -> Node:
    """node's path and the node_modules holding the pinned KafkaJS."""
    path = shutil.which("node")
    if path is None:
        _unavailable("node is not installed (apt-get install nodejs npm)")
    try:
        modules = kj.install()
    except kj.NotInstalled as exc:
        _unavailable(str(exc))
    assert path is not None
    return path, modules


def _serve(revision: str, *extra: str) -> support.Broker:
    return support.start(
        "--revision",
        revision,
        "--join-delay-ms",
        "200",
        "--session-timeout",
        "10",
        *extra,
        protocol="kafka",
    )


@pytest.fixture(scope="module", params=["apache", "doc"])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[str, support.Broker]]:
    broker = _serve(request.param)
    try:
        yield request.param, broker
    finally:
        broker.stop()


def _addr(broker: support.Broker) -> tuple[str, int]:
    return broker.host, broker.port


def _run(node: Node, script: str, **opts: object) -> kj.Output:
    return kj.run(node[0], node[1], script, DEADLINE_S, **opts)


def _need(revision: str, broker: support.Broker, apis: dict[int, str], what: str) -> None:
    """An expected failure naming the APIs ``what`` needs that the broker leaves out of its
    ApiVersions answer."""
    offered = readback.advertised(_addr(broker))
    missing = [f"{name} (key {key})" for key, name in apis.items() if key not in offered]
    if missing:
        pytest.xfail(
            f"revision {revision}: the broker's ApiVersions answer lacks {', '.join(missing)}, "
            f"which KafkaJS needs for {what}"
        )


def _check_versions(broker: support.Broker, *outputs: kj.Output) -> None:
    """Every request KafkaJS sent was at a version the broker advertises."""
    offered = readback.advertised(_addr(broker))
    for out in outputs:
        for r in out.events("request"):
            low, high = offered.get(r["api_key"], (0, -1))
            assert low <= r["api_version"] <= high, (
                f"{out.script}: {r['api_name']} v{r['api_version']} sent, broker advertises "
                f"v{low}-{high}"
            )


def _error_names(out: kj.Output) -> set[str]:
    """The names of the errors a script reported, and of the errors behind them."""
    names: set[str] = set()
    for error in out.events("error"):
        while error:
            names.add(str(error.get("name")))
            error = error.get("cause") or {}
    return names


def _create(node: Node, broker: support.Broker, topic: str, partitions: int, **auth: str) -> None:
    out = _run(
        node, "create_topic.js", broker=broker.address, topic=topic, partitions=partitions, **auth
    )
    out.check_done()
    (made,) = out.events("topic")
    assert [p["partition"] for p in made["partitions"]] == list(range(partitions)), made
    assert all(p["error_code"] == 0 for p in made["partitions"]), made


def _group_scenario(
    node: Node, broker: support.Broker, count: int = COUNT, **auth: str
) -> tuple[kj.Output, kj.Output, str, str]:
    """create_topic.js, then consume.js with two members; once the group is settled,
    produce.js; the outputs of produce.js and consume.js, the topic and the group."""
    topic, group = f"kjs-{uuid.uuid4().hex[:8]}", f"kjs-group-{uuid.uuid4().hex[:8]}"
    _create(node, broker, topic, PARTITIONS, **auth)
    consumer = kj.Running(
        node[0],
        node[1],
        "consume.js",
        DEADLINE_S,
        broker=broker.address,
        topic=topic,
        group=group,
        count=count,
        partitions=PARTITIONS,
        **auth,
    )
    try:
        settled = consumer.wait_for("ready", within_s=30)
        if settled is None:
            out = consumer.stop()
            raise AssertionError(f"the group of two did not settle: {out.why()}")
        produced = _run(node, "produce.js", broker=broker.address, topic=topic, count=count, **auth)
        consumed = consumer.finish()
    finally:
        consumer.stop()
    produced.check_done()
    consumed.check_done()
    return produced, consumed, topic, group


def _check_log_holds(
    broker: support.Broker, topic: str, sent: list[dict[str, Any]], auth: readback.Auth = None
) -> None:
    """Each record KafkaJS says it sent is in the log where it said, as it sent it, and
    nothing else is; the batches carry the idempotent producer's id and sequences."""
    held = readback.log(_addr(broker), topic, PARTITIONS, auth=auth)
    for s in sent:
        batch_record = held[s["partition"]].records().get(s["offset"])
        assert batch_record is not None, f"{s['key']}: nothing at {s['partition']}/{s['offset']}"
        _, r = batch_record
        i = s["index"]
        assert (r.key, r.value) == (b"key-%d" % i, b"value-%d" % i), f"{s}: log has {r}"
        headers = [(h.key, h.value) for h in r.headers]
        assert headers == [("index", str(i).encode()), ("origin", b"kafkajs")], headers
    for p, part in held.items():
        mine = sorted(s["offset"] for s in sent if s["partition"] == p)
        assert sorted(part.records()) == mine, (
            f"partition {p}: log {sorted(part.records())}, sent {mine}"
        )
        assert part.high_watermark == len(mine), (
            f"partition {p}: high watermark {part.high_watermark}"
        )
        sequence = 0
        for b in part.batches:
            assert b.producer_id >= 0 and b.producer_epoch >= 0, (
                f"partition {p}: batch at {b.base_offset} has producer {b.producer_id} "
                f"epoch {b.producer_epoch}, expected an idempotent producer's"
            )
            assert b.base_sequence == sequence, (
                f"partition {p}: batch at {b.base_offset} base sequence {b.base_sequence}, "
                f"expected {sequence}"
            )
            sequence += b.count


def test_an_idempotent_producer_and_a_group_of_two_members(
    node: Node, served: tuple[str, support.Broker]
) -> None:
    """Produce COUNT keyed records (acks -1, idempotent); two members of one group get them
    all, each exactly once, from disjoint partitions; KafkaJS commits where the log ends."""
    _, broker = served
    produced, consumed, topic, group = _group_scenario(node, broker)

    sent = produced.events("sent")
    assert sorted(s["index"] for s in sent) == list(range(COUNT)), produced.why()
    _check_log_holds(broker, topic, sent)

    got = consumed.events("record")
    places = Counter((r["partition"], r["offset"]) for r in got)
    twice = sorted(p for p, n in places.items() if n > 1)
    assert not twice, f"records consumed more than once: {twice}"
    assert set(places) == {(s["partition"], s["offset"]) for s in sent}, "lost records"
    by_place = {(s["partition"], s["offset"]): s["index"] for s in sent}
    for r in got:
        i = by_place[r["partition"], r["offset"]]
        assert (r["key"], r["value"]) == (f"key-{i}", f"value-{i}"), r
        assert r["headers"] == {"index": str(i), "origin": "kafkajs"}, r
    owned = [{r["partition"] for r in got if r["member"] == m} for m in (0, 1)]
    assert owned[0] and owned[1] and owned[0].isdisjoint(owned[1]), f"members read {owned}"

    ends = [sum(1 for s in sent if s["partition"] == p) for p in range(PARTITIONS)]
    assert readback.committed(_addr(broker), group, topic, PARTITIONS) == ends, (
        f"committed offsets, expected the log ends {ends}"
    )
    _check_versions(broker, produced, consumed)


def test_a_retry_after_a_lost_produce_reply_is_stored_once(
    node: Node, served: tuple[str, support.Broker], tmp_path: Path
) -> None:
    """The connection is reset halfway through the reply to KafkaJS's second Produce (a
    fault of ``serve --validate``): the batch was stored, KafkaJS sends it again with the
    same sequences, and the broker answers the duplicate without storing it twice."""
    revision, _ = served
    fault = "Produce:reset=0.5,after=1,count=1"
    broker = _serve(revision, "--validate", "--reports", str(tmp_path), "--fault", fault)
    try:
        topic = f"kjs-retry-{uuid.uuid4().hex[:8]}"
        _create(node, broker, topic, PARTITIONS)
        produced = _run(node, "produce.js", broker=broker.address, topic=topic, count=COUNT)
        produced.check_done()
        sent = produced.events("sent")
        assert sorted(s["index"] for s in sent) == list(range(COUNT)), produced.why()
        _check_log_holds(broker, topic, sent)
    finally:
        broker.stop()
    (fired,) = json.loads((tmp_path / "results.json").read_text())["faults"]
    assert fired["fired"] == 1, f"the reset never happened: {fired}"


def test_transactions_commit_and_abort_read_committed(
    node: Node, served: tuple[str, support.Broker]
) -> None:
    """Three transactions (commit with sendOffsets, abort, commit); a readUncommitted false
    consumer gets exactly the committed records; the log holds the aborted ones too, with
    a COMMIT or ABORT marker after each transaction."""
    revision, broker = served
    _need(revision, broker, TRANSACTIONS, "transactions")
    topic = f"kjs-txn-{uuid.uuid4().hex[:8]}"
    group, offsets_group = f"kjs-txg-{uuid.uuid4().hex[:8]}", f"kjs-txo-{uuid.uuid4().hex[:8]}"
    _create(node, broker, topic, 2)
    out = _run(
        node,
        "transactions.js",
        broker=broker.address,
        topic=topic,
        txn_id=f"kjs-txn-{uuid.uuid4().hex[:8]}",
        group=group,
        offsets_group=offsets_group,
        count=TXN_COUNT,
        offset=1,
    )
    out.check_done()
    assert [e["outcome"] for e in out.events("ended")] == ["commit", "abort", "commit"]
    sent = {(s["partition"], s["offset"]): s for s in out.events("sent")}
    committed = {place for place, s in sent.items() if s["outcome"] == "commit"}
    aborted = set(sent) - committed

    got = Counter((r["partition"], r["offset"]) for r in out.events("record"))
    assert set(got) == committed and max(got.values()) == 1, (
        f"read committed: got {sorted(got)}, expected each of {sorted(committed)} once"
    )
    assert all(r["key"].startswith("commit-") for r in out.events("record"))

    held = readback.log(_addr(broker), topic, 2)
    for p, part in held.items():
        records = part.records()
        for place in (q for q in sent if q[0] == p):
            assert place[1] in records, f"{sent[place]['key']} is not in the log at {place}"
            batch, r = records[place[1]]
            assert r.key == sent[place]["key"].encode() and batch.is_transactional, (batch, r)
        kinds = [kind for _, _, kind in part.markers()]
        assert kinds == ["COMMIT", "ABORT", "COMMIT"], f"partition {p}: markers {part.markers()}"
    strict = readback.log(_addr(broker), topic, 2, readback.READ_COMMITTED)
    for p, part in strict.items():
        assert part.last_stable_offset == part.high_watermark, (p, part)
        first = min(o for q, o in aborted if q == p)
        producer = held[p].records()[first][0].producer_id
        expected = [{"producer_id": producer, "first_offset": first}]
        assert part.aborted == expected, (
            f"partition {p}: aborted transactions {part.aborted}, expected {expected}"
        )
    assert readback.committed(_addr(broker), offsets_group, topic, 2)[0] == 1, (
        "the offset sent inside the committed transaction"
    )
    _check_versions(broker, out)


def test_a_second_producer_with_the_transactional_id_fences_the_first(
    node: Node, served: tuple[str, support.Broker]
) -> None:
    """InitProducerId of a second producer aborts the first one's open transaction; the
    first, fenced, is refused INVALID_PRODUCER_EPOCH (47) on Produce (Kafka's
    ProducerAppendInfo.checkProducerEpoch) and on EndTxn v1 (KafkaApis answers
    PRODUCER_FENCED as INVALID_PRODUCER_EPOCH below EndTxn v2, KIP-588)."""
    revision, broker = served
    _need(revision, broker, TRANSACTIONS, "transactions")
    topic = f"kjs-fence-{uuid.uuid4().hex[:8]}"
    _create(node, broker, topic, 1)
    txn_id = f"kjs-fence-{uuid.uuid4().hex[:8]}"
    out = _run(node, "fencing.js", broker=broker.address, topic=topic, txn_id=txn_id)
    out.check_done()
    refused = {(e["step"], e["type"], e["code"]) for e in out.events("refused")}
    assert refused == {
        ("send", "INVALID_PRODUCER_EPOCH", 47),
        ("commit", "INVALID_PRODUCER_EPOCH", 47),
    }, (
        f"the fenced producer: {out.events('refused') + out.events('accepted')}, expected "
        "its send and its commit refused INVALID_PRODUCER_EPOCH (47)"
    )
    sent = {e["key"]: e["offset"] for e in out.events("sent")}
    assert set(sent) == {"a-1", "b-1"}, out.lines
    (part,) = readback.log(_addr(broker), topic, 1).values()
    assert [(kind, offset) for offset, _, kind in part.markers()] == [
        ("ABORT", sent["a-1"] + 1),
        ("COMMIT", sent["b-1"] + 1),
    ], f"markers {part.markers()}, expected a-1's transaction aborted and b-1's committed"
    (strict,) = readback.log(_addr(broker), topic, 1, readback.READ_COMMITTED).values()
    assert [a["first_offset"] for a in strict.aborted] == [sent["a-1"]], strict.aborted
    _check_versions(broker, out)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_sasl_authenticates_and_refuses_a_wrong_password(
    node: Node, served: tuple[str, support.Broker], mechanism: str
) -> None:
    """KafkaJS authenticates with each mechanism against a broker requiring SASL, produces
    and consumes in a group over it; a wrong password is refused."""
    revision, plain = served
    _need(revision, plain, SASL, f"SASL {mechanism.upper()}")
    try:
        broker = _serve(revision, *SASL_SERVE_ARGS)
    except RuntimeError as exc:
        raise AssertionError(
            f"the broker advertises SaslHandshake and SaslAuthenticate but does not serve "
            f"with {' '.join(SASL_SERVE_ARGS)}: {exc}"
        ) from None
    try:
        auth = {"mechanism": mechanism, "username": USER, "password": PASSWORD}
        out = _run(node, "sasl.js", broker=broker.address, **auth)
        out.check_done()
        (done,) = out.events("authenticated")
        assert done["brokers"] and done["brokers"][0]["port"] == broker.port, done

        wrong = _run(node, "sasl.js", broker=broker.address, **{**auth, "password": "wrong"})
        assert wrong.returncode != 0, "a wrong password was accepted"
        assert "KafkaJSSASLAuthenticationError" in _error_names(wrong), wrong.why()
        refusals = [e for e in wrong.events("response_error") if "SaslAuthenticate" in e["request"]]
        assert refusals, (
            "the broker answered every SaslAuthenticate with a wrong password without an error "
            f"(KafkaJS gave up on its own side): {wrong.why()}"
        )

        produced, consumed, topic, _ = _group_scenario(node, broker, count=10, **auth)
        _check_log_holds(broker, topic, produced.events("sent"), (USER, PASSWORD))
        assert len(consumed.events("record")) == 10, consumed.why()
        _check_versions(plain, out, produced, consumed)
    finally:
        broker.stop()
