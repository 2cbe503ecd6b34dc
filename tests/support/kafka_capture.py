"""A recording TCP proxy for Kafka, to capture the frames real clients send and receive.

:class:`Capture` listens on 127.0.0.1 (port 0: the system picks one), connects each
client connection to the broker, and forwards whole frames (``[int32 size][size bytes]``)
both ways, recording each one as it passed, with its connection, its direction and its
order.  Kafka clients connect to the address the broker *advertises* in Metadata and
FindCoordinator responses, so the proxy rewrites the broker's port behind its host string
in responses to its own (the host is the same, ``127.0.0.1``, so no length changes); the
recorded response is the broker's original.  The proxy itself is standard library only.

Run as a program, it captures a session of the real clients (kafka-python, aiokafka,
confluent-kafka and kcat) against a broker and prints a YAML skeleton per frame (this
part imports the clients and the project's codec)::

    .venv/bin/conformance serve --protocol kafka --revision apache --port 0 &
    .venv/bin/python -m tests.support.kafka_capture --broker 127.0.0.1:PORT > skeletons.yaml

Without ``--broker`` it starts the reference broker (revision apache) itself.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import struct
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tests.support.loopback import LoopbackServer

MAX_FRAME = 100 * 1024 * 1024
_SIZE = struct.Struct(">i")


@dataclass(frozen=True)
class Frame:
    """One whole frame as it passed the proxy (its size prefix included)."""

    order: int
    """Its place among every frame the proxy saw, both directions, all connections."""
    connection: int
    seq: int
    """Its place among the frames of its connection and direction."""
    direction: str
    """``request`` (client to broker) or ``reply`` (broker to client)."""
    data: bytes

    @property
    def payload(self) -> bytes:
        return self.data[4:]


@dataclass
class Capture(LoopbackServer):
    """A proxy in front of ``upstream``; ``frames`` grows as frames pass."""

    upstream: tuple[str, int]
    label: str = ""
    frames: list[Frame] = field(default_factory=list)
    host: str = "127.0.0.1"
    port: int = 0

    def __post_init__(self) -> None:
        self.init_server()
        self._order = 0

    backlog = 64

    def accepted(self, client: socket.socket) -> None:
        """Connect the client to the broker and forward both ways."""
        try:
            broker = socket.create_connection(self.upstream, timeout=10)
        except OSError:
            client.close()
            return
        broker.settimeout(None)
        client.settimeout(None)
        conn = self.track(client, broker)
        self.spawn(self._pump, conn, "request", client, broker)
        self.spawn(self._pump, conn, "reply", broker, client)

    def _pump(self, conn: int, direction: str, src: socket.socket, dst: socket.socket) -> None:
        buf = bytearray()
        seq = 0
        framing = True
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if not framing:  # a size the broker refuses: pass the bytes on as they are
                    dst.sendall(data)
                    continue
                buf += data
                while len(buf) >= 4:
                    (size,) = _SIZE.unpack_from(buf)
                    if size < 0 or size > MAX_FRAME:
                        framing = False
                        dst.sendall(bytes(buf))
                        buf.clear()
                        break
                    if len(buf) < 4 + size:
                        break
                    whole = bytes(buf[: 4 + size])
                    del buf[: 4 + size]
                    self._record(conn, seq, direction, whole)
                    seq += 1
                    dst.sendall(self._rewrite(whole) if direction == "reply" else whole)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)

    def _record(self, conn: int, seq: int, direction: str, data: bytes) -> None:
        with self._lock:
            self.frames.append(Frame(self._order, conn, seq, direction, data))
            self._order += 1

    def _rewrite(self, frame: bytes) -> bytes:
        """The broker's advertised ``host`` + int32 port made the proxy's (same host)."""
        host = self.upstream[0].encode()
        return frame.replace(
            host + _SIZE.pack(self.upstream[1]), self.host.encode() + _SIZE.pack(self.port)
        )

    # ------------------------------------------------------------------- access

    def connections(self) -> dict[int, list[Frame]]:
        """The frames of each connection, in the order they passed."""
        out: dict[int, list[Frame]] = {}
        with self._lock:
            for f in sorted(self.frames, key=lambda f: f.order):
                out.setdefault(f.connection, []).append(f)
        return out


# ============================================================ the capture session


def _value(client: str, codec: str, i: int) -> bytes:
    return (b"%s %s record %d; " % (client.encode(), codec.encode(), i)) * 8


def _kafka_python(address: str, topic: str, group: str) -> None:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=address, client_id="capture-kp-admin")
    try:
        admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
    finally:
        admin.close()
    for codec in ("gzip", "zstd"):  # values that compress (clients skip what does not)
        producer = KafkaProducer(
            bootstrap_servers=address, acks="all", compression_type=codec, linger_ms=5
        )
        try:
            for i in range(3):
                value = _value("kafka-python", codec, i)
                producer.send(topic, key=b"k%d" % i, value=value, headers=[("h", b"kp")])
            producer.flush(timeout=20)
        finally:
            producer.close(timeout=10)
    _kafka_python_consume(address, topic, group)


def _kafka_python_consume(address: str, topic: str, group: str) -> None:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=address,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=300,
        fetch_max_wait_ms=200,
    )
    try:
        got = 0
        end = time.monotonic() + 30
        while got < 6 and time.monotonic() < end:
            for records in consumer.poll(timeout_ms=200).values():
                got += len(records)
        consumer.commit()
        time.sleep(0.8)  # a heartbeat or two
    finally:
        consumer.close()


def _aiokafka(address: str, topic: str, group: str) -> None:
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    async def session() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=address)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(topic, 1, 1)])
        finally:
            await admin.close()
        for codec in ("snappy", "lz4"):
            producer = AIOKafkaProducer(
                bootstrap_servers=address, acks="all", compression_type=codec, linger_ms=5
            )
            await producer.start()
            try:
                for i in range(3):
                    value = _value("aiokafka", codec, i)
                    headers = [("h", b"aio")]
                    await producer.send(topic, key=b"k%d" % i, value=value, headers=headers)
                await producer.flush()
            finally:
                await producer.stop()
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=address,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=6000,
            heartbeat_interval_ms=300,
            fetch_max_wait_ms=200,
        )
        await consumer.start()
        try:
            got = 0
            end = time.monotonic() + 30
            while got < 6 and time.monotonic() < end:
                for records in (await consumer.getmany(timeout_ms=200)).values():
                    got += len(records)
            await consumer.commit()
            await asyncio.sleep(0.8)
        finally:
            await consumer.stop()

    asyncio.run(session())


def _confluent(address: str, topic: str, group: str) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": address})
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(20)
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        producer = Producer(
            {
                "bootstrap.servers": address,
                "acks": "all",
                "compression.type": codec,
                "linger.ms": 5,
                "enable.idempotence": True,
            }
        )
        for i in range(2):
            value = _value("librdkafka", codec, i)
            producer.produce(topic, key=b"k%d" % i, value=value, headers=[("c", b"rd")])
        assert producer.flush(30) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": address,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 300,
            "fetch.wait.max.ms": 200,
        }
    )
    try:
        consumer.subscribe([topic])
        got = 0
        end = time.monotonic() + 30
        while got < 10 and time.monotonic() < end:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got += 1
        consumer.commit(asynchronous=False)
        consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)
        consumer.committed([TopicPartition(topic, 0)], timeout=10)
        time.sleep(0.8)
    finally:
        consumer.close()


def _kcat(address: str, topic: str, group: str) -> None:
    import subprocess

    def run(*args: str, stdin: str | None = None) -> None:
        subprocess.run(
            ["kcat", "-b", address, *args], input=stdin, capture_output=True, text=True, timeout=60
        ).check_returncode()

    lines = "".join(f"k{i}:{_value('kcat', 'lz4', i).decode()}\n" for i in range(2))
    run("-P", "-t", topic, "-K:", "-H", "via=kcat", "-z", "lz4", stdin=lines)
    run("-L", "-t", topic)
    run("-C", "-t", topic, "-o", "beginning", "-e")
    run("-G", group, "-o", "beginning", "-e", "-c", "2", topic)  # a balanced consumer


SESSIONS: dict[str, Callable[[str, str, str], None]] = {
    "kafka-python": _kafka_python,
    "aiokafka": _aiokafka,
    "confluent-kafka": _confluent,
    "kcat": _kcat,
}


def client_version(client: str) -> str:
    """``kafka-python 3.0.12``, ``librdkafka 2.16.0`` ... (what produced the bytes)."""
    if client == "kafka-python":
        import kafka

        return f"kafka-python {kafka.__version__}"
    if client == "aiokafka":
        import aiokafka

        return f"aiokafka {aiokafka.__version__}"
    if client == "confluent-kafka":
        import confluent_kafka

        return (
            f"librdkafka {confluent_kafka.libversion()[0]} "
            f"(confluent-kafka {confluent_kafka.version()})"
        )
    import re
    import subprocess

    out = subprocess.run(["kcat", "-V"], capture_output=True, text=True).stdout
    m = re.search(r"Version (\S+) .*librdkafka (\S+)", out)
    return f"kcat {m.group(1)} (librdkafka {m.group(2)})" if m else "kcat"


def capture(broker: tuple[str, int], client: str, topic: str, group: str) -> Capture:
    """The frames of one client's session through a fresh proxy."""
    with Capture(broker, label=client) as proxy:
        SESSIONS[client](proxy.address, topic, group)
        time.sleep(0.3)
    return proxy


def pairs(proxy: Capture) -> Iterator[tuple[Frame, Frame | None]]:
    """Each request frame with the response frame that answers it (None: none did)."""
    from conformance.protocols.kafka import codec

    for frames in proxy.connections().values():
        replies = {codec.correlation_of(f.payload): f for f in frames if f.direction == "reply"}
        for f in frames:
            if f.direction == "request":
                _, _, corr = codec.peek(f.payload)
                yield f, replies.get(corr)


def skeletons(proxy: Capture, version: str) -> list[dict[str, Any]]:
    """A YAML skeleton (id, description, hex, decoded) per request and its reply."""
    from conformance.protocols.kafka import codec
    from conformance.protocols.kafka.apis import APIS
    from conformance.protocols.kafka.vectors import SCHEMA, Response, grouped_hex

    out: list[dict[str, Any]] = []
    slug = proxy.label.replace("confluent-kafka", "librdkafka")
    for req, rep in pairs(proxy):
        request = codec.decode_request(req.payload)
        api = APIS[request.api_key]
        name = f"{api.name} v{request.api_version}"
        base = f"kafka/captured/{slug}-{api.name.lower()}-v{request.api_version}-c{req.connection}"
        out.append(
            {
                "id": f"{base}-{req.seq}-request",
                "requirements": [],
                "direction": "request",
                "description": f"{version} {name} request",
                "hex": grouped_hex(req.data, "request"),
                "decoded": SCHEMA.from_message(request),
            }
        )
        if rep is None:
            continue
        corr, body = codec.decode_response(rep.payload, request.api_key, request.api_version)
        out.append(
            {
                "id": f"{base}-{req.seq}-response",
                "requirements": [],
                "direction": "reply",
                "description": f"reference broker's {name} response to {version}",
                "api_key": request.api_key,
                "api_version": request.api_version,
                "hex": grouped_hex(rep.data, "reply", request.api_key, request.api_version),
                "decoded": SCHEMA.from_message(Response(corr, body)),
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    import uuid

    import yaml

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--broker", help="HOST:PORT of a running broker (default: start one)")
    parser.add_argument("--client", action="append", choices=sorted(SESSIONS))
    args = parser.parse_args(argv)
    started = None
    if args.broker:
        host, _, port = args.broker.rpartition(":")
        upstream = (host, int(port))
    else:
        from tests.support import broker as support

        started = support.start("--revision", "apache", protocol="kafka")
        upstream = (started.host, started.port)
    try:
        for client in args.client or list(SESSIONS):
            tag = uuid.uuid4().hex[:6]
            slug = client.split("-")[0]
            proxy = capture(upstream, client, f"cap-{slug}-{tag}", f"cap-{slug}-g-{tag}")
            version = client_version(client)
            print(f"# {version}: {len(proxy.frames)} frames")
            print(yaml.safe_dump(skeletons(proxy, version), sort_keys=False, width=100))
    finally:
        if started is not None:
            started.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
