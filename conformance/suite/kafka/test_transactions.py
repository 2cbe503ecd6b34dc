"""Kafka transactions: the coordinator's requests (SPEC-transactions.md, area "transactions";
the transactional records and reads are in test_transactions_records.py).

Each case makes its own topic and transactional id, speaks the highest version both sides
know unless it is about a version (AddPartitionsToTxn in its client form, v0-3), and waits
within a bound for what Kafka does after it answers (markers, the last stable offset,
committed offsets, a timed-out transaction's abort): see :mod:`.transaction_steps`.
"""

from __future__ import annotations

import time

from conformance.suite.case import case, require
from conformance.suite.kafka.steps import create_topic
from conformance.suite.kafka.transaction_group_steps import txn_offsets
from conformance.suite.kafka.transaction_steps import (
    WAIT_S,
    Producer,
    add_ok,
    add_partitions,
    begin,
    end_txn,
    init_producer_id,
    offset_fetch,
    produce_txn,
    txn_batch,
)
from conformance.suite.kafka.verify import (
    KafkaClient,
    at_every_version,
    expect_code,
    need,
    usable,
)
from conformance.suite.target import CaseContext


def _fenced(version: int, since: int) -> str:
    """What a fenced request gets at ``version`` of an API that knows PRODUCER_FENCED
    from ``since`` (KIP-588)."""
    return "PRODUCER_FENCED" if version >= since else "INVALID_PRODUCER_EPOCH"


@case("kafka/transactions/1", "KAF-TXN-1")
@at_every_version("InitProducerId")
def test_a_new_transactional_id_starts_at_epoch_0_and_is_bumped(
    target: CaseContext, version: int
) -> None:
    """A new transactional id gets epoch 0; initialised again, the same id at epoch 1.

    KAF-TXN-1: "InitProducerId with a transactional id never used before and a timeout
    within the broker's limit answers error 0, a producer id of at least 0 and epoch 0; a
    second InitProducerId with the same transactional id, when no transaction is under way,
    answers the same producer id with the epoch one higher."
    """
    need(target, "InitProducerId", version)
    with KafkaClient(target) as k:
        tid = target.name("t1-tx")
        one = init_producer_id(target, k, tid, "KAF-TXN-1", version=version)
        expect_code(one, "error_code", "NONE", "KAF-TXN-1", f"InitProducerId v{version} {tid!r}")
        require(
            one["producer_id"] >= 0 and one["producer_epoch"] == 0,
            "KAF-TXN-1",
            f"producer id {one['producer_id']} epoch {one['producer_epoch']}, expected an id "
            "of at least 0 at epoch 0",
            one.at("producer_epoch"),
        )
        two = init_producer_id(target, k, tid, "KAF-TXN-1", version=version)
        expect_code(two, "error_code", "NONE", "KAF-TXN-1", f"InitProducerId v{version} again")
        require(
            (two["producer_id"], two["producer_epoch"]) == (one["producer_id"], 1),
            "KAF-TXN-1",
            f"again: producer id {two['producer_id']} epoch {two['producer_epoch']}, expected "
            f"{one['producer_id']} at epoch 1",
            two.at("producer_epoch"),
        )


@case("kafka/transactions/2", "KAF-TXN-2")
def test_an_empty_transactional_id_or_a_timeout_of_0_is_refused(target: CaseContext) -> None:
    """An empty transactional id is INVALID_REQUEST; a timeout of 0 or below
    INVALID_TRANSACTION_TIMEOUT.

    KAF-TXN-2: "InitProducerId with an empty transactional id answers INVALID_REQUEST; with
    a transaction timeout of 0 or below, INVALID_TRANSACTION_TIMEOUT."
    """
    with KafkaClient(target) as k:
        empty = init_producer_id(target, k, "", "KAF-TXN-2")
        expect_code(empty, "error_code", "INVALID_REQUEST", "KAF-TXN-2", "InitProducerId ''")
        for timeout in (0, -1):
            tid = target.name("t2-tx")
            got = init_producer_id(target, k, tid, "KAF-TXN-2", timeout_ms=timeout)
            what = f"InitProducerId {tid!r} with timeout {timeout} ms"
            expect_code(got, "error_code", "INVALID_TRANSACTION_TIMEOUT", "KAF-TXN-2", what)


@case("kafka/transactions/3", "KAF-TXN-3")
@at_every_version("AddPartitionsToTxn", until=3)
def test_existing_partitions_are_added_to_the_transaction(
    target: CaseContext, version: int
) -> None:
    """AddPartitionsToTxn with the current producer id and epoch: error 0 per partition.

    KAF-TXN-3: "AddPartitionsToTxn (v0-3) with the transactional id's current producer id
    and epoch, naming partitions that exist, answers error 0 for every partition."
    """
    need(target, "AddPartitionsToTxn", version)
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t3", partitions=2)
        p = begin(target, k, "t3", "KAF-TXN-3")
        got = add_partitions(target, k, p, {topic: [0, 1]}, "KAF-TXN-3", version=version)
        for (t, i), r in got.items():
            what = f"AddPartitionsToTxn v{version} {t}/{i}"
            expect_code(r, "partition_error_code", "NONE", "KAF-TXN-3", what)
        end_txn(target, k, p, False, "KAF-TXN-3")


@case("kafka/transactions/4", "KAF-TXN-4")
def test_an_unknown_topic_fails_the_whole_add(target: CaseContext) -> None:
    """AddPartitionsToTxn naming a topic that does not exist: UNKNOWN_TOPIC_OR_PARTITION
    for it, OPERATION_NOT_ATTEMPTED for the others, nothing added.

    KAF-TXN-4: "AddPartitionsToTxn naming a topic that does not exist answers
    UNKNOWN_TOPIC_OR_PARTITION for its partitions and OPERATION_NOT_ATTEMPTED for every
    other partition of the request, and adds none of them."
    """
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t4")
        absent = target.name("t4-absent")
        p = begin(target, k, "t4", "KAF-TXN-4")
        got = add_partitions(target, k, p, {topic: [0], absent: [0]}, "KAF-TXN-4")
        what = "AddPartitionsToTxn with an unknown topic"
        expect_code(
            got[(absent, 0)],
            "partition_error_code",
            "UNKNOWN_TOPIC_OR_PARTITION",
            "KAF-TXN-4",
            what,
        )
        expect_code(
            got[(topic, 0)], "partition_error_code", "OPERATION_NOT_ATTEMPTED", "KAF-TXN-4", what
        )
        # nothing was added: the transactional id has no transaction to commit
        ended = end_txn(target, k, p, True, "KAF-TXN-4")
        what = "EndTxn (commit) after an AddPartitionsToTxn that added nothing"
        expect_code(ended, "error_code", "INVALID_TXN_STATE", "KAF-TXN-4", what)


@case("kafka/transactions/5", "KAF-TXN-5")
def test_an_unknown_transactional_id_or_producer_id_is_not_mapped(target: CaseContext) -> None:
    """Another producer id, or an unknown transactional id: INVALID_PRODUCER_ID_MAPPING.

    KAF-TXN-5: "AddPartitionsToTxn, AddOffsetsToTxn and EndTxn with a transactional id the
    coordinator does not know, or with a producer id other than the transactional id's,
    answer INVALID_PRODUCER_ID_MAPPING."
    """
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t5")
        p = begin(target, k, "t5", "KAF-TXN-5")
        unknown = Producer(target.name("t5-never"), p.pid, p.epoch)
        other = Producer(p.tid, p.pid + 1, p.epoch)
        for who, q in (("an unknown transactional id", unknown), ("another producer id", other)):
            got = add_partitions(target, k, q, {topic: [0]}, "KAF-TXN-5")[(topic, 0)]
            what = f"AddPartitionsToTxn with {who}"
            expect_code(
                got, "partition_error_code", "INVALID_PRODUCER_ID_MAPPING", "KAF-TXN-5", what
            )
            v = usable(target, "AddOffsetsToTxn")
            body = {
                "transactional_id": q.tid,
                "producer_id": q.pid,
                "producer_epoch": q.epoch,
                "group_id": target.name("t5-group"),
            }
            what = f"AddOffsetsToTxn v{v} with {who}"
            reply = k.call("AddOffsetsToTxn", v, body, "KAF-TXN-5", what)
            expect_code(reply, "error_code", "INVALID_PRODUCER_ID_MAPPING", "KAF-TXN-5", what)
            ended = end_txn(target, k, q, True, "KAF-TXN-5")
            what = f"EndTxn with {who}"
            expect_code(ended, "error_code", "INVALID_PRODUCER_ID_MAPPING", "KAF-TXN-5", what)


@case("kafka/transactions/6", "KAF-TXN-6")
@at_every_version("EndTxn")
def test_an_old_epoch_is_fenced(target: CaseContext, version: int) -> None:
    """After a new InitProducerId, the old epoch's AddPartitionsToTxn and EndTxn are
    fenced: PRODUCER_FENCED from v2, INVALID_PRODUCER_EPOCH before.

    KAF-TXN-6: "once InitProducerId has bumped a transactional id's epoch, a request with
    the old epoch is fenced: AddPartitionsToTxn and EndTxn answer PRODUCER_FENCED from v2 on
    and INVALID_PRODUCER_EPOCH in v0-1."
    """
    need(target, "EndTxn", version)
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t6")
        old = begin(target, k, "t6", "KAF-TXN-6")
        again = init_producer_id(target, k, old.tid, "KAF-TXN-6")
        expect_code(again, "error_code", "NONE", "KAF-TXN-6", "InitProducerId again")
        add_v = min(version, 3)
        if add_v <= usable(target, "AddPartitionsToTxn", highest=3):
            got = add_partitions(target, k, old, {topic: [0]}, "KAF-TXN-6", version=add_v)
            what = f"AddPartitionsToTxn v{add_v} at the fenced epoch {old.epoch}"
            expect_code(
                got[(topic, 0)], "partition_error_code", _fenced(add_v, 2), "KAF-TXN-6", what
            )
        ended = end_txn(target, k, old, True, "KAF-TXN-6", version=version)
        what = f"EndTxn v{version} at the fenced epoch {old.epoch}"
        expect_code(ended, "error_code", _fenced(version, 2), "KAF-TXN-6", what)


@case("kafka/transactions/13", "KAF-TXN-13")
def test_a_new_producer_aborts_the_ongoing_transaction(target: CaseContext) -> None:
    """InitProducerId during a transaction: CONCURRENT_TRANSACTIONS, then, retried, the
    same producer id two epochs up.

    KAF-TXN-13: "InitProducerId for a transactional id whose transaction is under way
    answers CONCURRENT_TRANSACTIONS and aborts that transaction; retried, it answers error 0
    with the same producer id and an epoch two above the fenced one."
    """
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t13")
        p = begin(target, k, "t13", "KAF-TXN-13")
        add_ok(target, k, p, topic, [0], "KAF-TXN-13")
        wrote = produce_txn(target, k, p.tid, topic, txn_batch([b"x"], p), "KAF-TXN-13")
        expect_code(wrote, "error_code", "NONE", "KAF-TXN-13", "transactional Produce")
        busy = init_producer_id(target, k, p.tid, "KAF-TXN-13")
        what = "InitProducerId while a transaction is under way"
        expect_code(busy, "error_code", "CONCURRENT_TRANSACTIONS", "KAF-TXN-13", what)
        after = init_producer_id(target, k, p.tid, "KAF-TXN-13", retry=("CONCURRENT_TRANSACTIONS",))
        expect_code(
            after, "error_code", "NONE", "KAF-TXN-13", f"InitProducerId retried ({WAIT_S:.0f} s)"
        )
        require(
            (after["producer_id"], after["producer_epoch"]) == (p.pid, p.epoch + 2),
            "KAF-TXN-13",
            f"retried: producer id {after['producer_id']} epoch {after['producer_epoch']}, "
            f"expected {p.pid} at epoch {p.epoch + 2}",
            after.at("producer_epoch"),
        )


@case("kafka/transactions/14", "KAF-TXN-14")
def test_end_txn_answers_by_the_transactions_state(target: CaseContext) -> None:
    """EndTxn with nothing under way: INVALID_TXN_STATE; after a commit, an abort is
    INVALID_TXN_STATE and a repeated commit error 0 (or CONCURRENT_TRANSACTIONS).

    KAF-TXN-14: "EndTxn for a transactional id with no transaction under way (nothing added
    since InitProducerId) answers INVALID_TXN_STATE; after a commit, EndTxn with committed
    false answers INVALID_TXN_STATE and a repeated commit answers error 0 (or
    CONCURRENT_TRANSACTIONS while the markers are being written)."
    """
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t14")
        p = begin(target, k, "t14", "KAF-TXN-14")
        empty = end_txn(target, k, p, True, "KAF-TXN-14")
        what = "EndTxn (commit) with no transaction under way"
        expect_code(empty, "error_code", "INVALID_TXN_STATE", "KAF-TXN-14", what)
        add_ok(target, k, p, topic, [0], "KAF-TXN-14")
        done = end_txn(target, k, p, True, "KAF-TXN-14")
        expect_code(done, "error_code", "NONE", "KAF-TXN-14", "EndTxn (commit)")
        wrong = end_txn(target, k, p, False, "KAF-TXN-14")
        expect_code(
            wrong, "error_code", "INVALID_TXN_STATE", "KAF-TXN-14", "EndTxn (abort) after a commit"
        )
        again = end_txn(target, k, p, True, "KAF-TXN-14")
        what = "EndTxn (commit) repeated"
        expect_code(again, "error_code", ("NONE", "CONCURRENT_TRANSACTIONS"), "KAF-TXN-14", what)


@case("kafka/transactions/18", "KAF-TXN-18")
def test_require_stable_names_offsets_an_open_transaction_holds(target: CaseContext) -> None:
    """OffsetFetch with require_stable: UNSTABLE_OFFSET_COMMIT while a transaction holds
    the offset, the offset once it has ended.

    KAF-TXN-18: "an OffsetFetch (v7+) with require_stable true answers a partition whose
    offset an open transaction holds (TxnOffsetCommit sent, EndTxn not yet) with error
    UNSTABLE_OFFSET_COMMIT and committed offset -1; once the transaction has ended, the
    same request answers the partition without that error."
    """
    need(target, "OffsetFetch", 7)
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t18")
        group = target.name("t18-group")
        p = begin(target, k, "t18", "KAF-TXN-18")
        txn_offsets(target, k, p, group, topic, 4, "KAF-TXN-18")
        held = offset_fetch(target, k, group, topic, "KAF-TXN-18", stable=True)
        what = "OffsetFetch with require_stable while the transaction is open"
        expect_code(held, "error_code", "UNSTABLE_OFFSET_COMMIT", "KAF-TXN-18", what)
        require(
            held["committed_offset"] == -1,
            "KAF-TXN-18",
            f"{what}: committed offset {held['committed_offset']}, expected -1",
            held.at("committed_offset"),
        )
        ended = end_txn(target, k, p, True, "KAF-TXN-18")
        expect_code(ended, "error_code", "NONE", "KAF-TXN-18", "EndTxn (commit)")
        deadline = time.monotonic() + WAIT_S
        while True:
            after = offset_fetch(target, k, group, topic, "KAF-TXN-18", stable=True)
            if after["error_code"] == 0 or time.monotonic() >= deadline:
                break
            time.sleep(0.2)
        what = "OffsetFetch with require_stable after the commit"
        expect_code(after, "error_code", "NONE", "KAF-TXN-18", what)
