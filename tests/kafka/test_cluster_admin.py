"""The cluster administration handlers in process (no sockets): OffsetForLeaderEpoch,
DeleteRecords and the log start offset, CreatePartitions, DescribeCluster, and the spec
quirks of the family.  Each request goes through the codec both ways, so what a handler
answers is what the wire would carry.  Configs are in test_cluster_admin_configs.py."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from conformance.engine import Engine, NewRecord
from conformance.protocols.kafka import codec, log_start, quirks_cluster_admin
from conformance.protocols.kafka.context import Broker, KafkaConfig
from conformance.protocols.kafka.errors import CODES
from conformance.protocols.kafka.handlers import HANDLERS


def new_records(values: list[bytes]) -> list[NewRecord]:
    return [NewRecord(None, v) for v in values]


KEYS = {
    "DeleteRecords": 21,
    "OffsetForLeaderEpoch": 23,
    "CreatePartitions": 37,
    "DescribeCluster": 60,
}


def call(broker: Broker, api: str, version: int, body: dict[str, Any]) -> dict[str, Any]:
    """``api`` at ``version`` through the codec to its handler and back."""
    key = KEYS[api]
    request = codec.decode_request(codec.encode_request(key, version, body, correlation_id=7))
    answer = HANDLERS[key](broker, request, "test:1")
    assert isinstance(answer, dict)
    _, decoded = codec.decode_response(codec.encode_response(key, version, 7, answer), key, version)
    return decoded


@pytest.fixture
def broker() -> Broker:
    return Broker(Engine(), KafkaConfig(revision="apache"), time.monotonic)


def topic(broker: Broker, name: str, records: int = 0, partitions: int = 1) -> str:
    broker.engine.create_topic(name, partitions)
    for i in range(records):
        broker.engine.append(name, 0, new_records([b"r%d" % i]))
    return name


def epoch(
    broker: Broker, name: str, partition: int, asked: int, current: int = -1, v: int = 4
) -> dict[str, Any]:
    body = {
        "topics": [
            {
                "topic": name,
                "partitions": [
                    {"partition": partition, "current_leader_epoch": current, "leader_epoch": asked}
                ],
            }
        ]
    }
    part: dict[str, Any] = call(broker, "OffsetForLeaderEpoch", v, body)["topics"][0]["partitions"][
        0
    ]
    return part


def delete(
    broker: Broker, name: str, offset: int, partition: int = 0, v: int = 2
) -> tuple[int, int]:
    body = {
        "topics": [
            {"name": name, "partitions": [{"partition_index": partition, "offset": offset}]}
        ],
        "timeout_ms": 1,
    }
    p = call(broker, "DeleteRecords", v, body)["topics"][0]["partitions"][0]
    return p["error_code"], p["low_watermark"]


# ------------------------------------------------------------ OffsetForLeaderEpoch


def test_the_current_epoch_ends_at_the_log_end(broker: Broker) -> None:
    topic(broker, "t", records=3)
    assert epoch(broker, "t", 0, 0) == {
        "error_code": 0,
        "partition": 0,
        "leader_epoch": 0,
        "end_offset": 3,
    }


@pytest.mark.parametrize(("asked", "want"), [(1, (-1, -1)), (-1, (-1, -1)), (-3, (-3, 0))])
def test_other_epochs_as_the_epoch_cache_answers(
    broker: Broker, asked: int, want: tuple[int, int]
) -> None:
    topic(broker, "t", records=2)
    got = epoch(broker, "t", 0, asked)
    assert (got["error_code"], got["leader_epoch"], got["end_offset"]) == (0, *want)


def test_an_epoch_below_every_epoch_answers_the_log_start(broker: Broker) -> None:
    topic(broker, "t", records=4)
    assert delete(broker, "t", 2) == (0, 2)
    assert epoch(broker, "t", 0, -7)["end_offset"] == 2


@pytest.mark.parametrize(
    ("current", "error"),
    [(-2, "FENCED_LEADER_EPOCH"), (1, "UNKNOWN_LEADER_EPOCH"), (0, "NONE"), (-1, "NONE")],
)
def test_the_current_epoch_is_fenced(broker: Broker, current: int, error: str) -> None:
    topic(broker, "t")
    assert epoch(broker, "t", 0, 0, current=current)["error_code"] == CODES[error]


def test_v0_has_no_current_epoch_and_no_epoch_in_the_answer(broker: Broker) -> None:
    topic(broker, "t", records=1)
    assert epoch(broker, "t", 0, 0, v=0) == {"error_code": 0, "partition": 0, "end_offset": 1}


@pytest.mark.parametrize(("name", "partition"), [("absent", 0), ("t", 1), ("t", -1)])
def test_an_unknown_partition_has_no_epoch(broker: Broker, name: str, partition: int) -> None:
    topic(broker, "t")
    got = epoch(broker, name, partition, 0)
    assert got["error_code"] == CODES["UNKNOWN_TOPIC_OR_PARTITION"] and got["end_offset"] == -1


# ------------------------------------------------------------------ DeleteRecords


def test_delete_records_moves_the_log_start_forward_only(broker: Broker) -> None:
    topic(broker, "t", records=5)
    assert delete(broker, "t", 2, v=0) == (0, 2)
    assert delete(broker, "t", 1) == (0, 2)  # never back
    assert delete(broker, "t", -1) == (0, 5)  # the high watermark
    assert log_start.log_start_offset(broker.engine, "t", 0) == 5


@pytest.mark.parametrize("offset", [6, -2, -(1 << 63)])
def test_an_offset_outside_the_log_is_out_of_range(broker: Broker, offset: int) -> None:
    topic(broker, "t", records=5)
    assert delete(broker, "t", offset) == (CODES["OFFSET_OUT_OF_RANGE"], -1)
    assert log_start.log_start_offset(broker.engine, "t", 0) == 0


def test_an_unknown_partition_is_refused(broker: Broker) -> None:
    topic(broker, "t")
    assert delete(broker, "absent", 0) == (CODES["UNKNOWN_TOPIC_OR_PARTITION"], -1)
    assert delete(broker, "t", 0, partition=3) == (CODES["UNKNOWN_TOPIC_OR_PARTITION"], -1)


def test_the_log_start_survives_a_restart(tmp_path: Path) -> None:
    first = Broker(Engine(str(tmp_path)), KafkaConfig(revision="apache"), time.monotonic)
    topic(first, "t", records=4)
    assert delete(first, "t", 3) == (0, 3)
    first.engine.close()
    again = Engine(str(tmp_path))
    try:
        assert log_start.log_start_offset(again, "t", 0) == 3
    finally:
        again.close()


def test_a_topic_made_again_starts_from_zero(broker: Broker) -> None:
    topic(broker, "t", records=4)
    assert delete(broker, "t", 3) == (0, 3)
    broker.engine.delete_topic("t")
    topic(broker, "t", records=1)
    assert log_start.log_start_offset(broker.engine, "t", 0) == 0  # past the new log's end
    log_start.forget_topic(broker.engine, "t")
    broker.engine.append("t", 0, new_records([b"x", b"y", b"z", b"w"]))
    assert log_start.log_start_offset(broker.engine, "t", 0) == 0


# --------------------------------------------------------------- CreatePartitions


def grow(
    broker: Broker, *topics: tuple[str, int, Any], validate_only: bool = False, v: int = 3
) -> dict[str, tuple[int, Any]]:
    body = {
        "topics": [{"name": n, "count": c, "assignments": a} for n, c, a in topics],
        "timeout_ms": 1,
        "validate_only": validate_only,
    }
    return {
        r["name"]: (r["error_code"], r["error_message"])
        for r in call(broker, "CreatePartitions", v, body)["results"]
    }


def test_create_partitions_grows_a_topic(broker: Broker) -> None:
    topic(broker, "t")
    assert grow(broker, ("t", 3, None)) == {"t": (0, None)}
    assert broker.engine.topic("t").partitions == 3


@pytest.mark.parametrize("count", [1, 0, -5])
def test_a_count_that_is_no_increase_is_invalid(broker: Broker, count: int) -> None:
    topic(broker, "t")
    assert grow(broker, ("t", count, None))["t"][0] == CODES["INVALID_PARTITIONS"]
    assert broker.engine.topic("t").partitions == 1


def test_validate_only_changes_nothing(broker: Broker) -> None:
    topic(broker, "t")
    assert grow(broker, ("t", 4, None), validate_only=True) == {"t": (0, None)}
    assert broker.engine.topic("t").partitions == 1


@pytest.mark.parametrize(
    "replicas",
    [[[1]], [[1], [2]], [[1], []], [[1], [1, 1]]],
    ids=["too-few", "unknown-broker", "empty", "two-replicas"],
)
def test_bad_assignments(broker: Broker, replicas: list[list[int]]) -> None:
    topic(broker, "t")
    assignments = [{"broker_ids": ids} for ids in replicas]
    assert grow(broker, ("t", 3, assignments))["t"][0] == CODES["INVALID_REPLICA_ASSIGNMENT"]
    assert broker.engine.topic("t").partitions == 1


def test_good_assignments(broker: Broker) -> None:
    topic(broker, "t")
    assert grow(broker, ("t", 3, [{"broker_ids": [1]}, {"broker_ids": [1]}]), v=0) == {
        "t": (0, None)
    }


def test_unknown_repeated_and_too_many(broker: Broker) -> None:
    topic(broker, "t")
    got = grow(broker, ("absent", 2, None), ("t", 2, None), ("t", 3, None))
    assert got["absent"][0] == CODES["UNKNOWN_TOPIC_OR_PARTITION"]
    assert got["t"][0] == CODES["INVALID_REQUEST"]
    assert (
        grow(broker, ("t", broker.engine.max_partitions + 1, None))["t"][0]
        == CODES["INVALID_PARTITIONS"]
    )


# ---------------------------------------------------------------- DescribeCluster


def test_describe_cluster(broker: Broker) -> None:
    got = call(broker, "DescribeCluster", 1, {"include_cluster_authorized_operations": True})
    assert got["error_code"] == 0 and got["cluster_id"] == broker.cluster_id
    assert got["controller_id"] == 1 and got["endpoint_type"] == 1
    assert got["brokers"] == [
        {"broker_id": 1, "host": broker.host, "port": broker.port, "rack": None}
    ]
    assert got["cluster_authorized_operations"] == 0b1_1111_1010_0000
    plain = call(broker, "DescribeCluster", 0, {"include_cluster_authorized_operations": False})
    assert plain["cluster_authorized_operations"] == -(1 << 31)


@pytest.mark.parametrize(
    ("kind", "error"),
    [
        (2, "MISMATCHED_ENDPOINT_TYPE"),
        (0, "UNSUPPORTED_ENDPOINT_TYPE"),
        (9, "UNSUPPORTED_ENDPOINT_TYPE"),
    ],
)
def test_other_endpoint_types(broker: Broker, kind: int, error: str) -> None:
    got = call(
        broker,
        "DescribeCluster",
        1,
        {"include_cluster_authorized_operations": False, "endpoint_type": kind},
    )
    assert got["error_code"] == CODES[error] and got["brokers"] == [] and got["error_message"]


# ------------------------------------------------------------------------- quirks


def quirked(
    quirk: str, broker: Broker, api: str, version: int, body: dict[str, Any]
) -> dict[str, Any]:
    key = KEYS[api]
    request = codec.decode_request(codec.encode_request(key, version, body, correlation_id=7))
    seen = quirks_cluster_admin.before((quirk,), request)
    assert not isinstance(seen, dict)
    answer = HANDLERS[key](broker, seen, "test:1")
    assert isinstance(answer, dict)
    return quirks_cluster_admin.after((quirk,), request, answer)


def test_every_quirk_names_requirements_of_its_family() -> None:
    for q in quirks_cluster_admin.QUIRKS.values():
        assert q.kind == "spec" and q.breaks
        assert all(
            r.split("-")[1] in ("EPOCH", "DELREC", "PARTS", "CONFIG", "CLUSTER") for r in q.breaks
        )


def test_quirks_bend_what_they_say(broker: Broker) -> None:
    topic(broker, "t", records=2)
    body: dict[str, Any] = {
        "topics": [
            {
                "topic": "t",
                "partitions": [{"partition": 0, "current_leader_epoch": 9, "leader_epoch": 0}],
            }
        ]
    }
    got = quirked("leader-epoch-not-fenced", broker, "OffsetForLeaderEpoch", 4, body)
    assert got["topics"][0]["partitions"][0]["error_code"] == 0
    body = {
        "topics": [{"name": "t", "partitions": [{"partition_index": 0, "offset": 9}]}],
        "timeout_ms": 1,
    }
    got = quirked("delete-records-past-high-watermark", broker, "DeleteRecords", 2, body)
    assert got["topics"][0]["partitions"][0] == {
        "partition_index": 0,
        "low_watermark": 9,
        "error_code": 0,
    }
    assert log_start.log_start_offset(broker.engine, "t", 0) == 0
    body = {
        "topics": [{"name": "t", "count": 1, "assignments": None}],
        "timeout_ms": 1,
        "validate_only": False,
    }
    got = quirked("create-partitions-shrink-ok", broker, "CreatePartitions", 3, body)
    assert got["results"][0]["error_code"] == 0
    got = quirked(
        "cluster-id-mismatch",
        broker,
        "DescribeCluster",
        0,
        {"include_cluster_authorized_operations": False},
    )
    assert got["cluster_id"] != broker.cluster_id
