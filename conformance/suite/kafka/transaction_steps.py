"""Steps of the transaction cases (SPEC-transactions.md): a transactional producer's
requests, transactional batches, READ_COMMITTED reads, and bounded waits for what Kafka
does after it answers (markers, the last stable offset, committed offsets).

Waits: Kafka writes markers after answering EndTxn, aborts a timed-out transaction on a
periodic check, and may answer COORDINATOR_NOT_AVAILABLE (or NOT_COORDINATOR, LOAD_IN_PROGRESS)
while its transaction log is first created; every such wait is bounded (:data:`WAIT_S`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.evidence import Node
from conformance.protocols.kafka.errors import CODES
from conformance.suite.case import require
from conformance.suite.kafka.group_steps import offset_fetch_at
from conformance.suite.kafka.steps import (
    Fetched,
    batch,
    fetched_partition,
    produce_body,
    topic_id,
)
from conformance.suite.kafka.verify import (
    KafkaClient,
    expect_code,
    find_partition,
    missing,
    usable,
)
from conformance.suite.target import CaseContext

WAIT_S = 15.0
"""The longest a case waits for what follows an answer (markers, offsets, a coordinator)."""
TIMEOUT_WAIT_S = 30.0
"""The longest a case waits for a timed-out transaction to be aborted (Kafka checks every
10 s by default)."""
COORDINATOR_SETTLING = (
    "COORDINATOR_NOT_AVAILABLE",
    "COORDINATOR_LOAD_IN_PROGRESS",
    "NOT_COORDINATOR",
)
COMMITTED, UNCOMMITTED = 1, 0
TXN_BIT, CONTROL_BIT = 0x10, 0x20
"""A batch's transactional and control attribute bits."""


@dataclass
class Producer:
    """A transactional producer: its transactional id, producer id and epoch."""

    tid: str
    pid: int
    epoch: int


def _until(call: Callable[[], Node], retry: Sequence[str], key: str = "error_code") -> Node:
    """``call()`` again while its answer's ``key`` is one of ``retry``, within WAIT_S."""
    codes = {CODES[n] for n in retry}
    deadline = time.monotonic() + WAIT_S
    while True:
        reply = call()
        if reply[key] not in codes or time.monotonic() >= deadline:
            return reply
        time.sleep(0.1)


def init_body(tid: str | None, timeout_ms: int = 60_000, **extra: Any) -> dict[str, Any]:
    return {
        "transactional_id": tid,
        "transaction_timeout_ms": timeout_ms,
        "producer_id": -1,
        "producer_epoch": -1,
        **extra,
    }


def init_producer_id(
    target: CaseContext,
    k: KafkaClient,
    tid: str | None,
    requirement: str,
    *,
    timeout_ms: int = 60_000,
    version: int | None = None,
    retry: Sequence[str] = (),
) -> Node:
    """InitProducerId for ``tid``: its answer (asked again while the coordinator settles,
    and while the answer is one of ``retry``)."""
    v = version if version is not None else usable(target, "InitProducerId")
    body = init_body(tid, timeout_ms)
    what = f"InitProducerId v{v} {tid!r}"
    return _until(
        lambda: k.call("InitProducerId", v, body, requirement, what),
        (*COORDINATOR_SETTLING, *retry),
    )


def begin(
    target: CaseContext, k: KafkaClient, base: str, requirement: str, timeout_ms: int = 60_000
) -> Producer:
    """A new transactional id initialised (error 0 checked, KAF-TXN-1's rule)."""
    tid = target.name(f"{base}-tx")
    reply = init_producer_id(target, k, tid, requirement, timeout_ms=timeout_ms)
    expect_code(reply, "error_code", "NONE", requirement, f"InitProducerId {tid!r}")
    return Producer(tid, int(reply["producer_id"]), int(reply["producer_epoch"]))


def add_body(p: Producer, parts: dict[str, list[int]], version: int) -> dict[str, Any]:
    topics = [{"name": t, "partitions": ps} for t, ps in parts.items()]
    if version >= 4:
        return {
            "transactions": [
                {
                    "transactional_id": p.tid,
                    "producer_id": p.pid,
                    "producer_epoch": p.epoch,
                    "verify_only": False,
                    "topics": topics,
                }
            ]
        }
    return {
        "v3_and_below_transactional_id": p.tid,
        "v3_and_below_producer_id": p.pid,
        "v3_and_below_producer_epoch": p.epoch,
        "v3_and_below_topics": topics,
    }


def add_partitions(
    target: CaseContext,
    k: KafkaClient,
    p: Producer,
    parts: dict[str, list[int]],
    requirement: str,
    *,
    version: int | None = None,
) -> dict[tuple[str, int], Node]:
    """AddPartitionsToTxn (v0-3) of ``parts`` (topic -> partitions): each partition's
    answer (asked again while CONCURRENT_TRANSACTIONS: an earlier end still writing)."""
    v = version if version is not None else usable(target, "AddPartitionsToTxn", highest=3)
    what = f"AddPartitionsToTxn v{v} {p.tid!r}"
    busy = CODES["CONCURRENT_TRANSACTIONS"]
    deadline = time.monotonic() + WAIT_S
    while True:
        reply = k.call("AddPartitionsToTxn", v, add_body(p, parts, v), requirement, what)
        out: dict[tuple[str, int], Node] = {}
        for t in reply["results_by_topic_v3_and_below"]:
            for r in t["results_by_partition"]:
                out[(str(t["name"]), int(r["partition_index"]))] = r
        waiting = any(r["partition_error_code"] == busy for r in out.values())
        if not waiting or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    for topic, ps in parts.items():
        for i in ps:
            if (topic, i) not in out:
                missing(reply["results_by_topic_v3_and_below"], f"{topic}/{i}", requirement, what)
    return out


def add_ok(
    target: CaseContext, k: KafkaClient, p: Producer, topic: str, parts: list[int], requirement: str
) -> None:
    """AddPartitionsToTxn answering error 0 for each partition (KAF-TXN-3's rule)."""
    for (t, i), r in add_partitions(target, k, p, {topic: parts}, requirement).items():
        expect_code(r, "partition_error_code", "NONE", requirement, f"AddPartitionsToTxn {t}/{i}")


def end_txn(
    target: CaseContext,
    k: KafkaClient,
    p: Producer,
    committed: bool,
    requirement: str,
    *,
    version: int | None = None,
    epoch: int | None = None,
) -> Node:
    """EndTxn (v0-4 unless ``version``: v5 is transactions V2): its answer."""
    v = version if version is not None else usable(target, "EndTxn", highest=4)
    body = {
        "transactional_id": p.tid,
        "producer_id": p.pid,
        "producer_epoch": p.epoch if epoch is None else epoch,
        "committed": committed,
    }
    what = f"EndTxn v{v} {p.tid!r} ({'commit' if committed else 'abort'})"
    return k.call("EndTxn", v, body, requirement, what)


def txn_batch(
    values: Sequence[bytes], p: Producer, sequence: int = 0, epoch: int | None = None
) -> bytes:
    return batch(
        list(values),
        producer_id=p.pid,
        producer_epoch=p.epoch if epoch is None else epoch,
        base_sequence=sequence,
        transactional=True,
    )


def produce_txn(
    target: CaseContext,
    k: KafkaClient,
    tid: str | None,
    topic: str,
    data: bytes,
    requirement: str,
    *,
    partition: int = 0,
    version: int | None = None,
) -> Node:
    """A Produce (acks -1) of ``data`` with transactional id ``tid``: the partition's answer."""
    v = version if version is not None else usable(target, "Produce", lowest=3)
    body = {**produce_body(topic, {partition: data}), "transactional_id": tid}
    what = f"Produce v{v} {topic}/{partition} ({tid!r})"
    reply = k.call("Produce", v, body, requirement, what)
    return find_partition(
        reply["responses"],
        topic,
        partition,
        requirement,
        what,
        entries="partition_responses",
        key="index",
    )


def fetch_isolated(
    target: CaseContext,
    k: KafkaClient,
    topic: str,
    isolation: int,
    requirement: str,
    *,
    partition: int = 0,
    offset: int = 0,
) -> Fetched:
    """A Fetch (v4+, by topic id from v13, as a consumer asks) at ``isolation`` (1
    READ_COMMITTED, 0 READ_UNCOMMITTED)."""
    v = usable(target, "Fetch", lowest=4)
    ref = topic_id(target, k, topic) if v >= 13 else topic
    t: dict[str, Any] = {"topic_id": ref} if v >= 13 else {"topic": ref}
    t["partitions"] = [
        {"partition": partition, "fetch_offset": offset, "partition_max_bytes": 1 << 20}
    ]
    body = {
        "replica_id": -1,
        "max_wait_ms": 100,  # as a consumer asks: what is there comes at once
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": isolation,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [t],
    }
    kind = "READ_COMMITTED" if isolation == COMMITTED else "READ_UNCOMMITTED"
    what = f"Fetch v{v} {kind} {topic}/{partition} at {offset}"
    reply = k.call("Fetch", v, body, requirement, what)
    return Fetched(fetched_partition(reply, topic, partition, requirement, what, ref))


def stable_at_least(
    target: CaseContext,
    k: KafkaClient,
    topic: str,
    offset: int,
    requirement: str,
    wait: float = WAIT_S,
    partition: int = 0,
) -> Fetched:
    """READ_UNCOMMITTED Fetch again until the last stable offset reaches ``offset`` (the
    last answer when ``wait`` runs out: the case judges it)."""
    deadline = time.monotonic() + wait
    while True:
        got = fetch_isolated(target, k, topic, UNCOMMITTED, requirement, partition=partition)
        if int(got.part["last_stable_offset"]) >= offset or time.monotonic() >= deadline:
            return got
        time.sleep(0.2)


def offset_fetch(
    target: CaseContext,
    k: KafkaClient,
    group: str,
    topic: str,
    requirement: str,
    stable: bool = False,
) -> Node:
    """OffsetFetch of partition 0 for ``group`` (``stable``: require_stable, v7+): its entry."""
    v = usable(target, "OffsetFetch", lowest=7 if stable else 1)
    return offset_fetch_at(k, v, group, topic, requirement, stable)


def expect_marker(
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
