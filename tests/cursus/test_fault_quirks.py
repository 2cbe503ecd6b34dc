"""The fault quirks of the Cursus reference broker do what the fuzzer is meant to find:
``crash-on-negative-payload-len`` kills the process, ``hang-on-empty-frame`` stalls a
connection without closing it, ``burst-loses-acked`` acknowledges batches it never stores
after a pipelined burst.  Each test also shows the clean broker does not do it."""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from conformance.engine import Engine
from conformance.protocols.cursus import codec
from conformance.protocols.cursus.handler import CursusConfig, CursusFrontend
from conformance.protocols.cursus.messages import (
    Batch,
    BatchAck,
    Command,
    ErrorReply,
    Message,
    OkReply,
    TopicList,
)
from conformance.protocols.cursus.quirks import (
    BURST_FRAMES,
    CRASH_EXIT_CODE,
    QUIRKS,
    Quirks,
    has_negative_payload_len,
)
from conformance.server import Server
from tests.support import broker
from tests.support.cursus_client import CursusTestClient

TIMEOUT = 3.0
MARK = b"payload-mark"
# messageCount's place in a batch to topic "t", partition "0", acks "1": magic, three
# str16 of one byte, idempotent, seqStart, seqEnd.
COUNT_AT = 2 + 3 * (2 + 1) + 1 + 8 + 8
FAULTS = ("crash-on-negative-payload-len", "hang-on-empty-frame", "burst-loses-acked")


@contextlib.contextmanager
def client(b: broker.Broker) -> Iterator[CursusTestClient]:
    with CursusTestClient(b.host, b.port, timeout=TIMEOUT) as c:
        yield c


def batch(topic: str, *payloads: bytes) -> Batch:
    return Batch(topic, "0", "1", messages=tuple(Message(payload=p) for p in payloads))


def with_negative_payload_len(body: bytes, length: int = -5) -> bytes:
    """``body`` with the payloadLen of the message whose payload is MARK set to ``length``."""
    at = body.index(MARK) - 4
    assert struct.unpack(">i", body[at : at + 4]) == (len(MARK),)
    return body[:at] + struct.pack(">i", length) + body[at + 4 :]


def create(c: CursusTestClient, topic: str) -> None:
    reply = c.request(Command("CREATE", (topic, 1)))
    assert isinstance(reply, OkReply), reply


def consume(c: CursusTestClient, topic: str, offset: int) -> list[bytes]:
    reply = c.request(Command("CONSUME", (topic, 0, offset)))
    assert isinstance(reply, Batch), reply
    return [m.payload for m in reply.messages]


def what_comes(sock: socket.socket, wait: float) -> str:
    """``"silence"`` (recv timed out: open, nothing sent), ``"close"`` or ``"data"``."""
    sock.settimeout(wait)
    try:
        return "data" if sock.recv(1 << 16) else "close"
    except TimeoutError:
        return "silence"
    except ConnectionError:
        return "close"


def test_fault_quirks_are_listed_with_kind_fault() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "conformance", "serve", "--quirk", "list"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    kinds = {line.split()[0]: line.split()[1] for line in proc.stdout.splitlines() if line}
    for name in FAULTS:
        assert kinds.get(name) == "fault", proc.stdout
        assert QUIRKS[name].kind == "fault"
    assert kinds["consume-from-zero"] == "spec"


# ------------------------------------------------------- crash-on-negative-payload-len


def test_walker_finds_negative_payload_len_only_inside_the_batch() -> None:
    body = codec.encode_batch(batch("t", b"first", MARK, b"third"))
    assert not has_negative_payload_len(body)
    assert has_negative_payload_len(with_negative_payload_len(body))
    assert has_negative_payload_len(with_negative_payload_len(body, -(2**31)))
    # What a lying frame prefix can do to a valid batch: cut it short, or glue bytes after it.
    for cut in range(len(body)):
        assert not has_negative_payload_len(body[:cut])
    for tail in (b"\xff" * 64, codec.frame(body), body):
        assert not has_negative_payload_len(body + tail)
    # Wrong magic, or a negative messageCount, is not the fault's trigger.
    assert not has_negative_payload_len(b"\xba\x7d" + with_negative_payload_len(body)[2:])
    assert body[COUNT_AT : COUNT_AT + 4] == struct.pack(">i", 3)
    neg_count = (
        body[:COUNT_AT] + struct.pack(">i", -1) + with_negative_payload_len(body)[COUNT_AT + 4 :]
    )
    assert not has_negative_payload_len(neg_count)


def test_walker_never_raises_on_garbage() -> None:
    rng = random.Random(7)
    body = codec.encode_batch(batch("t", b"x", MARK))
    for _ in range(2000):
        data = bytearray(body if rng.random() < 0.5 else rng.randbytes(rng.randrange(80)))
        for _ in range(rng.randrange(1, 6)):
            if data:
                data[rng.randrange(len(data))] = rng.randrange(256)
        assert has_negative_payload_len(bytes(data)) in (True, False)
    huge_count = body[:COUNT_AT] + struct.pack(">i", 2**31 - 1) + body[COUNT_AT + 4 :]
    assert not has_negative_payload_len(huge_count)


def test_clean_broker_refuses_negative_payload_len_with_an_error_ack() -> None:
    bad = with_negative_payload_len(codec.encode_batch(batch("t", b"ok", MARK)))
    with broker.running() as b, client(b) as c:
        create(c, "t")
        c.sock.sendall(codec.frame(bad))
        ack = c.recv()
        assert isinstance(ack, BatchAck) and ack.status == "ERROR", ack
        assert "MALFORMED_BATCH" in ack.error
        assert isinstance(c.request(Command("LIST")), TopicList)
        assert b.proc.poll() is None


def test_negative_payload_len_kills_the_broker_with_the_quirk() -> None:
    b = broker.start("--quirk", "crash-on-negative-payload-len")
    try:
        with client(b) as c:
            create(c, "t")
            ack = c.request(batch("t", b"ok", MARK))
            assert isinstance(ack, BatchAck) and ack.status == "OK", ack
            short = codec.encode_batch(batch("t", b"ok", MARK))[:-3]  # prefix lie: cut short
            c.sock.sendall(codec.frame(short))
            assert isinstance(c.recv(), BatchAck)
            assert b.proc.poll() is None, "a valid or truncated batch must not kill it"
            bad = with_negative_payload_len(codec.encode_batch(batch("t", b"ok", MARK)))
            c.sock.sendall(codec.frame(bad))
            assert what_comes(c.sock, TIMEOUT) == "close"
        assert b.proc.wait(5) == CRASH_EXIT_CODE
        assert b.proc.stderr is not None
        assert "crash-on-negative-payload-len" in b.proc.stderr.read()
    finally:
        b.stop()


# ------------------------------------------------------------------ hang-on-empty-frame


def test_clean_broker_answers_an_empty_frame_with_an_error() -> None:
    with broker.running() as b, client(b) as c:
        c.sock.sendall(codec.frame(b""))
        reply = c.recv()
        assert isinstance(reply, ErrorReply) and reply.code == "EMPTY_COMMAND", reply
        assert isinstance(c.request(Command("LIST")), TopicList)


def test_empty_frame_stalls_the_connection_with_the_quirk() -> None:
    b = broker.start("--quirk", "hang-on-empty-frame")
    try:
        with client(b) as stalled:
            assert isinstance(stalled.request(Command("LIST")), TopicList)
            stalled.sock.sendall(codec.frame(b""))
            assert what_comes(stalled.sock, 1.0) == "silence", "no reply and no close expected"
            stalled.sock.sendall(codec.frame(b"LIST"))
            assert what_comes(stalled.sock, 1.0) == "silence", "a stalled connection is not served"
            with client(b) as other:
                assert isinstance(other.request(Command("LIST")), TopicList)
            started = time.monotonic()
            b.stop()  # SIGTERM: shutting down ends the stalled connection too
            assert b.proc.returncode == 0
            assert time.monotonic() - started < 5
            assert what_comes(stalled.sock, TIMEOUT) == "close"
    finally:
        b.stop()


def test_server_close_ends_a_stalled_connection_promptly() -> None:
    async def scenario() -> tuple[float, bytes]:
        config = CursusConfig(quirks=Quirks.of(["hang-on-empty-frame"]))
        engine = Engine()
        server = Server(CursusFrontend(engine, config))
        host, port = await server.start()
        reader, writer = await asyncio.open_connection(host, port)
        try:
            writer.write(codec.frame(b""))
            await writer.drain()
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(reader.read(1), 0.5)
            started = time.monotonic()
            await asyncio.wait_for(server.close(), TIMEOUT)
            took = time.monotonic() - started
            rest = await asyncio.wait_for(reader.read(), TIMEOUT)
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
            engine.close()
        return took, rest

    took, rest = asyncio.run(scenario())
    assert took < 1.0
    assert rest == b""


# ------------------------------------------------------------------- burst-loses-acked


def pipelined_produce(c: CursusTestClient, topic: str, count: int) -> list[BatchAck]:
    """``count`` one-message batches in one write (one read at the broker), then their acks."""
    frames = [
        codec.frame(codec.encode_batch(batch(topic, f"burst-{i}".encode()))) for i in range(count)
    ]
    c.sock.sendall(b"".join(frames))
    acks = [c.recv() for _ in range(count)]
    for ack in acks:
        assert isinstance(ack, BatchAck) and ack.status == "OK", ack
    return [a for a in acks if isinstance(a, BatchAck)]


def produce_then_consume(c: CursusTestClient, topic: str, payload: bytes) -> list[bytes]:
    ack = c.request(batch(topic, payload))
    assert isinstance(ack, BatchAck) and ack.status == "OK", ack
    return consume(c, topic, ack.last_offset)


def test_burst_makes_the_quirky_broker_lose_acknowledged_batches() -> None:
    with broker.running("--quirk", "burst-loses-acked") as b:
        with client(b) as c:
            create(c, "burst")
            create(c, "canary")
            assert produce_then_consume(c, "canary", b"before") == [b"before"]
            pipelined_produce(c, "burst", BURST_FRAMES)
            ack = c.request(batch("canary", b"after-1", b"after-2"))
            assert isinstance(ack, BatchAck) and ack.status == "OK", ack
            assert ack.last_offset == 2, "a plausible ack: high watermark 1 + 2 messages - 1"
            assert consume(c, "canary", 1) == []
        with client(b) as again:  # the loss is broker-wide, not per connection
            assert produce_then_consume(again, "canary", b"later") == []


def test_fewer_frames_than_a_burst_trip_nothing() -> None:
    with broker.running("--quirk", "burst-loses-acked") as b, client(b) as c:
        create(c, "burst")
        create(c, "canary")
        pipelined_produce(c, "burst", BURST_FRAMES - 1)
        assert len(consume(c, "burst", 0)) == BURST_FRAMES - 1
        assert produce_then_consume(c, "canary", b"kept") == [b"kept"]


def test_clean_broker_keeps_everything_after_a_burst() -> None:
    with broker.running() as b, client(b) as c:
        create(c, "burst")
        create(c, "canary")
        acks = pipelined_produce(c, "burst", 2 * BURST_FRAMES)
        assert [a.last_offset for a in acks] == list(range(2 * BURST_FRAMES))
        assert len(consume(c, "burst", 0)) == 2 * BURST_FRAMES
        assert produce_then_consume(c, "canary", b"kept") == [b"kept"]
