"""Kafka transactions (SPEC-transactions.md, area "transactions").

Each case makes its own topic and transactional id, speaks the highest version both sides
know unless it is about a version (AddPartitionsToTxn in its client form, v0-3), and waits
within a bound for what Kafka does after it answers (markers, the last stable offset,
committed offsets, a timed-out transaction's abort): see :mod:`.transaction_steps`.
"""

from __future__ import annotations

import time

from conformance.protocols.kafka.errors import CODES
from conformance.suite.case import case, require
from conformance.suite.kafka.steps import create_topic
from conformance.suite.kafka.transaction_steps import (
    COMMITTED,
    TIMEOUT_WAIT_S,
    UNCOMMITTED,
    WAIT_S,
    Producer,
    add_ok,
    add_partitions,
    begin,
    end_txn,
    fetch_isolated,
    init_producer_id,
    offset_fetch,
    produce_txn,
    stable_at_least,
    txn_batch,
)
from conformance.suite.kafka.verify import (
    KafkaClient,
    at_every_version,
    expect_code,
    first,
    need,
    usable,
)
from conformance.suite.target import CaseContext

TXN_BIT, CONTROL_BIT = 0x10, 0x20


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


@case("kafka/transactions/7", "KAF-TXN-7")
def test_an_open_transaction_holds_the_last_stable_offset(target: CaseContext) -> None:
    """A transactional write is accepted; while open, the last stable offset stays at its
    first offset and READ_COMMITTED returns nothing past it; READ_UNCOMMITTED returns the
    records, flagged transactional.

    KAF-TXN-7: "a transactional batch (attribute bit 4) with the current producer id and
    epoch, produced to a partition added to the transaction, is accepted (error 0); Fetch
    then reports, for that partition, a last stable offset equal to the transaction's first
    offset while the transaction is open, and a READ_COMMITTED Fetch (isolation_level 1)
    returns no record at or past it, while a READ_UNCOMMITTED Fetch returns the
    transactional records, in batches with the transactional bit and the producer id and
    epoch."
    """
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t7")
        p = begin(target, k, "t7", "KAF-TXN-7")
        add_ok(target, k, p, topic, [0], "KAF-TXN-7")
        wrote = produce_txn(target, k, p.tid, topic, txn_batch([b"a", b"b", b"c"], p), "KAF-TXN-7")
        expect_code(wrote, "error_code", "NONE", "KAF-TXN-7", f"transactional Produce to {topic}")
        seen = fetch_isolated(target, k, topic, UNCOMMITTED, "KAF-TXN-7")
        lso = int(seen.part["last_stable_offset"])
        require(
            lso == 0,
            "KAF-TXN-7",
            f"last stable offset {lso} while the transaction from offset 0 is open, expected 0",
            seen.at("last_stable_offset"),
        )
        found = seen.located("KAF-TXN-7")
        values = [x.record.value for x in found]
        require(
            values == [b"a", b"b", b"c"],
            "KAF-TXN-7",
            f"READ_UNCOMMITTED read {values}, expected [b'a', b'b', b'c']",
            seen.values_at("KAF-TXN-7"),
        )
        bad = [x for x in found if not x.batch.attributes & TXN_BIT or x.batch.producer_id != p.pid]
        require(
            not bad,
            "KAF-TXN-7",
            f"{len(bad)} record(s) in a batch without the transactional bit or producer id {p.pid}",
            seen.records_at(*(x.name.rsplit(".record", 1)[0] + ".attributes" for x in bad)),
        )
        held = fetch_isolated(target, k, topic, COMMITTED, "KAF-TXN-7")
        past = [x.offset for x in held.located("KAF-TXN-7") if x.offset >= 0]
        require(
            not past,
            "KAF-TXN-7",
            f"READ_COMMITTED returned offset(s) {past} at or past the last stable offset 0",
            held.values_at("KAF-TXN-7"),
        )
        end_txn(target, k, p, False, "KAF-TXN-7")


def _marker(
    target: CaseContext, k: KafkaClient, topic: str, at: int, p: Producer, kind: int, req: str
) -> None:
    """The control batch at offset ``at`` is ``p``'s marker of type ``kind`` (1 commit, 0 abort)."""
    got = stable_at_least(target, k, topic, at + 1, req)
    lso = int(got.part["last_stable_offset"])
    require(
        lso >= at + 1,
        req,
        f"last stable offset {lso} {WAIT_S:.0f} s after EndTxn, expected past the marker at {at}",
        got.at("last_stable_offset"),
    )
    batches = got.batches(req)
    mine = [(i, b) for i, b in enumerate(batches) if b.base_offset <= at <= b.last_offset]
    require(mine, req, f"no batch holds offset {at} (the marker)", got.records_at())
    i, b = mine[0]
    name = f"batch[{i}]"
    flags = b.attributes & (TXN_BIT | CONTROL_BIT)
    require(
        flags == TXN_BIT | CONTROL_BIT,
        req,
        f"the batch at offset {at} has attributes {b.attributes:#x}, expected the transactional "
        "and control bits (0x30)",
        got.records_at(f"{name}.attributes"),
    )
    require(
        (b.producer_id, b.producer_epoch) == (p.pid, p.epoch),
        req,
        f"the marker's producer {b.producer_id} epoch {b.producer_epoch}, expected "
        f"{p.pid} epoch {p.epoch}",
        got.records_at(f"{name}.producer_id", f"{name}.producer_epoch"),
    )
    r = b.records[0] if b.records else None
    want = bytes((0, 0, 0, kind))
    require(
        r is not None
        and r.key == want
        and r.value is not None
        and len(r.value) == 6
        and r.value[:2] == b"\x00\x00",
        req,
        f"the marker's key {r.key if r else None!r} and value {r.value if r else None!r}, expected "
        f"key {want!r} and a 6-byte value of version 0",
        got.records_at(f"{name}.record[0].key", f"{name}.record[0].value"),
    )


@case("kafka/transactions/8", "KAF-TXN-8")
def test_a_commit_writes_a_commit_marker_and_frees_the_records(target: CaseContext) -> None:
    """EndTxn(commit): a commit marker follows the records, the last stable offset passes
    it, READ_COMMITTED reads the records.

    KAF-TXN-8: "after EndTxn with committed true answers error 0, the partition receives a
    commit marker: a control batch (attribute bits 4 and 5) with the transaction's producer
    id and epoch holding one record whose key is version 0 and type 1 (6 bytes: int16 0,
    int16 1) and whose value is version 0 and a coordinator epoch (int16 0, int32); the last
    stable offset then passes it, and a READ_COMMITTED Fetch returns the transaction's
    records."
    """
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t8")
        p = begin(target, k, "t8", "KAF-TXN-8")
        add_ok(target, k, p, topic, [0], "KAF-TXN-8")
        wrote = produce_txn(target, k, p.tid, topic, txn_batch([b"x", b"y"], p), "KAF-TXN-8")
        expect_code(wrote, "error_code", "NONE", "KAF-TXN-8", "transactional Produce")
        ended = end_txn(target, k, p, True, "KAF-TXN-8")
        expect_code(ended, "error_code", "NONE", "KAF-TXN-8", "EndTxn (commit)")
        _marker(target, k, topic, 2, p, 1, "KAF-TXN-8")
        got = fetch_isolated(target, k, topic, COMMITTED, "KAF-TXN-8")
        values = [x.record.value for x in got.located("KAF-TXN-8") if not x.batch.is_control]
        require(
            values == [b"x", b"y"],
            "KAF-TXN-8",
            f"READ_COMMITTED read {values} after the commit, expected [b'x', b'y']",
            got.values_at("KAF-TXN-8"),
        )


@case("kafka/transactions/9", "KAF-TXN-9")
def test_an_abort_writes_an_abort_marker_and_lists_the_transaction(target: CaseContext) -> None:
    """EndTxn(abort): an abort marker; READ_COMMITTED lists the aborted transaction;
    READ_UNCOMMITTED still reads the records.

    KAF-TXN-9: "after EndTxn with committed false answers error 0, the partition receives an
    abort marker (a control record of type 0); a READ_COMMITTED Fetch from the transaction's
    first offset lists the transaction in aborted_transactions (its producer id and first
    offset), and a READ_UNCOMMITTED Fetch still returns its records."
    """
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t9")
        p = begin(target, k, "t9", "KAF-TXN-9")
        add_ok(target, k, p, topic, [0], "KAF-TXN-9")
        wrote = produce_txn(target, k, p.tid, topic, txn_batch([b"x", b"y"], p), "KAF-TXN-9")
        expect_code(wrote, "error_code", "NONE", "KAF-TXN-9", "transactional Produce")
        ended = end_txn(target, k, p, False, "KAF-TXN-9")
        expect_code(ended, "error_code", "NONE", "KAF-TXN-9", "EndTxn (abort)")
        _marker(target, k, topic, 2, p, 0, "KAF-TXN-9")
        got = fetch_isolated(target, k, topic, COMMITTED, "KAF-TXN-9")
        listed = [
            (int(a["producer_id"]), int(a["first_offset"]))
            for a in got.part["aborted_transactions"] or []
        ]
        require(
            (p.pid, 0) in listed,
            "KAF-TXN-9",
            f"aborted_transactions {listed}, expected producer {p.pid} from offset 0",
            got.at("aborted_transactions"),
        )
        raw = fetch_isolated(target, k, topic, UNCOMMITTED, "KAF-TXN-9")
        values = [x.record.value for x in raw.located("KAF-TXN-9") if not x.batch.is_control]
        require(
            values == [b"x", b"y"],
            "KAF-TXN-9",
            f"READ_UNCOMMITTED read {values} after the abort, expected [b'x', b'y']",
            raw.values_at("KAF-TXN-9"),
        )


@case("kafka/transactions/10", "KAF-TXN-10")
def test_transactional_records_without_a_transactional_id_are_refused(target: CaseContext) -> None:
    """A transactional batch in a Produce without a transactional id:
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED, nothing stored.

    KAF-TXN-10: "a Produce (v3+) carrying a transactional batch without a transactional id
    answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED for its partitions and stores nothing."
    """
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t10")
        p = begin(target, k, "t10", "KAF-TXN-10")
        add_ok(target, k, p, topic, [0], "KAF-TXN-10")
        got = produce_txn(target, k, None, topic, txn_batch([b"x"], p), "KAF-TXN-10")
        what = "Produce of a transactional batch with a null transactional id"
        expect_code(got, "error_code", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "KAF-TXN-10", what)
        seen = fetch_isolated(target, k, topic, UNCOMMITTED, "KAF-TXN-10")
        require(
            seen.high_watermark == 0,
            "KAF-TXN-10",
            f"high watermark {seen.high_watermark} after the refused write, expected 0",
            seen.at("high_watermark"),
        )
        end_txn(target, k, p, False, "KAF-TXN-10")


@case("kafka/transactions/11", "KAF-TXN-11")
@at_every_version("Produce", since=3)
def test_a_partition_not_added_refuses_the_transactional_write(
    target: CaseContext, version: int
) -> None:
    """A transactional batch to a partition not added: INVALID_TXN_STATE (v3-10) or
    TRANSACTION_ABORTABLE (v11+), nothing stored.

    KAF-TXN-11: "a transactional batch produced to a partition that was not added to the
    transaction is refused and not stored: INVALID_TXN_STATE in Produce v3-10,
    TRANSACTION_ABORTABLE in v11+."
    """
    need(target, "Produce", version)
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t11", partitions=2)
        p = begin(target, k, "t11", "KAF-TXN-11")
        add_ok(target, k, p, topic, [0], "KAF-TXN-11")
        got = produce_txn(
            target,
            k,
            p.tid,
            topic,
            txn_batch([b"x"], p),
            "KAF-TXN-11",
            partition=1,
            version=version,
        )
        want = "TRANSACTION_ABORTABLE" if version >= 11 else "INVALID_TXN_STATE"
        what = f"Produce v{version} of a transactional batch to partition 1, not added"
        expect_code(got, "error_code", want, "KAF-TXN-11", what)
        seen = fetch_isolated(target, k, topic, UNCOMMITTED, "KAF-TXN-11", partition=1)
        require(
            seen.high_watermark == 0,
            "KAF-TXN-11",
            f"high watermark {seen.high_watermark} of partition 1 after the refused write, "
            "expected 0",
            seen.at("high_watermark"),
        )
        end_txn(target, k, p, False, "KAF-TXN-11")


@case("kafka/transactions/12", "KAF-TXN-12")
def test_a_fenced_producer_cannot_write(target: CaseContext) -> None:
    """A transactional batch with the epoch a newer producer fenced: INVALID_PRODUCER_EPOCH.

    KAF-TXN-12: "once a newer producer has fenced the transactional id, a transactional
    batch with the old epoch is refused with INVALID_PRODUCER_EPOCH and not stored."
    """
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t12")
        old = begin(target, k, "t12", "KAF-TXN-12")
        again = init_producer_id(target, k, old.tid, "KAF-TXN-12")
        expect_code(again, "error_code", "NONE", "KAF-TXN-12", "InitProducerId again")
        new = Producer(old.tid, int(again["producer_id"]), int(again["producer_epoch"]))
        add_ok(target, k, new, topic, [0], "KAF-TXN-12")
        got = produce_txn(target, k, old.tid, topic, txn_batch([b"zombie"], old), "KAF-TXN-12")
        what = f"transactional Produce at the fenced epoch {old.epoch}"
        expect_code(got, "error_code", "INVALID_PRODUCER_EPOCH", "KAF-TXN-12", what)
        seen = fetch_isolated(target, k, topic, UNCOMMITTED, "KAF-TXN-12")
        require(
            seen.high_watermark == 0,
            "KAF-TXN-12",
            f"high watermark {seen.high_watermark} after the fenced write, expected 0",
            seen.at("high_watermark"),
        )
        end_txn(target, k, new, False, "KAF-TXN-12")


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


def _txn_offsets(
    target: CaseContext, k: KafkaClient, p: Producer, group: str, topic: str, offset: int
) -> None:
    v = usable(target, "AddOffsetsToTxn")
    body = {
        "transactional_id": p.tid,
        "producer_id": p.pid,
        "producer_epoch": p.epoch,
        "group_id": group,
    }
    deadline = time.monotonic() + WAIT_S
    while True:
        added = k.call("AddOffsetsToTxn", v, body, "KAF-TXN-15", f"AddOffsetsToTxn v{v} {group}")
        busy = added["error_code"] == CODES["CONCURRENT_TRANSACTIONS"]
        if not busy or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    expect_code(added, "error_code", "NONE", "KAF-TXN-15", f"AddOffsetsToTxn v{v} {group}")
    v = usable(target, "TxnOffsetCommit")
    body = {
        "transactional_id": p.tid,
        "group_id": group,
        "producer_id": p.pid,
        "producer_epoch": p.epoch,
        "generation_id": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {"partition_index": 0, "committed_offset": offset, "committed_leader_epoch": -1,
                     "committed_metadata": ""}
                ],
            }
        ],
    }  # fmt: skip
    what = f"TxnOffsetCommit v{v} {group} offset {offset}"
    reply = k.call("TxnOffsetCommit", v, body, "KAF-TXN-15", what)
    t = first(reply["topics"], "a topic", "KAF-TXN-15", what)
    expect_code(
        first(t["partitions"], "a partition", "KAF-TXN-15", what),
        "error_code",
        "NONE",
        "KAF-TXN-15",
        what,
    )


@case("kafka/transactions/15", "KAF-TXN-15")
def test_transactional_offsets_are_committed_with_the_transaction(target: CaseContext) -> None:
    """TxnOffsetCommit: not visible while open, the group's offset after the commit,
    dropped by an abort.

    KAF-TXN-15: "offsets stored by TxnOffsetCommit (after AddOffsetsToTxn for the group,
    both answering error 0) are not what OffsetFetch returns while the transaction is open,
    become the group's committed offsets once EndTxn commits, and are dropped when it
    aborts."
    """
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t15")
        group = target.name("t15-group")
        p = begin(target, k, "t15", "KAF-TXN-15")
        _txn_offsets(target, k, p, group, topic, 5)
        before = offset_fetch(target, k, group, topic, "KAF-TXN-15")
        require(
            before["committed_offset"] == -1,
            "KAF-TXN-15",
            f"OffsetFetch gave {before['committed_offset']} while the transaction is open, "
            "expected -1",
            before.at("committed_offset"),
        )
        ended = end_txn(target, k, p, True, "KAF-TXN-15")
        expect_code(ended, "error_code", "NONE", "KAF-TXN-15", "EndTxn (commit)")
        deadline = time.monotonic() + WAIT_S
        while True:
            after = offset_fetch(target, k, group, topic, "KAF-TXN-15")
            if after["committed_offset"] == 5 or time.monotonic() >= deadline:
                break
            time.sleep(0.2)
        require(
            after["committed_offset"] == 5,
            "KAF-TXN-15",
            f"OffsetFetch gave {after['committed_offset']} after the commit, expected 5",
            after.at("committed_offset"),
        )
        _txn_offsets(target, k, p, group, topic, 9)
        aborted = end_txn(target, k, p, False, "KAF-TXN-15")
        expect_code(aborted, "error_code", "NONE", "KAF-TXN-15", "EndTxn (abort)")
        last = offset_fetch(target, k, group, topic, "KAF-TXN-15")
        require(
            last["committed_offset"] == 5,
            "KAF-TXN-15",
            f"OffsetFetch gave {last['committed_offset']} after the abort, expected 5",
            last.at("committed_offset"),
        )


@case("kafka/transactions/16", "KAF-TXN-16")
def test_a_timed_out_transaction_is_aborted_and_its_producer_fenced(target: CaseContext) -> None:
    """A transaction past its timeout: the broker aborts it (the last stable offset passes
    it) and the producer's EndTxn is fenced.

    KAF-TXN-16: "a transaction left open longer than its transaction timeout is aborted by
    the broker, which fences the producer: the partition's last stable offset passes the
    transaction's records (an abort marker follows them), and the producer's EndTxn then
    answers INVALID_PRODUCER_EPOCH (EndTxn v0-1)."
    """
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t16")
        p = begin(target, k, "t16", "KAF-TXN-16", timeout_ms=1000)
        add_ok(target, k, p, topic, [0], "KAF-TXN-16")
        wrote = produce_txn(target, k, p.tid, topic, txn_batch([b"late"], p), "KAF-TXN-16")
        expect_code(wrote, "error_code", "NONE", "KAF-TXN-16", "transactional Produce")
        got = stable_at_least(target, k, topic, 2, "KAF-TXN-16", wait=TIMEOUT_WAIT_S)
        lso = int(got.part["last_stable_offset"])
        require(
            lso >= 2,
            "KAF-TXN-16",
            f"last stable offset {lso} {TIMEOUT_WAIT_S:.0f} s into a transaction with a 1 s "
            "timeout, expected past its record and an abort marker (2)",
            got.at("last_stable_offset"),
        )
        v = usable(target, "EndTxn", highest=1)
        ended = end_txn(target, k, p, True, "KAF-TXN-16", version=v)
        what = f"EndTxn v{v} (commit) after the timeout"
        expect_code(ended, "error_code", "INVALID_PRODUCER_EPOCH", "KAF-TXN-16", what)


@case("kafka/transactions/17", "KAF-TXN-17")
@at_every_version("ListOffsets", since=2)
def test_list_offsets_read_committed_answers_the_last_stable_offset(
    target: CaseContext, version: int
) -> None:
    """ListOffsets latest: the last stable offset with READ_COMMITTED, the high watermark
    with READ_UNCOMMITTED.

    KAF-TXN-17: "ListOffsets (v2+) for the latest offset (timestamp -1) answers the last
    stable offset with isolation_level 1 (READ_COMMITTED) and the high watermark with
    isolation_level 0, so they differ while a transaction is open."
    """
    need(target, "ListOffsets", version)
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t17")
        p = begin(target, k, "t17", "KAF-TXN-17")
        add_ok(target, k, p, topic, [0], "KAF-TXN-17")
        wrote = produce_txn(target, k, p.tid, topic, txn_batch([b"a", b"b"], p), "KAF-TXN-17")
        expect_code(wrote, "error_code", "NONE", "KAF-TXN-17", "transactional Produce")
        for isolation, want in ((COMMITTED, 0), (UNCOMMITTED, 2)):
            body = {
                "replica_id": -1,
                "isolation_level": isolation,
                "topics": [
                    {"name": topic, "partitions": [
                        {"partition_index": 0, "timestamp": -1, "current_leader_epoch": -1,
                         "max_num_offsets": 1}
                    ]}
                ],
            }  # fmt: skip
            what = f"ListOffsets v{version} latest, isolation_level {isolation}"
            reply = k.call("ListOffsets", version, body, "KAF-TXN-17", what)
            t = first(reply["topics"], "a topic", "KAF-TXN-17", what)
            part = first(t["partitions"], "a partition", "KAF-TXN-17", what)
            expect_code(part, "error_code", "NONE", "KAF-TXN-17", what)
            require(
                part["offset"] == want,
                "KAF-TXN-17",
                f"{what}: offset {part['offset']}, expected {want}",
                part.at("offset"),
            )
        end_txn(target, k, p, False, "KAF-TXN-17")
