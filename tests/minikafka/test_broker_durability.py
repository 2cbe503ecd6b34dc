"""MK-FLUSH-3 on the reference broker: ``conformance serve --protocol minikafka --data-dir D``
killed with SIGKILL right after a FLUSH reply, and started again on D, reads back every
message acknowledged before that reply, at its offset, byte for byte; so do topics the real
server could not even create (a NUL, 300 bytes: FACTS.md 3.8).  Then a few rounds of a
producer that FLUSHes every few messages, killed at a random moment: after each restart the
topic holds a prefix of what was sent that covers everything flushed, and the topics of
earlier rounds are as they were.  The client is the codec over a plain socket, every read
with a deadline; the broker is a subprocess ended by its PID."""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from pathlib import Path

from conformance.protocols.minikafka import codec
from tests.support import broker
from tests.support.minikafka_wire import Closed, Conn

KILL_ROUNDS = 5
ROUNDS_BUDGET_S = 10.0
FLUSH_EVERY = 7
MAX_SENDS = 50_000


def serve(data: Path) -> broker.Broker:
    return broker.start("--revision", "real", "--data-dir", str(data), protocol="minikafka")


def read_all(c: Conn, topic: str | bytes) -> list[tuple[int, bytes]]:
    """Every message of ``topic`` from offset 0, following next_offset (bounded)."""
    out: list[tuple[int, bytes]] = []
    for _ in range(1000):
        got = c.consume(topic, len(out), 1000)
        if not got.messages:
            return out
        out += [(m.offset, m.data) for m in got.messages]
    raise AssertionError(f"{topic!r}: more than 1000 CONSUME replies")


def message(topic: str, i: int) -> bytes:
    return f"{topic}:{i}:".encode() + bytes([i % 256]) * (i % 50)


def test_every_message_acknowledged_before_a_flush_reply_survives_sigkill(tmp_path: Path) -> None:
    """MK-FLUSH-3: produce N (pipelined and one by one) to three topics, FLUSH, SIGKILL the
    moment its reply is read, restart on the same --data-dir: all of it reads back."""
    topics = ["durable", "nul\x00topic", "y" * 300]
    sent: dict[str, list[bytes]] = {t: [message(t, i) for i in range(40)] for t in topics}
    b = serve(tmp_path)
    try:
        with Conn(b.host, b.port) as c:
            for t in topics:
                half = len(sent[t]) // 2
                batch = [
                    codec.frame(codec.encode_request(codec.Produce(t, d))) for d in sent[t][:half]
                ]
                c.send(b"".join(batch))
                assert [c.reply() for _ in batch] == [codec.ProduceOk(i) for i in range(half)]
                for i, d in enumerate(sent[t][half:], start=half):
                    assert c.produce(t, d) == i
            c.send(codec.frame(codec.encode_request(codec.Flush())))
            assert c.reply() == codec.FlushOk()
            os.kill(b.proc.pid, signal.SIGKILL)  # right after the reply, nothing else between
        b.proc.wait(10)
    finally:
        b.kill()
        b.stop()
    again = serve(tmp_path)
    try:
        with Conn(again.host, again.port) as c:
            for t in topics:
                assert read_all(c, t) == list(enumerate(sent[t])), f"topic {t[:12]!r}"
            assert c.produce(topics[0], b"after") == len(sent[topics[0]]), "offsets restarted"
    finally:
        again.stop()


class Round:
    """One producer run against a broker killed at a random moment."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.acked = 0
        self.flushed = 0
        """Messages acknowledged before the last FLUSH reply read."""
        self.sent = 0

    def produce_until_killed(self, b: broker.Broker, end: float) -> None:
        with Conn(b.host, b.port, deadline_s=2.0) as c:
            try:
                while self.sent < MAX_SENDS and time.monotonic() < end:
                    self.sent += 1
                    assert c.produce(self.topic, message(self.topic, self.acked)) == self.acked
                    self.acked += 1
                    if self.acked % FLUSH_EVERY == 0:
                        assert c.call(codec.Flush()) == codec.FlushOk()
                        self.flushed = self.acked
            except (Closed, ConnectionError):
                pass  # killed


def test_random_kill_points_keep_everything_flushed(tmp_path: Path) -> None:
    """MK-FLUSH-3, MK-PROD-2 across restarts: killed at random moments while a producer
    FLUSHes every few messages, the broker keeps every flushed message, never anything it
    was not sent, and every earlier round's topic as it was read back before."""
    rng = random.Random(9180)
    kept: dict[str, list[tuple[int, bytes]]] = {}
    start = time.monotonic()
    rounds = 0
    while rounds < KILL_ROUNDS and time.monotonic() - start < ROUNDS_BUDGET_S:
        rounds += 1
        r = Round(f"round{rounds}")
        b = serve(tmp_path)
        delay = rng.uniform(0.02, 0.3)
        timer = threading.Timer(delay, os.kill, (b.proc.pid, signal.SIGKILL))
        try:
            timer.start()
            r.produce_until_killed(b, time.monotonic() + delay + 5)
            b.proc.wait(10)
        finally:
            timer.cancel()
            b.kill()
            b.stop()
        assert r.sent < MAX_SENDS, "the kill never came"
        again = serve(tmp_path)
        try:
            with Conn(again.host, again.port) as c:
                got = read_all(c, r.topic)
                for topic, before in kept.items():
                    assert read_all(c, topic) == before, f"{topic} changed after round {rounds}"
        finally:
            again.stop()
        why = f"round {rounds}, killed after {delay:.3f} s"
        assert r.flushed <= len(got) <= r.sent, (
            f"{why}: {len(got)} messages back, {r.flushed} flushed, {r.sent} sent"
        )
        assert got == [(i, message(r.topic, i)) for i in range(len(got))], why
        kept[r.topic] = got
    assert rounds >= 2, f"only {rounds} round(s) in {ROUNDS_BUDGET_S} s"
