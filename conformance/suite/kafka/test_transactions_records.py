"""Kafka transactions: transactional records, markers, READ_COMMITTED reads, offsets and the
timeout (SPEC-transactions.md, area "transactions"; the coordinator's requests are in
test_transactions.py).

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
    COMMITTED,
    TIMEOUT_WAIT_S,
    TXN_BIT,
    UNCOMMITTED,
    WAIT_S,
    Producer,
    add_ok,
    begin,
    end_txn,
    expect_marker,
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


def _under_way(
    target: CaseContext,
    k: KafkaClient,
    base: str,
    values: list[bytes],
    req: str,
    timeout_ms: int = 60_000,
    what: str = "transactional Produce",
) -> tuple[str, Producer]:
    """A new topic and transactional id, partition 0 added, ``values`` produced in the
    transaction (error 0 checked at each step; ``what`` names the Produce, ``{topic}`` in it
    the topic)."""
    topic = create_topic(target, k, base)
    p = begin(target, k, base, req, timeout_ms=timeout_ms)
    add_ok(target, k, p, topic, [0], req)
    wrote = produce_txn(target, k, p.tid, topic, txn_batch(values, p), req)
    expect_code(wrote, "error_code", "NONE", req, what.format(topic=topic))
    return topic, p


def _ended(
    target: CaseContext, k: KafkaClient, topic: str, p: Producer, committed: bool, req: str
) -> None:
    """EndTxn answered error 0, then the commit (or abort) marker at offset 2."""
    ended = end_txn(target, k, p, committed, req)
    expect_code(ended, "error_code", "NONE", req, f"EndTxn ({'commit' if committed else 'abort'})")
    expect_marker(target, k, topic, 2, p, 1 if committed else 0, req)


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
        topic, p = _under_way(
            target,
            k,
            "t7",
            [b"a", b"b", b"c"],
            "KAF-TXN-7",
            what="transactional Produce to {topic}",
        )
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
        topic, p = _under_way(target, k, "t8", [b"x", b"y"], "KAF-TXN-8")
        _ended(target, k, topic, p, True, "KAF-TXN-8")
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
        topic, p = _under_way(target, k, "t9", [b"x", b"y"], "KAF-TXN-9")
        _ended(target, k, topic, p, False, "KAF-TXN-9")
        got = fetch_isolated(target, k, topic, COMMITTED, "KAF-TXN-9")
        aborted = got.part["aborted_transactions"]
        listed = [(int(a["producer_id"]), int(a["first_offset"])) for a in aborted or []]
        require(
            (p.pid, 0) in listed,
            "KAF-TXN-9",
            f"aborted_transactions {'null' if aborted is None else listed}, expected producer "
            f"{p.pid} from offset 0",
            got.at("aborted_transactions") if aborted is not None else got.at(),
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
@at_every_version("Produce", since=3, until=11)  # v12 adds the partition (KAF-TXN-23)
def test_a_partition_not_added_refuses_the_transactional_write(
    target: CaseContext, version: int
) -> None:
    """A transactional batch to a partition not added: INVALID_TXN_STATE (v3-10) or
    TRANSACTION_ABORTABLE (v11+), nothing stored.

    KAF-TXN-11: "a transactional batch produced to a partition that was not added to the
    transaction is refused and not stored: INVALID_TXN_STATE in Produce v3-10,
    TRANSACTION_ABORTABLE in v11 (v12 adds the partition instead, KAF-TXN-23)."
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
        txn_offsets(target, k, p, group, topic, 5)
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
        txn_offsets(target, k, p, group, topic, 9)
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
        topic, p = _under_way(target, k, "t16", [b"late"], "KAF-TXN-16", timeout_ms=1000)
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
        topic, p = _under_way(target, k, "t17", [b"a", b"b"], "KAF-TXN-17")
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
