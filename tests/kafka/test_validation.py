"""serve --validate with Kafka clients written here: a broken one is reported with exactly
what it breaks, a well-behaved one with nothing (KAF-CLI requirements, SPEC.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.protocols.kafka import codec
from conformance.protocols.kafka.records import decode_batches, encode_batch, make_batch
from tests.support.kafka_client import KafkaConn
from tests.support.validating import Validated, validating

TOPIC = "checked"


def _address(v: Validated) -> tuple[str, int]:
    return v.broker.host, v.broker.port


def _produce(k: KafkaConn, batch: bytes) -> dict[str, Any]:
    body = {
        "acks": 1,
        "timeout_ms": 1000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}],
    }
    return k.call(0, 9, body)


def _batch(values: list[bytes], pid: int, seq: int, *, bad_crc: bool = False) -> bytes:
    data = bytearray(
        encode_batch(make_batch(values, producer_id=pid, producer_epoch=0, base_sequence=seq))
    )
    if bad_crc:
        data[17] ^= 0xFF  # the crc field (bytes 17..21)
    return bytes(data)


def _session(v: Validated, *, broken: bool) -> None:
    """A producer and a group member; ``broken`` adds a bad CRC, a sequence gap, a stale
    generation, an unadvertised version and a size that cuts its request, each once."""
    k = KafkaConn(_address(v))
    k.call(18, 3, {"client_software_name": "t", "client_software_version": "1"})
    k.call(3, 12, {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": True})
    init = k.call(22, 4, {"transactional_id": None, "transaction_timeout_ms": 1000})
    pid = init["producer_id"]
    _produce(k, _batch([b"a", b"b"], pid, 0))
    if broken:
        _produce(k, _batch([b"c"], pid, 2, bad_crc=True))
        _produce(k, _batch([b"d"], pid, 5))  # 2 was expected: a gap
    else:
        _produce(k, _batch([b"c"], pid, 2))
    join = {
        "group_id": "g",
        "session_timeout_ms": 10_000,
        "rebalance_timeout_ms": 10_000,
        "member_id": "",
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
    }
    joined = k.call(11, 5, join)
    if joined["error_code"] == 79:  # MEMBER_ID_REQUIRED (KIP-394): join again with that id
        joined = k.call(11, 5, {**join, "member_id": joined["member_id"]})
    member, generation = joined["member_id"], joined["generation_id"]
    k.call(14, 3, {"group_id": "g", "generation_id": generation, "member_id": member,
                   "assignments": [{"member_id": member, "assignment": b""}]})  # fmt: skip
    stale = generation - 1 if broken else generation
    k.call(12, 3, {"group_id": "g", "generation_id": stale, "member_id": member})
    k.close()
    if broken:
        k = KafkaConn(_address(v))
        payload = codec.encode_request(3, 12, {"topics": [{"name": TOPIC}]}, correlation_id=1)
        k.raw(codec.frame(payload[:2] + (13).to_bytes(2, "big") + payload[4:]))  # v12's body
        # the broker serves Metadata up to v12 (v13's request body is v12's)
        assert k.frame() is None  # Apache Kafka closes on a version it does not know
        k.close()
        k = KafkaConn(_address(v))
        payload = codec.encode_request(3, 12, {"topics": [{"name": TOPIC}]}, correlation_id=1)
        k.raw(len(payload[:-6]).to_bytes(4, "big") + payload[:-6])  # the size cuts 6 bytes
        assert k.frame() is None
        k.close()


def test_a_broken_client_is_reported_with_exactly_what_it_broke(tmp_path: Path) -> None:
    with validating("kafka", tmp_path, "--revision", "apache") as v:
        _session(v, broken=True)
    assert v.code == 1, v.stderr
    assert v.broken() == {"KAF-CLI-1", "KAF-CLI-4", "KAF-CLI-7", "KAF-CLI-10", "KAF-CLI-11"}
    gap = v.case("kafka/client/KAF-CLI-10")
    assert "base sequence 5, expected 2" in gap["message"]
    assert gap["evidence"] and gap["evidence"][0]["fields"], gap["evidence"]
    stale = v.case("kafka/client/KAF-CLI-11")
    assert "generation 0" in stale["message"] and "gave generation 1" in stale["message"]
    assert "FAILED" in v.stdout and "broken MUST: KAF-CLI-1, KAF-CLI-4" in v.stdout
    assert (tmp_path / "report.html").exists() and (tmp_path / "junit.xml").exists()


def test_a_well_behaved_client_breaks_nothing(tmp_path: Path) -> None:
    with validating("kafka", tmp_path, "--revision", "apache") as v:
        _session(v, broken=False)
    assert v.code == 0, v.stdout + v.stderr
    assert v.broken() == set()
    verdicts = {c["case_id"]: c["verdict"] for c in v.results["cases"]}
    for req in ("KAF-CLI-1", "KAF-CLI-7", "KAF-CLI-10", "KAF-CLI-11"):
        assert verdicts[f"kafka/client/{req}"] == "PASS", req
    assert verdicts["kafka/client/KAF-CLI-13"] == "UNSUPPORTED"  # no fault: not exercised


def test_an_error_fault_answers_instead_of_the_broker_and_is_followed(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text("faults:\n  - {on: Produce, error: NOT_LEADER_OR_FOLLOWER}\n")
    with validating(
        "kafka", tmp_path / "r", "--revision", "apache", "--fault-plan", str(plan)
    ) as v:
        k = KafkaConn(_address(v))
        k.call(3, 12, {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": True})
        init = k.call(22, 4, {"transactional_id": None, "transaction_timeout_ms": 1000})
        refused = _produce(k, _batch([b"x"], init["producer_id"], 0))
        part = refused["responses"][0]["partition_responses"][0]
        assert part["error_code"] == 6 and part["base_offset"] == -1
        k.call(3, 12, {"topics": [{"name": TOPIC}]})
        again = _produce(k, _batch([b"x"], init["producer_id"], 0))
        assert again["responses"][0]["partition_responses"][0]["error_code"] == 0
        fetched = k.call(1, 12, {"max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
                                 "topics": [{"topic": TOPIC, "partitions": [
                                     {"partition": 0, "fetch_offset": 0,
                                      "partition_max_bytes": 1 << 20}]}]})  # fmt: skip
        k.close()
    (fault,) = v.faults()
    assert fault["verdict"] == "PASS", fault["message"]
    assert fault["fault"]["did"][:2] == ["refreshed metadata", "retried"]
    assert any("re-sent the same" in step for step in fault["fault"]["next"])
    stored = decode_batches(fetched["responses"][0]["partitions"][0]["records"])
    values = [r.value for batch in stored for r in batch.records]
    assert values == [b"x"]  # refused once, stored once: nothing lost or doubled


def _metadata(k: KafkaConn, corr: int) -> bytes:
    return codec.frame(codec.encode_request(3, 12, {"topics": None}, correlation_id=corr))


def test_a_client_done_after_split_replies_is_not_failed(tmp_path: Path) -> None:
    with validating(
        "kafka", tmp_path, "--revision", "apache", "--fault", "Metadata:split=5,count=0"
    ) as v:
        k = KafkaConn(_address(v))
        for _ in range(3):
            k.call(3, 12, {"topics": None})
        k.close()  # read every reply whole, then done
    assert v.code == 0, v.stdout
    last = v.faults()[-1]
    assert last["verdict"] == "UNSUPPORTED" and last["message"].startswith("inconclusive")
    assert v.broken() == set()


def test_pipelined_requests_reusing_a_correlation_id_are_reported(tmp_path: Path) -> None:
    with validating("kafka", tmp_path, "--revision", "apache") as v:
        k = KafkaConn(_address(v))
        k.raw(_metadata(k, 5) + _metadata(k, 5) + _metadata(k, 6))  # one write: all in flight
        for _ in range(3):
            assert k.frame() is not None
        k.raw(_metadata(k, 5))  # after its responses: free again
        assert k.frame() is not None
        k.close()
    case = v.case("kafka/client/KAF-CLI-6")
    assert case["verdict"] == "WARN" and "broken once" in case["message"], case["message"]
    assert v.broken() == {"KAF-CLI-6"}


def test_an_acks_0_produce_is_never_answered_even_by_an_error_fault(tmp_path: Path) -> None:
    args = ("--revision", "apache", "--fault", "Produce:error=NOT_LEADER_OR_FOLLOWER")
    with validating("kafka", tmp_path, *args) as v:
        k = KafkaConn(_address(v))
        k.call(3, 12, {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": True})
        body = {"acks": 0, "timeout_ms": 1000, "topic_data": [{"name": TOPIC, "partition_data": [
            {"index": 0, "records": _batch([b"q"], -1, -1)}]}]}  # fmt: skip
        k.send(0, 9, body)
        reply = k.call(3, 12, {"topics": None})  # the next reply is Metadata's own
        assert reply["brokers"]
        k.close()
    assert v.faults() == [] and "never fired: Produce" in v.stdout


def test_ids_a_broker_with_a_data_dir_may_have_given_before_are_not_judged(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    with validating("kafka", tmp_path / "r", "--revision", "apache", "--data-dir", str(data)) as v:
        k = KafkaConn(_address(v))
        _produce(k, _batch([b"a"], 777, 0))  # a producer id from before a restart, maybe
        k.call(12, 3, {"group_id": "g", "generation_id": 4, "member_id": "m-from-before"})
        k.close()
    assert v.broken() == set(), v.stdout


def test_a_slow_heartbeat_reply_is_not_the_members_delay(tmp_path: Path) -> None:
    args = ("--revision", "apache", "--fault", "Heartbeat:slow=1500")
    with validating("kafka", tmp_path, *args) as v:
        k = KafkaConn(_address(v))
        join = {"group_id": "slow", "session_timeout_ms": 1000, "rebalance_timeout_ms": 1000,
                "member_id": "", "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": b""}]}  # fmt: skip
        joined = k.call(11, 5, join)
        if joined["error_code"] == 79:
            joined = k.call(11, 5, {**join, "member_id": joined["member_id"]})
        member, generation = joined["member_id"], joined["generation_id"]
        k.call(14, 3, {"group_id": "slow", "generation_id": generation, "member_id": member,
                       "assignments": []})  # fmt: skip
        for _ in range(2):  # the first answer is held 1.5 s; the next heartbeat follows it
            k.call(12, 3, {"group_id": "slow", "generation_id": generation, "member_id": member})
        k.close()
    assert "KAF-CLI-12" not in v.broken(), v.case("kafka/client/KAF-CLI-12")["message"]
