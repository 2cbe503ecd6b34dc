"""Kafka transactions V2 (KIP-890 part 2, Kafka 4.0): EndTxn v5 bumps the producer epoch
at every end of a transaction, TxnOffsetCommit v5 adds the group's offsets to the
transaction itself, and so does Produce v12 for its partition (SPEC-transactions.md, area
"transactions", KAF-TXN-21 to -23).

A client of transactions V2 sends neither AddPartitionsToTxn nor AddOffsetsToTxn; the
EndTxn case adds partitions with AddPartitionsToTxn v0-3 all the same, which Kafka 4 serves
to such a client as to any, so that it checks EndTxn alone.  Kafka writes markers after it
answers EndTxn, so a retried end may answer CONCURRENT_TRANSACTIONS meanwhile: it is asked
again within a bound.
"""

from __future__ import annotations

import time

from conformance.evidence import Node
from conformance.protocols.kafka.errors import CODES
from conformance.suite.case import case, require
from conformance.suite.kafka.steps import create_topic
from conformance.suite.kafka.transaction_group_steps import committed_within, txn_commit
from conformance.suite.kafka.transaction_steps import (
    WAIT_S,
    Producer,
    add_ok,
    begin,
    end_txn,
    expect_marker,
    produce_txn,
    txn_batch,
)
from conformance.suite.kafka.verify import KafkaClient, expect_code, need, serves
from conformance.suite.target import CaseContext

COMMIT_MARKER = 1


def _end(
    target: CaseContext, k: KafkaClient, p: Producer, epoch: int, committed: bool, req: str
) -> Node:
    """EndTxn v5 at ``epoch``, asked again while CONCURRENT_TRANSACTIONS (markers still
    being written), within WAIT_S."""
    deadline = time.monotonic() + WAIT_S
    while True:
        got = end_txn(target, k, p, committed, req, version=5, epoch=epoch)
        busy = got["error_code"] == CODES["CONCURRENT_TRANSACTIONS"]
        if not busy or time.monotonic() >= deadline:
            return got
        time.sleep(0.1)


def _bumped(got: Node, p: Producer, epoch: int, req: str, what: str) -> None:
    """``got`` answers error 0 with ``p``'s producer id at ``epoch``."""
    expect_code(got, "error_code", "NONE", req, what)
    require(
        (got["producer_id"], got["producer_epoch"]) == (p.pid, epoch),
        req,
        f"{what}: producer id {got['producer_id']} epoch {got['producer_epoch']}, expected "
        f"{p.pid} at epoch {epoch}",
        got.at("producer_id") + got.at("producer_epoch"),
    )


@case("kafka/transactions/21", "KAF-TXN-21")
def test_end_txn_v5_bumps_the_epoch_at_every_end(target: CaseContext) -> None:
    """EndTxn v5: each end answers the producer id and the epoch one up, the marker
    carries it, a retry answers the same, the next transaction runs at it, and an old
    epoch is fenced.

    KAF-TXN-21: "EndTxn v5 (transactions V2, KIP-890 part 2) ending an ongoing transaction
    answers error 0 with the transactional id's producer id and the request's epoch plus
    one, and the transaction's marker is written with that bumped epoch; the same EndTxn
    sent again (a retry, at the epoch below the current one) answers error 0 with the same
    producer id and epoch; the next transaction runs at the bumped epoch (its records from
    sequence 0); at the current epoch, with no transaction under way, an abort
    answers error 0 and bumps the epoch again while a commit answers INVALID_TXN_STATE;
    an epoch below that is PRODUCER_FENCED."
    """
    req = "KAF-TXN-21"
    need(target, "EndTxn", 5)
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t21")
        p = begin(target, k, "t21", req)
        e = p.epoch
        add_ok(target, k, p, topic, [0], req)
        wrote = produce_txn(target, k, p.tid, topic, txn_batch([b"v1"], p), req)
        expect_code(wrote, "error_code", "NONE", req, f"transactional Produce at epoch {e}")
        got = end_txn(target, k, p, True, req, version=5)
        _bumped(got, p, e + 1, req, f"EndTxn v5 (commit) at epoch {e}")
        bumped = Producer(p.tid, p.pid, e + 1)
        expect_marker(target, k, topic, 1, bumped, COMMIT_MARKER, req)
        _bumped(_end(target, k, p, e, True, req), p, e + 1, req, "EndTxn v5 (commit) retried")
        add_ok(target, k, bumped, topic, [0], req)
        wrote = produce_txn(target, k, p.tid, topic, txn_batch([b"v2"], bumped), req)
        what = f"transactional Produce at the bumped epoch {e + 1}, sequence 0"
        expect_code(wrote, "error_code", "NONE", req, what)
        got = end_txn(target, k, bumped, False, req, version=5)
        _bumped(got, p, e + 2, req, f"EndTxn v5 (abort) at epoch {e + 1}")
        got = _end(target, k, p, e + 1, False, req)
        _bumped(got, p, e + 2, req, "EndTxn v5 (abort) retried")
        got = end_txn(target, k, p, True, req, version=5, epoch=e + 2)
        what = f"EndTxn v5 (commit) at epoch {e + 2}, no transaction under way"
        expect_code(got, "error_code", "INVALID_TXN_STATE", req, what)
        got = end_txn(target, k, p, False, req, version=5, epoch=e + 2)
        _bumped(got, p, e + 3, req, f"EndTxn v5 (abort) at epoch {e + 2}, nothing under way")
        got = end_txn(target, k, p, True, req, version=5, epoch=e)
        what = f"EndTxn v5 (commit) at the old epoch {e} (the current one is {e + 3})"
        expect_code(got, "error_code", "PRODUCER_FENCED", req, what)


@case("kafka/transactions/22", "KAF-TXN-22")
def test_txn_offset_commit_v5_adds_the_group_to_the_transaction(target: CaseContext) -> None:
    """TxnOffsetCommit v5 with no AddOffsetsToTxn before it: error 0, committed with the
    transaction; v4 of the same is TRANSACTION_ABORTABLE.

    KAF-TXN-22: "a TxnOffsetCommit v5 (transactions V2) for a group whose offsets
    AddOffsetsToTxn did not add to the transaction adds them itself: it answers error 0,
    and its offset becomes the group's committed offset at EndTxn(commit); the same
    request at v4 answers TRANSACTION_ABORTABLE (and INVALID_TXN_STATE in v0-3)."
    """
    req = "KAF-TXN-22"
    need(target, "TxnOffsetCommit", 5)
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t22")
        group = target.name("t22-group")
        p = begin(target, k, "t22", req)
        if serves(target, "TxnOffsetCommit", 4):
            got = txn_commit(k, p, group, topic, 3, req, version=4)
            what = "TxnOffsetCommit v4 for a group no AddOffsetsToTxn added"
            expect_code(got, "error_code", "TRANSACTION_ABORTABLE", req, what)
        got = txn_commit(k, p, group, topic, 8, req, version=5)
        what = "TxnOffsetCommit v5 for a group no AddOffsetsToTxn added"
        expect_code(got, "error_code", "NONE", req, what)
        ended = end_txn(target, k, p, True, req)
        expect_code(ended, "error_code", "NONE", req, "EndTxn (commit)")
        committed_within(target, k, group, topic, 8, req)


@case("kafka/transactions/23", "KAF-TXN-23")
def test_produce_v12_adds_its_partition_to_the_transaction(target: CaseContext) -> None:
    """A transactional Produce v12 to a partition no AddPartitionsToTxn added: error 0, and
    EndTxn (commit) writes its marker; Produce v11 of the same is TRANSACTION_ABORTABLE.

    KAF-TXN-23: "a transactional Produce v12 (transactions V2) to a partition AddPartitionsToTxn
    did not add to the transaction adds it itself: the write answers error 0, and
    EndTxn(commit) then writes that partition's commit marker; the same write at v11 answers
    TRANSACTION_ABORTABLE."
    """
    req = "KAF-TXN-23"
    need(target, "Produce", 12)
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t23")
        p = begin(target, k, "t23", req)
        if serves(target, "Produce", 11):
            data = txn_batch([b"v11"], p)
            wrote = produce_txn(target, k, p.tid, topic, data, req, version=11)
            what = "transactional Produce v11 to a partition no AddPartitionsToTxn added"
            expect_code(wrote, "error_code", "TRANSACTION_ABORTABLE", req, what)
        wrote = produce_txn(target, k, p.tid, topic, txn_batch([b"v12"], p), req, version=12)
        what = "transactional Produce v12 to a partition no AddPartitionsToTxn added"
        expect_code(wrote, "error_code", "NONE", req, what)
        # ended by EndTxn v4 (no epoch bump), so that this case checks the Produce alone
        ended = end_txn(target, k, p, True, req)
        expect_code(ended, "error_code", "NONE", req, "EndTxn (commit)")
        expect_marker(target, k, topic, 1, p, COMMIT_MARKER, req)
