"""The transaction coordinator and the transactional paths of Produce, Fetch and
ListOffsets, in process: each rule as Apache Kafka's TransactionCoordinator, KafkaApis
and log apply it (see handlers/transactions.py and transaction_coordinator.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.engine import Engine
from conformance.protocols.kafka import records as rec
from conformance.protocols.kafka import transaction_state as ts
from conformance.protocols.kafka.broker import KafkaFrontend
from conformance.protocols.kafka.codec import Request
from conformance.protocols.kafka.context import Broker, KafkaConfig
from conformance.protocols.kafka.errors import NAMES
from conformance.protocols.kafka.handlers import HANDLERS
from conformance.protocols.kafka.transaction_coordinator import coordinator_of
from conformance.protocols.kafka.transaction_index import control_key, control_value

TOPIC = "txn-topic"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _broker(clock: Clock | None = None, data_dir: str | None = None) -> Broker:
    engine = Engine(data_dir)
    broker = KafkaFrontend(engine, KafkaConfig(revision="apache"), clock or Clock()).broker
    if not engine.has_topic(TOPIC):
        engine.create_topic(TOPIC, 2)
    return broker


def call(broker: Broker, key: int, version: int, body: dict[str, Any]) -> Any:
    answer = HANDLERS[key](broker, Request(key, version, 1, "test", body), "peer")
    if hasattr(answer, "poll"):
        answer = answer.poll(1e18)
    return answer


def init(broker: Broker, tid: str = "t1", version: int = 4, **extra: Any) -> dict[str, Any]:
    body = {"transactional_id": tid, "transaction_timeout_ms": 60_000, **extra}
    return dict(call(broker, 22, version, body))


def add(broker: Broker, tid: str, pid: int, epoch: int, *parts: int, version: int = 3) -> list[str]:
    body = {
        "v3_and_below_transactional_id": tid,
        "v3_and_below_producer_id": pid,
        "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": TOPIC, "partitions": list(parts)}],
    }
    out = call(broker, 24, version, body)["results_by_topic_v3_and_below"]
    return [NAMES[p["partition_error_code"]] for t in out for p in t["results_by_partition"]]


def end(broker: Broker, tid: str, pid: int, epoch: int, commit: bool, version: int = 3) -> str:
    body = {
        "transactional_id": tid,
        "producer_id": pid,
        "producer_epoch": epoch,
        "committed": commit,
    }
    return NAMES[call(broker, 26, version, body)["error_code"]]


def produce(
    broker: Broker, tid: str | None, pid: int, epoch: int, seq: int, n: int = 2,
    partition: int = 0, transactional: bool = True, version: int = 9,
) -> str:  # fmt: skip
    batch = rec.encode_batch(
        rec.make_batch(
            [b"v%d" % i for i in range(seq, seq + n)],
            producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=transactional,
        )
    )  # fmt: skip
    body = {
        "transactional_id": tid,
        "acks": -1,
        "timeout_ms": 1000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": partition, "records": batch}]}],
    }
    reply = call(broker, 0, version, body)
    return NAMES[reply["responses"][0]["partition_responses"][0]["error_code"]]


def fetch(broker: Broker, isolation: int, offset: int = 0, partition: int = 0) -> dict[str, Any]:
    body = {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 20,
        "isolation_level": isolation,
        "topics": [
            {
                "topic": TOPIC,
                "partitions": [
                    {"partition": partition, "fetch_offset": offset, "partition_max_bytes": 1 << 20}
                ],
            }
        ],
    }
    return dict(call(broker, 1, 11, body)["responses"][0]["partitions"][0])


def values(part: dict[str, Any], committed: bool = False) -> list[bytes]:
    """Record values as a READ_COMMITTED consumer keeps them (aborted ones dropped)."""
    listed = part["aborted_transactions"] or []  # null for READ_UNCOMMITTED, as Kafka
    aborted = {a["producer_id"]: a["first_offset"] for a in listed}
    out = []
    for b in rec.decode_batches(part["records"]):
        if b.is_control:
            continue
        dropped = b.is_transactional and aborted.get(b.producer_id, 1 << 62) <= b.base_offset
        if committed and dropped:
            continue
        out += [r.value for r in b.records]
    return out


def test_a_new_transactional_id_gets_a_producer_id_at_epoch_0_and_then_bumps() -> None:
    b = _broker()
    first = init(b)
    assert first["error_code"] == 0 and first["producer_epoch"] == 0
    again = init(b)
    assert (again["producer_id"], again["producer_epoch"]) == (first["producer_id"], 1)


def test_empty_transactional_id_and_bad_timeouts() -> None:
    b = _broker()
    assert NAMES[init(b, "")["error_code"]] == "INVALID_REQUEST"
    for timeout in (0, -1, 900_001):
        reply = call(b, 22, 4, {"transactional_id": "t", "transaction_timeout_ms": timeout})
        assert NAMES[reply["error_code"]] == "INVALID_TRANSACTION_TIMEOUT"


def test_commit_and_abort_markers_lso_and_read_committed() -> None:
    b = _broker()
    p = init(b)
    pid, epoch = p["producer_id"], p["producer_epoch"]
    assert add(b, "t1", pid, epoch, 0) == ["NONE"]
    assert produce(b, "t1", pid, epoch, 0) == "NONE"
    open_part = fetch(b, 1)
    assert open_part["last_stable_offset"] == 0 and open_part["high_watermark"] == 2
    assert values(open_part, True) == []
    assert values(fetch(b, 0)) == [b"v0", b"v1"]
    assert end(b, "t1", pid, epoch, True) == "NONE"
    assert add(b, "t1", pid, epoch, 0) == ["NONE"]
    assert produce(b, "t1", pid, epoch, 2) == "NONE"
    assert end(b, "t1", pid, epoch, False) == "NONE"
    part = fetch(b, 1)
    assert part["high_watermark"] == part["last_stable_offset"] == 6
    assert part["aborted_transactions"] == [{"producer_id": pid, "first_offset": 3}]
    assert values(part, True) == [b"v0", b"v1"]
    assert values(fetch(b, 0)) == [b"v0", b"v1", b"v2", b"v3"]
    controls = [x for x in rec.decode_batches(part["records"]) if x.is_control]
    assert [(c.base_offset, c.records[0].key, c.producer_id) for c in controls] == [
        (2, control_key(True), pid),
        (5, control_key(False), pid),
    ]
    assert controls[0].records[0].value == control_value(0) and controls[0].is_transactional


def test_list_offsets_read_committed_latest_is_the_lso() -> None:
    b = _broker()
    p = init(b)
    add(b, "t1", p["producer_id"], 0, 1)
    produce(b, "t1", p["producer_id"], 0, 0, partition=1)
    body = {
        "replica_id": -1,
        "isolation_level": 1,
        "topics": [{"name": TOPIC, "partitions": [{"partition_index": 1, "timestamp": -1}]}],
    }
    assert call(b, 2, 5, body)["topics"][0]["partitions"][0]["offset"] == 0
    body["isolation_level"] = 0
    assert call(b, 2, 5, body)["topics"][0]["partitions"][0]["offset"] == 2


def test_a_partition_not_added_is_refused_by_version() -> None:
    b = _broker()
    p = init(b)
    pid = p["producer_id"]
    assert add(b, "t1", pid, 0, 0) == ["NONE"]
    assert produce(b, "t1", pid, 0, 0, partition=1) == "INVALID_TXN_STATE"
    assert produce(b, "t1", pid, 0, 0, partition=1, version=11) == "TRANSACTION_ABORTABLE"
    assert produce(b, None, pid, 0, 0) == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
    assert produce(b, "other", pid, 0, 0) == "INVALID_PRODUCER_ID_MAPPING"
    assert fetch(b, 0, partition=1)["high_watermark"] == 0


def test_a_new_producer_fences_the_old_and_aborts_its_transaction() -> None:
    b = _broker()
    old = init(b)
    pid = old["producer_id"]
    add(b, "t1", pid, 0, 0)
    produce(b, "t1", pid, 0, 0)
    assert NAMES[init(b)["error_code"]] == "CONCURRENT_TRANSACTIONS"
    new = init(b)
    assert (new["producer_id"], new["producer_epoch"]) == (pid, 2)
    assert fetch(b, 1)["aborted_transactions"] == [{"producer_id": pid, "first_offset": 0}]
    assert produce(b, "t1", pid, 0, 2) == "INVALID_PRODUCER_EPOCH"
    assert add(b, "t1", pid, 0, 0) == ["PRODUCER_FENCED"]
    assert add(b, "t1", pid, 0, 0, version=1) == ["INVALID_PRODUCER_EPOCH"]
    assert end(b, "t1", pid, 0, True) == "PRODUCER_FENCED"
    assert end(b, "t1", pid, 0, True, version=1) == "INVALID_PRODUCER_EPOCH"
    stale = init(b, producer_id=pid + 12345, producer_epoch=0)
    assert NAMES[stale["error_code"]] == "PRODUCER_FENCED"
    assert NAMES[init(b, version=3, producer_id=pid + 1, producer_epoch=0)["error_code"]] == (
        "INVALID_PRODUCER_EPOCH"
    )


def test_end_txn_answers_by_state() -> None:
    b = _broker()
    p = init(b)
    pid = p["producer_id"]
    assert end(b, "t1", pid, 0, True) == "INVALID_TXN_STATE"  # Empty
    add(b, "t1", pid, 0, 0)
    assert end(b, "t1", pid, 0, True) == "NONE"
    assert end(b, "t1", pid, 0, True) == "NONE"  # a retried commit
    assert end(b, "t1", pid, 0, False) == "INVALID_TXN_STATE"
    assert end(b, "t9", pid, 0, False) == "INVALID_PRODUCER_ID_MAPPING"


def test_the_timeout_aborts_and_fences() -> None:
    clock = Clock()
    b = _broker(clock)
    p = call(b, 22, 4, {"transactional_id": "slow", "transaction_timeout_ms": 1000})
    pid = p["producer_id"]
    add(b, "slow", pid, 0, 0)
    produce(b, "slow", pid, 0, 0)
    clock.now += 0.5
    assert fetch(b, 1)["last_stable_offset"] == 0
    clock.now += 1.0
    part = fetch(b, 1)
    assert part["last_stable_offset"] == 3 and part["aborted_transactions"]
    assert end(b, "slow", pid, 0, True) == "PRODUCER_FENCED"


def test_txn_offsets_are_visible_only_after_commit() -> None:
    b = _broker()
    p = init(b)
    pid = p["producer_id"]
    body = {"transactional_id": "t1", "producer_id": pid, "producer_epoch": 0, "group_id": "g"}
    assert call(b, 25, 3, body)["error_code"] == 0
    commit = {
        "transactional_id": "t1", "group_id": "g", "producer_id": pid, "producer_epoch": 0,
        "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "committed_offset": 7}]},
                   {"name": "nope", "partitions": [{"partition_index": 0, "committed_offset": 1}]}],
    }  # fmt: skip
    reply = call(b, 28, 3, commit)
    errors = {t["name"]: NAMES[t["partitions"][0]["error_code"]] for t in reply["topics"]}
    assert errors == {TOPIC: "NONE", "nope": "UNKNOWN_TOPIC_OR_PARTITION"}
    assert b.engine.committed("g", TOPIC, 0) is None
    assert end(b, "t1", pid, 0, True) == "NONE"
    assert b.engine.committed("g", TOPIC, 0) == 7


def test_aborted_offsets_are_dropped_and_unadded_groups_refused() -> None:
    b = _broker()
    pid = init(b)["producer_id"]
    commit = {
        "transactional_id": "t1", "group_id": "g", "producer_id": pid, "producer_epoch": 0,
        "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "committed_offset": 7}]}],
    }  # fmt: skip
    assert call(b, 28, 3, commit)["topics"][0]["partitions"][0]["error_code"] == 48
    call(
        b,
        25,
        3,
        {"transactional_id": "t1", "producer_id": pid, "producer_epoch": 0, "group_id": "g"},
    )
    assert call(b, 28, 3, commit)["topics"][0]["partitions"][0]["error_code"] == 0
    assert end(b, "t1", pid, 0, False) == "NONE"
    assert b.engine.committed("g", TOPIC, 0) is None


def test_batched_add_partitions_and_verify_only() -> None:
    b = _broker()
    pid = init(b)["producer_id"]
    body = {
        "transactions": [
            {"transactional_id": "t1", "producer_id": pid, "producer_epoch": 0,
             "verify_only": False, "topics": [{"name": TOPIC, "partitions": [0]}]},
            {"transactional_id": "t1", "producer_id": pid, "producer_epoch": 0,
             "verify_only": True, "topics": [{"name": TOPIC, "partitions": [0, 1]}]},
            {"transactional_id": "t1", "producer_id": pid, "producer_epoch": 0,
             "verify_only": False, "topics": [{"name": "nope", "partitions": [0]},
                                              {"name": TOPIC, "partitions": [1]}]},
        ]
    }  # fmt: skip
    out = call(b, 24, 4, body)["results_by_transaction"]
    got = [
        {(t["name"], p["partition_index"]): NAMES[p["partition_error_code"]]
         for t in r["topic_results"] for p in t["results_by_partition"]}
        for r in out
    ]  # fmt: skip
    assert got == [
        {(TOPIC, 0): "NONE"},
        {(TOPIC, 0): "NONE", (TOPIC, 1): "TRANSACTION_ABORTABLE"},
        {("nope", 0): "UNKNOWN_TOPIC_OR_PARTITION", (TOPIC, 1): "OPERATION_NOT_ATTEMPTED"},
    ]


def test_a_plain_write_inside_an_open_transaction_is_refused() -> None:
    b = _broker()
    pid = init(b)["producer_id"]
    add(b, "t1", pid, 0, 0)
    assert produce(b, "t1", pid, 0, 0) == "NONE"
    assert produce(b, "t1", pid, 0, 2, transactional=False) == "INVALID_TXN_STATE"


def test_state_survives_a_restart(tmp_path: Path) -> None:
    b = _broker(data_dir=str(tmp_path))
    pid = init(b)["producer_id"]
    add(b, "t1", pid, 0, 0)
    produce(b, "t1", pid, 0, 0)
    end(b, "t1", pid, 0, False)
    add(b, "t1", pid, 0, 1)
    b.engine.close()
    again = _broker(data_dir=str(tmp_path))
    assert fetch(again, 1)["aborted_transactions"] == [{"producer_id": pid, "first_offset": 0}]
    assert end(again, "t1", pid, 0, True) == "NONE"
    assert init(again)["producer_epoch"] == 1


def test_the_transition_table_refuses_what_kafka_never_does() -> None:
    meta = ts.TxnMeta("t", 1)
    with pytest.raises(ts.InvalidTransition, match=r"'t'.*'end_commit'.*'Empty'"):
        meta.fire(ts.END_COMMIT)
    for (state, _event), target in ts.TRANSITIONS.items():
        assert state in ts.STATES and target in ts.STATES


def test_pending_offsets_are_known_until_the_transaction_ends() -> None:
    b = _broker()
    pid = init(b)["producer_id"]
    body = {"transactional_id": "t1", "producer_id": pid, "producer_epoch": 0, "group_id": "g"}
    call(b, 25, 3, body)
    commit = {
        "transactional_id": "t1", "group_id": "g", "producer_id": pid, "producer_epoch": 0,
        "topics": [{"name": TOPIC, "partitions": [{"partition_index": 1, "committed_offset": 4}]}],
    }  # fmt: skip
    call(b, 28, 3, commit)
    tx = coordinator_of(b)
    assert tx.pending("g", TOPIC, 1) and not tx.pending("g", TOPIC, 0)
    end(b, "t1", pid, 0, True)
    assert not tx.pending("g", TOPIC, 1)
