"""The reference broker survives ``kill -9`` during a produce loop: after a restart on the
same ``--data-dir``, every acknowledged message is there, at its acknowledged offset."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from conformance.protocols.cursus.messages import Batch, BatchAck, Command, Message
from tests.support import broker
from tests.support.cursus_client import CursusTestClient

TOPIC = "durable"


def produce_until_killed(
    host: str, port: int, acked: dict[int, bytes], stop: threading.Event
) -> None:
    try:
        with CursusTestClient(host, port) as c:
            for i in range(20_000):  # bounded; the broker is killed long before
                if stop.is_set():
                    return
                payload = f"message-{i}".encode()
                ack = c.request(Batch(TOPIC, "0", "1", messages=(Message(payload=payload),)))
                assert isinstance(ack, BatchAck) and ack.status == "OK", ack
                acked[ack.last_offset] = payload
    except (ConnectionError, OSError):
        return  # the kill cut the connection: what was acknowledged is in `acked`


def test_acknowledged_messages_survive_kill_9(tmp_path: Path) -> None:
    data_dir = str(tmp_path / "data")
    b = broker.start("--data-dir", data_dir)
    try:
        with CursusTestClient(b.host, b.port) as c:
            assert c.request(Command("CREATE", (TOPIC, 1))).__class__.__name__ == "OkReply"
        acked: dict[int, bytes] = {}
        stop = threading.Event()
        producer = threading.Thread(target=produce_until_killed, args=(b.host, b.port, acked, stop))
        producer.start()
        deadline = time.monotonic() + 10
        while len(acked) < 300 and time.monotonic() < deadline:
            time.sleep(0.01)
        b.kill()
        stop.set()
        producer.join(10)
    finally:
        b.stop()
    assert len(acked) >= 300, "the produce loop did not get going"

    with (
        broker.running("--data-dir", data_dir) as again,
        CursusTestClient(again.host, again.port) as c,
    ):
        stored: dict[int, bytes] = {}
        offset = 0
        for _ in range(10_000):
            reply = c.request(Command("CONSUME", (TOPIC, 0, offset)))
            assert isinstance(reply, Batch), reply
            if not reply.messages:
                break
            stored.update((m.offset, m.payload) for m in reply.messages)
            offset = reply.messages[-1].offset + 1
    missing = {o: p for o, p in acked.items() if stored.get(o) != p}
    assert not missing, (
        f"{len(missing)} acknowledged messages lost, e.g. {list(missing.items())[:3]}"
    )
