"""The requests a real client of the later API families sends, for the fuzzer's pool:
a transaction from InitProducerId to EndTxn and its READ_COMMITTED reads, a fetch
session opened and continued, a SASL handshake and token, the administration APIs, and
a KIP-848 member joining and being described.

They complete :mod:`.fuzzing`'s pool of client requests (the drawn ones cover every
version of every API, but a drawn request rarely names the campaign's topic or group).
None of them may change what the fuzz campaign's canary relies on: the administration
requests that would (a config set, partitions added, records deleted) are sent with
``validate_only``, or delete nothing (DeleteRecords to offset 0).
"""

from __future__ import annotations

import random
from typing import Any

FUZZ_TOPIC = "fuzz"
FUZZ_GROUP = "fuzz-group"
TXN_ID = "fuzz-txn"
TOPIC_RESOURCE = 2  # DescribeConfigs / IncrementalAlterConfigs resource type of a topic
SET = 0  # IncrementalAlterConfigs operation

Request = tuple[int, int, dict[str, Any]]


def _transactions(rng: random.Random) -> list[Request]:
    pid, epoch = rng.randint(0, 1 << 20), rng.randint(0, 3)
    ids = {"transactional_id": TXN_ID, "producer_id": pid, "producer_epoch": epoch}
    topics = [{"name": FUZZ_TOPIC, "partitions": [0, 1]}]
    offsets = [{"partition_index": 0, "committed_offset": rng.randint(0, 9),
                "committed_leader_epoch": -1, "committed_metadata": ""}]  # fmt: skip
    return [
        (22, 1, {"transactional_id": TXN_ID, "transaction_timeout_ms": 60_000}),
        (22, 4, {**ids, "transaction_timeout_ms": 60_000}),
        (24, 3, {"v3_and_below_transactional_id": TXN_ID, "v3_and_below_producer_id": pid,
                 "v3_and_below_producer_epoch": epoch, "v3_and_below_topics": topics}),
        (24, 4, {"transactions": [{**ids, "verify_only": rng.random() < 0.5,
                                   "topics": topics}]}),
        (25, 3, {**ids, "group_id": FUZZ_GROUP}),
        (28, 3, {**ids, "group_id": FUZZ_GROUP, "generation_id": -1, "member_id": "",
                 "group_instance_id": None,
                 "topics": [{"name": FUZZ_TOPIC, "partitions": offsets}]}),
        (26, 3, {**ids, "committed": rng.random() < 0.5}),
        (2, 5, {"replica_id": -1, "isolation_level": 1, "topics": [
            {"name": FUZZ_TOPIC, "partitions": [
                {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]}),
    ]  # fmt: skip


def _fetch(version: int, session: int, epoch: int, isolation: int) -> Request:
    parts = [{"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
              "log_start_offset": -1, "partition_max_bytes": 1 << 16}]  # fmt: skip
    return (
        1,
        version,
        {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
         "isolation_level": isolation, "session_id": session, "session_epoch": epoch,
         "topics": [{"topic": FUZZ_TOPIC, "partitions": parts}],
         "forgotten_topics_data": [], "rack_id": ""},
    )  # fmt: skip


def _fetch_sessions(rng: random.Random) -> list[Request]:
    return [
        _fetch(11, 0, 0, 1),  # a READ_COMMITTED full fetch that opens a session
        _fetch(12, 0, 0, 0),
        _fetch(12, rng.randint(1, 1 << 16), rng.randint(1, 5), 0),  # an incremental one
        _fetch(12, rng.randint(1, 1 << 16), -1, 0),  # a session closed
    ]


def _sasl(rng: random.Random) -> list[Request]:
    user = b"fuzz%d" % rng.randint(0, 9)
    return [
        (17, 1, {"mechanism": rng.choice(("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"))}),
        (36, 0, {"auth_bytes": b"\x00" + user + b"\x00secret"}),
        (36, 2, {"auth_bytes": b"n,,n=" + user + b",r=fuzznonce"}),
    ]


def _admin(rng: random.Random) -> list[Request]:
    epochs = [{"partition": p, "current_leader_epoch": -1, "leader_epoch": rng.randint(-1, 2)}
              for p in range(2)]  # fmt: skip
    topic = {"resource_type": TOPIC_RESOURCE, "resource_name": FUZZ_TOPIC}
    return [
        (23, 4, {"replica_id": -1, "topics": [{"topic": FUZZ_TOPIC, "partitions": epochs}]}),
        (21, 2, {"topics": [{"name": FUZZ_TOPIC, "partitions": [
            {"partition_index": 0, "offset": 0}]}], "timeout_ms": 1000}),
        (37, 3, {"topics": [{"name": FUZZ_TOPIC, "count": rng.randint(1, 6),
                             "assignments": None}],
                 "timeout_ms": 1000, "validate_only": True}),
        (32, 4, {"resources": [{**topic, "configuration_keys": None}],
                 "include_synonyms": True, "include_documentation": True}),
        (44, 1, {"resources": [{**topic, "configs": [
            {"name": "max.message.bytes", "config_operation": SET,
             "value": str(rng.randint(0, 1 << 20))}]}], "validate_only": True}),
        (60, 1, {"include_cluster_authorized_operations": True, "endpoint_type": 1}),
    ]  # fmt: skip


def _consumer_group(rng: random.Random, seed: int) -> list[Request]:
    group = f"{FUZZ_GROUP}-848-{seed}"
    return [
        (68, 0, {"group_id": group, "member_id": "", "member_epoch": 0, "instance_id": None,
                 "rack_id": None, "rebalance_timeout_ms": 5000,
                 "subscribed_topic_names": [FUZZ_TOPIC], "server_assignor": None,
                 "topic_partitions": []}),
        (68, 1, {"group_id": group, "member_id": f"m{rng.randint(0, 99)}",
                 "member_epoch": rng.choice((-1, 1, 5)), "instance_id": None, "rack_id": None,
                 "rebalance_timeout_ms": -1, "subscribed_topic_names": None,
                 "subscribed_topic_regex": None, "server_assignor": None,
                 "topic_partitions": None}),
        (69, 1, {"group_ids": [group, FUZZ_GROUP], "include_authorized_operations": False}),
    ]  # fmt: skip


def family_requests(seed: int) -> list[Request]:
    """A client's requests of every later family, drawn from ``seed``."""
    rng = random.Random(f"kafka-families:{seed}")
    return (
        _transactions(rng)
        + _fetch_sessions(rng)
        + _sasl(rng)
        + _admin(rng)
        + _consumer_group(rng, seed)
    )
