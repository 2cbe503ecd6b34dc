"""Transactions V2 (KIP-890 part 2, Kafka 4.0) in process: EndTxn v5's epoch bump at every
end and its table of retries (Kafka's ``TransactionCoordinator.endTransaction``, TV2),
TxnOffsetCommit v5 adding the group itself and the version mapping of a group not added
(``AddPartitionsToTxnManager``), the coordinator's implicit add for a Produce v12; and the
quirks that break KAF-TXN-21 and KAF-TXN-22."""

from __future__ import annotations

from typing import Any

from conformance.protocols.kafka import quirks_transactions as qt
from conformance.protocols.kafka import records as rec
from conformance.protocols.kafka import transaction_state as ts
from conformance.protocols.kafka.codec import Request
from conformance.protocols.kafka.context import Broker
from conformance.protocols.kafka.errors import NAMES
from conformance.protocols.kafka.handlers import HANDLERS
from conformance.protocols.kafka.transaction_coordinator import coordinator_of
from tests.kafka.test_transactions import TOPIC, _broker, add, call, end, fetch, init, produce


def end5(b: Broker, tid: str, pid: int, epoch: int, commit: bool) -> tuple[str, int, int]:
    body = {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
            "committed": commit}  # fmt: skip
    got = call(b, 26, 5, body)
    return NAMES[got["error_code"]], got["producer_id"], got["producer_epoch"]


def txn_commit(
    b: Broker, version: int, pid: int, epoch: int, group: str = "g", **member: Any
) -> str:
    body = {
        "transactional_id": "t1", "group_id": group, "producer_id": pid, "producer_epoch": epoch,
        "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "committed_offset": 7}]}],
        **member,
    }  # fmt: skip
    return NAMES[call(b, 28, version, body)["topics"][0]["partitions"][0]["error_code"]]


def markers(b: Broker) -> list[tuple[int, int, bytes | None]]:
    """(offset, producer epoch, key) of each control batch in partition 0."""
    part = fetch(b, 0)
    return [
        (x.base_offset, x.producer_epoch, x.records[0].key)
        for x in rec.decode_batches(part["records"])
        if x.is_control
    ]


def test_end_txn_v5_bumps_the_epoch_and_the_marker_carries_it() -> None:
    b = _broker()
    pid = init(b)["producer_id"]
    assert add(b, "t1", pid, 0, 0) == ["NONE"]
    assert produce(b, "t1", pid, 0, 0) == "NONE"
    assert end5(b, "t1", pid, 0, True) == ("NONE", pid, 1)
    assert [(o, e) for o, e, _ in markers(b)] == [(2, 1)]
    assert end5(b, "t1", pid, 0, True) == ("NONE", pid, 1)  # a retry: the same answer
    assert end5(b, "t1", pid, 0, False) == ("INVALID_TXN_STATE", -1, -1)  # retry of another end
    # the next transaction runs at the bumped epoch, its records from sequence 0
    assert add(b, "t1", pid, 1, 0) == ["NONE"]
    assert produce(b, "t1", pid, 1, 0) == "NONE"
    assert produce(b, "t1", pid, 0, 2) == "INVALID_PRODUCER_EPOCH"  # the old epoch is fenced
    assert end5(b, "t1", pid, 1, False) == ("NONE", pid, 2)
    assert fetch(b, 1)["aborted_transactions"] == [{"producer_id": pid, "first_offset": 3}]
    assert end5(b, "t1", pid, 2, True) == ("INVALID_TXN_STATE", -1, -1)  # nothing under way
    assert end5(b, "t1", pid, 2, False) == ("NONE", pid, 3)  # an abort of nothing: a bump
    assert [(o, e) for o, e, _ in markers(b)] == [(2, 1), (5, 2)]  # that abort wrote none
    assert end5(b, "t1", pid, 1, False) == ("PRODUCER_FENCED", -1, -1)  # two below
    assert end5(b, "t1", pid, 4, False) == ("PRODUCER_FENCED", -1, -1)  # above
    assert end5(b, "t1", pid + 1, 3, False) == ("INVALID_PRODUCER_ID_MAPPING", -1, -1)
    assert end5(b, "nope", pid, 3, False) == ("INVALID_PRODUCER_ID_MAPPING", -1, -1)
    assert end5(b, "", pid, 3, False) == ("INVALID_REQUEST", -1, -1)
    assert init(b)["producer_epoch"] == 4  # InitProducerId bumps from the current one


def test_end_txn_v5_in_empty_aborts_but_does_not_commit() -> None:
    b = _broker()
    pid = init(b)["producer_id"]
    assert end5(b, "t1", pid, 0, True) == ("INVALID_TXN_STATE", -1, -1)
    assert end5(b, "t1", pid, 0, False) == ("NONE", pid, 1)
    assert coordinator_of(b).txns["t1"].state == ts.COMPLETE_ABORT
    assert end5(b, "t1", pid, 0, False) == ("NONE", pid, 1)  # retried


def test_end_txn_v4_keeps_the_epoch_and_v5_answers_the_fields_only_from_v5() -> None:
    b = _broker()
    pid = init(b)["producer_id"]
    add(b, "t1", pid, 0, 0)
    assert end(b, "t1", pid, 0, True, version=4) == "NONE"
    assert coordinator_of(b).txns["t1"].producer_epoch == 0
    body = {"transactional_id": "t1", "producer_id": pid, "producer_epoch": 0, "committed": True}
    assert "producer_id" not in call(b, 26, 4, body)


def test_an_exhausted_epoch_rotates_the_producer_id_after_the_end() -> None:
    b = _broker()
    pid = init(b)["producer_id"]
    meta = coordinator_of(b).txns["t1"]
    meta.producer_epoch = ts.MAX_EPOCH - 1
    add(b, "t1", pid, ts.MAX_EPOCH - 1, 0)
    assert end5(b, "t1", pid, ts.MAX_EPOCH - 1, True) == ("NONE", pid, ts.MAX_EPOCH)
    assert meta.producer_id != pid and meta.producer_epoch == 0
    assert meta.previous_producer_id == pid
    # the client's retry at the exhausted epoch answers the new producer id at epoch 0
    assert end5(b, "t1", pid, ts.MAX_EPOCH - 1, True) == ("NONE", meta.producer_id, 0)


def test_txn_offset_commit_v5_adds_the_group_and_older_versions_refuse_by_version() -> None:
    b = _broker()
    pid = init(b)["producer_id"]
    assert txn_commit(b, 3, pid, 0) == "INVALID_TXN_STATE"
    assert txn_commit(b, 4, pid, 0) == "TRANSACTION_ABORTABLE"
    assert b.engine.committed("g", TOPIC, 0) is None
    assert txn_commit(b, 5, pid, 0) == "NONE"
    assert coordinator_of(b).txns["t1"].groups == {"g"}
    assert txn_commit(b, 4, pid, 0) == "NONE"  # now in the transaction: v4 is verified
    assert txn_commit(b, 5, pid, 1) == "INVALID_PRODUCER_EPOCH"
    assert txn_commit(b, 5, pid + 1, 0) == "INVALID_PRODUCER_ID_MAPPING"
    assert end5(b, "t1", pid, 0, True) == ("NONE", pid, 1)
    assert b.engine.committed("g", TOPIC, 0) == 7


def test_produce_v12_adds_the_partition_through_the_coordinator() -> None:
    """Produce v12 is not in this codec yet; the coordinator's side of it is."""
    b = _broker()
    pid = init(b)["producer_id"]
    tx = coordinator_of(b)
    assert tx.produce_check("t1", pid, 0, (TOPIC, 1)) == "TRANSACTION_ABORTABLE"
    assert tx.produce_check("t1", pid, 0, (TOPIC, 1), add=True) == "NONE"
    assert tx.txns["t1"].partitions == {(TOPIC, 1)} and tx.txns["t1"].state == ts.ONGOING
    assert tx.produce_check("t1", pid, 1, (TOPIC, 1), add=True) == "PRODUCER_FENCED"
    assert tx.produce_check("", pid, 0, (TOPIC, 1), add=True) == "INVALID_REQUEST"


def quirked(quirk: str, b: Broker, key: int, version: int, body: dict[str, Any]) -> Any:
    request = Request(key, version, 1, "test", body)
    seen = qt.before((quirk,), request)
    assert isinstance(seen, Request)
    answer = HANDLERS[key](b, seen, "peer")
    assert isinstance(answer, dict)
    return qt.after((quirk,), seen, answer)


def test_the_quirk_end_txn_v5_epoch_unsaid_hides_the_bump() -> None:
    b = _broker()
    pid = init(b)["producer_id"]
    add(b, "t1", pid, 0, 0)
    body = {"transactional_id": "t1", "producer_id": pid, "producer_epoch": 0, "committed": True}
    got = quirked("end-txn-v5-epoch-unsaid", b, 26, 5, body)
    assert (got["error_code"], got["producer_id"], got["producer_epoch"]) == (0, -1, -1)
    assert coordinator_of(b).txns["t1"].producer_epoch == 1  # the broker bumped it anyway


def test_the_quirk_txn_offset_commit_v5_not_added_serves_v5_as_v4() -> None:
    b = _broker()
    pid = init(b)["producer_id"]
    body = {
        "transactional_id": "t1", "group_id": "g", "producer_id": pid, "producer_epoch": 0,
        "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "committed_offset": 7}]}],
    }  # fmt: skip
    got = quirked("txn-offset-commit-v5-not-added", b, 28, 5, body)
    assert NAMES[got["topics"][0]["partitions"][0]["error_code"]] == "TRANSACTION_ABORTABLE"
    assert txn_commit(b, 5, pid, 0) == "NONE"  # without the quirk


def test_the_fenced_quirk_also_downgrades_end_txn_v5() -> None:
    b = _broker()
    pid = init(b)["producer_id"]
    body = {"transactional_id": "t1", "producer_id": pid, "producer_epoch": 7, "committed": True}
    got = quirked("txn-fenced-as-invalid-epoch", b, 26, 5, body)
    assert NAMES[got["error_code"]] == "INVALID_PRODUCER_EPOCH"
    assert "KAF-TXN-21" in qt.QUIRKS["txn-fenced-as-invalid-epoch"].breaks


def test_init_producer_id_after_a_v5_end_takes_the_old_epoch_as_a_retry() -> None:
    """Kafka's ``prepareIncrementProducerEpoch``: the epoch EndTxn v5 bumped from is the
    last epoch, so an InitProducerId (v3+) naming it is answered the current epoch."""
    b = _broker()
    pid = init(b)["producer_id"]
    add(b, "t1", pid, 0, 0)
    assert end5(b, "t1", pid, 0, True) == ("NONE", pid, 1)
    again = init(b, producer_id=pid, producer_epoch=0)
    assert (NAMES[again["error_code"]], again["producer_epoch"]) == ("NONE", 1)
    bumped = init(b, producer_id=pid, producer_epoch=1)
    assert (NAMES[bumped["error_code"]], bumped["producer_epoch"]) == ("NONE", 2)
