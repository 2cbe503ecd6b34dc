"""Messages cross protocols: one ``serve --all`` broker, every ordered pair of protocols.

A message produced over one protocol is consumed over every other at the offset it was
acknowledged with (docs/cross-protocol.md).  The check is :func:`conformance.cross.
check_pair`; it is shown able to fail (a consumer that reads one offset too far), and the
values holding the text protocols' separators cross as the rules say.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any, TypeVar

import pytest

from conformance import protocols
from conformance.client import Connection, WireLog
from conformance.cross import Peer, check_pair
from conformance.plugin import Messaging, MessagingRefused, open_session

SERVING = re.compile(r"serving (\S+) on (\S+):(\d+)")
NAMES = ("cursus", "kafka", "iggy", "v1line", "minikafka")
PAIRS = [(p, c) for p in NAMES for c in NAMES if p != c]
OPTIONS: dict[str, dict[str, Any]] = {"iggy": {"username": "iggy", "password": "iggy"}}
T = TypeVar("T")


@pytest.fixture(scope="module")
def peers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Peer]]:
    """One ``serve --all --port-base 0`` for the module, stopped by its PID."""
    err = (tmp_path_factory.mktemp("serve-all") / "stderr").open("w")
    cmd = [sys.executable, "-m", "conformance", "serve", "--all", "--port-base", "0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
    assert proc.stdout is not None
    found: dict[str, Peer] = {}

    def hung() -> None:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)

    watchdog = threading.Timer(30, hung)
    watchdog.start()  # a broker that never prints "serving all" ends the blocking reads
    try:
        for line in proc.stdout:
            if line.strip() == "serving all":
                break
            m = SERVING.search(line)
            if m:
                plugin = protocols.get(m.group(1))
                found[plugin.name] = Peer(
                    plugin,
                    m.group(2),
                    int(m.group(3)),
                    plugin.default_revision,
                    OPTIONS.get(plugin.name, {}),
                )
        watchdog.cancel()
        assert set(NAMES) <= set(found), f"serve --all printed {sorted(found)}"
        yield found
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(10)
        proc.stdout.close()
        err.close()


def _others(peers: dict[str, Peer], *pair: str) -> list[Peer]:
    return [peers[n] for n in NAMES if n not in pair]


@pytest.mark.parametrize(("producer", "consumer"), PAIRS, ids=[f"{p}->{c}" for p, c in PAIRS])
def test_a_message_produced_over_one_protocol_is_consumed_over_another(
    peers: dict[str, Peer], producer: str, consumer: str
) -> None:
    result = check_pair(
        peers[producer], peers[consumer], _others(peers, producer, consumer), timeout=5
    )
    assert result.verdict == "PASS", result.reason


# ------------------------------------------------------------ the check can fail


def _read_one_too_far(messaging: Messaging) -> Messaging:
    """The same protocol, whose consumer starts one offset past the one asked."""

    def consume(
        topic: str, offset: int, count: int
    ) -> Generator[bytes, bytes, list[tuple[int, bytes]]]:
        got = yield from messaging.consume(topic, offset + 1, count)
        return got

    return dataclasses.replace(messaging, consume=consume)


@pytest.mark.parametrize(("producer", "consumer"), [("kafka", "iggy"), ("iggy", "v1line")])
def test_a_pair_fails_when_the_consumer_reads_other_offsets(
    peers: dict[str, Peer], producer: str, consumer: str
) -> None:
    real = peers[consumer]
    factory = real.plugin.messaging
    assert factory is not None
    plugin = dataclasses.replace(
        real.plugin, messaging=lambda o, r: _read_one_too_far(factory(o, r))
    )
    wrong = dataclasses.replace(real, plugin=plugin)
    result = check_pair(peers[producer], wrong, _others(peers, producer, consumer))
    assert result.verdict == "FAIL", result.reason
    assert "cross-1" in result.reason and "cross-0" in result.reason


# ------------------------------------------------------------ separators


def _run(peer: Peer, make: Callable[[], Generator[bytes, bytes, T]]) -> T:
    with Connection(
        peer.host,
        peer.port,
        deframer=peer.plugin.framing.deframer("reply"),
        log=WireLog(),
        timeout=5,
    ) as conn:
        conn.open(peer.plugin.open(peer.options, peer.revision))

        def send(data: bytes) -> None:
            conn.send(data)

        result: T = open_session(make(), send, conn.recv_frame)
        return result


def _topic(peers: dict[str, Peer], producer: str, consumer: str) -> str:
    """A fresh one-partition topic, made as check_pair makes it (Iggy's if either is Iggy)."""
    maker = peers["iggy"] if "iggy" in (producer, consumer) else peers["kafka"]
    create = maker.messaging().create
    assert create is not None
    base = f"xp.sep.{producer}.{consumer}.{os.urandom(3).hex()}"
    return _run(maker, lambda: create(base))


def _cross(
    peers: dict[str, Peer], producer: str, consumer: str, values: Sequence[bytes]
) -> list[tuple[int, bytes]]:
    topic = _topic(peers, producer, consumer)
    offsets = _run(peers[producer], lambda: peers[producer].messaging().produce(topic, values))
    assert len(offsets) == len(values)
    got = _run(peers[consumer], lambda: peers[consumer].messaging().consume(topic, offsets[0], 99))
    assert [o for o, _ in got] == offsets
    return got


SEPARATORS = (b"a:b:c", b"x,y", b"p|q", b"s t", b"l\nm", b"cr\r\n", b"\x00\xff", b"")
"""Values holding what some protocol reserves: ':' (V1's key:value and offset:value), ','
(V1's item separator), '|' (V1's envelope), a space (V1's and Cursus's arguments), line
breaks (V1's line), bytes that are not UTF-8, and nothing at all."""
BINARY = ("cursus", "kafka", "iggy", "minikafka")
BINARY_PAIRS = [(p, c) for p in BINARY for c in BINARY if p != c]


@pytest.mark.parametrize(
    ("producer", "consumer"), BINARY_PAIRS, ids=[f"{p}->{c}" for p, c in BINARY_PAIRS]
)
def test_the_binary_protocols_carry_separators_byte_for_byte(
    peers: dict[str, Peer], producer: str, consumer: str
) -> None:
    got = _cross(peers, producer, consumer, SEPARATORS)
    assert [v for _, v in got] == list(SEPARATORS)


@pytest.mark.parametrize("producer", BINARY)
def test_v1_consume_shows_spaces_newlines_and_bad_utf8_as_replacement_characters(
    peers: dict[str, Peer], producer: str
) -> None:
    """V1 CONSUME carries ':' and '|' as they are and ',' as it is (a reader splits only
    at ',<digits>:'), and a '\r' as V1's own values; a space, a newline and a byte that is
    not UTF-8 become U+FFFD each, so the reply stays one line of key=value fields."""
    got = _cross(peers, producer, "v1line", SEPARATORS)
    shown = ["a:b:c", "x,y", "p|q", "s\ufffdt", "l\ufffdm", "cr\r\ufffd", "\x00\ufffd", ""]
    assert [v for _, v in got] == [s.encode() for s in shown]


@pytest.mark.parametrize("consumer", BINARY)
def test_v1_produce_carries_colons_and_commas_to_every_protocol(
    peers: dict[str, Peer], consumer: str
) -> None:
    values = (b"a:b:c", b"x,y", b"::", b"k=v")
    got = _cross(peers, "v1line", consumer, values)
    assert [v for _, v in got] == list(values)


@pytest.mark.parametrize("value", [b"s t", b"l\nm", b"p|q", b"\xff"])
def test_v1_produce_refuses_a_value_a_line_cannot_carry(
    peers: dict[str, Peer], value: bytes
) -> None:
    topic = _topic(peers, "v1line", "kafka")
    with pytest.raises(MessagingRefused, match="cannot carry"):
        _run(peers["v1line"], lambda: peers["v1line"].messaging().produce(topic, [value]))


# ------------------------------------------------------------ foreign records


def _kafka_fetch(peer: Peer, topic: str) -> list[Any]:
    """Every record of partition 0, with its headers, by Fetch v4."""
    from conformance.protocols.kafka import records as rec
    from tests.support.kafka_client import KafkaConn

    conn = KafkaConn((peer.host, peer.port))
    try:
        parts = [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]
        body = {
            "replica_id": -1,
            "max_wait_ms": 0,
            "min_bytes": 0,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "topics": [{"topic": topic, "partitions": parts}],
        }
        got = conn.call(1, 4, body)["responses"][0]["partitions"][0]
        assert got["error_code"] == 0
        return [r for b in rec.decode_batches(got["records"] or b"") for r in b.records]
    finally:
        conn.close()


@pytest.mark.parametrize("producer", ["iggy", "cursus"])
def test_a_kafka_consumer_sees_no_header_of_another_protocols_fields(
    peers: dict[str, Peer], producer: str
) -> None:
    topic = _topic(peers, producer, "kafka")
    _run(peers[producer], lambda: peers[producer].messaging().produce(topic, [b"v"]))
    (record,) = _kafka_fetch(peers["kafka"], topic)
    assert record.value == b"v" and record.headers == ()


def test_kafka_headers_in_the_reserved_namespaces_read_back_as_sent(
    peers: dict[str, Peer],
) -> None:
    from conformance.protocols.kafka import records as rec
    from tests.support.kafka_client import KafkaConn

    topic = _topic(peers, "kafka", "kafka")
    headers = [("iggy.id", b"1"), ("cursus.key", b"2"), ("kafka.x", b"3"), ("plain", None)]
    batch = rec.encode_batch(rec.make_batch([b"h"], headers=[headers], base_timestamp=1))
    conn = KafkaConn((peers["kafka"].host, peers["kafka"].port))
    try:
        part = {"index": 0, "records": batch}
        body = {
            "acks": 1,
            "timeout_ms": 5000,
            "topic_data": [{"name": topic, "partition_data": [part]}],
        }
        got = conn.call(0, 3, body)["responses"][0]["partition_responses"][0]
        assert got["error_code"] == 0
    finally:
        conn.close()
    (record,) = _kafka_fetch(peers["kafka"], topic)
    assert [(h.key, h.value) for h in record.headers] == headers
    # ... and the other protocols read the record as ever
    for consumer in ("cursus", "minikafka", "v1line"):
        read = functools.partial(peers[consumer].messaging().consume, topic, 0, 1)
        assert _run(peers[consumer], read) == [(0, b"h")]


def test_v1_consume_sees_records_another_protocol_appended_after_a_v1_produce(
    peers: dict[str, Peer],
) -> None:
    """The V1 partition's leader offset follows the log, whoever appended to it."""
    topic = _topic(peers, "v1line", "kafka")
    v1, kafka = peers["v1line"], peers["kafka"]
    first = _run(v1, lambda: v1.messaging().produce(topic, [b"one"]))
    later = _run(kafka, lambda: kafka.messaging().produce(topic, [b"two", b"three"]))
    got = _run(v1, lambda: v1.messaging().consume(topic, first[0], 9))
    assert got == [(first[0], b"one"), (later[0], b"two"), (later[1], b"three")]


def test_iggy_reads_a_foreign_record_with_id_0_and_the_records_timestamp(
    peers: dict[str, Peer],
) -> None:
    """A record Kafka wrote has no Iggy id or timestamps: POLL shows id 0, the Kafka
    create time as both timestamps (µs), no user headers; GET_TOPIC counts it and its
    size (64 + payload)."""
    from conformance.protocols.iggy.broker_state import parse_engine_topic
    from conformance.protocols.iggy.messages import identifier
    from conformance.protocols.iggy.messaging import IggyMessaging

    iggy, kafka = peers["iggy"], peers["kafka"]
    topic = _topic(peers, "kafka", "iggy")
    before = time.time_ns() // 1000
    _run(kafka, lambda: kafka.messaging().produce(topic, [b"from-kafka"]))
    ids = parse_engine_topic(topic)
    assert ids is not None
    m = IggyMessaging(iggy.revision)
    head = {"stream": identifier(ids[0]), "topic": identifier(ids[1])}

    def poll_and_describe() -> Generator[bytes, bytes, tuple[Any, Any]]:
        polled = yield from m._poll(ids[0], ids[1], 0, 10)
        details = yield from m._call("get_topic", head)
        return polled, details

    polled, details = _run(iggy, poll_and_describe)
    (msg,) = polled
    assert msg["id"] == 0 and msg["payload"] == b"from-kafka" and msg["headers"] == b""
    assert msg["timestamp"] == msg["origin_timestamp"]
    assert before // 1000 * 1000 <= msg["timestamp"] <= time.time_ns() // 1000
    assert details["messages_count"] == 1
    assert details["size_bytes"] == 64 + len(b"from-kafka")
