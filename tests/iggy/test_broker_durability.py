"""The Iggy reference broker loses nothing across a restart on its ``--data-dir``: served as
a subprocess, killed with SIGKILL, started again on the same directory, it answers every
stream, topic, group, message and stored offset as before; and killed in the middle of a
loop of sends and offset stores, again and again, it keeps every acknowledged message and
never gives back an older stored offset than one it acknowledged.

The client is the codec over a plain socket, every read with a deadline."""

from __future__ import annotations

import os
import signal
import socket
import threading
from pathlib import Path
from typing import Any

from conformance.protocols.iggy import codec
from conformance.protocols.iggy.messages import CODES
from tests.iggy.broker_client import consumer, ident
from tests.iggy.test_broker import durable_history, read_everything
from tests.support import iggy_serve

DEADLINE_S = 5.0
KILL_ROUNDS = 10
S0, T0 = ident(0), ident(0)


class SocketConn:
    """The in-process ``Conn``'s interface (call, ok, login) over TCP."""

    def __init__(self, served: iggy_serve.Served) -> None:
        self.sock = socket.create_connection((served.host, served.port), timeout=DEADLINE_S)
        self.sock.settimeout(DEADLINE_S)

    def _read(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            data += chunk
        return data

    def call(self, name: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        payload = codec.encode_request(name, body or {}, "classic")
        self.sock.sendall(codec.frame_request(CODES[name], payload))
        head = self._read(8)
        status, length = int.from_bytes(head[:4], "little"), int.from_bytes(head[4:], "little")
        reply = self._read(length)
        if status:
            return status, None
        return 0, codec.decode_reply(name, reply, "classic")

    def ok(self, name: str, body: dict[str, Any] | None = None) -> Any:
        status, reply = self.call(name, body)
        assert status == 0, f"{name} answered {status}"
        return reply

    def login(self) -> None:
        self.ok(
            "login_user", {"username": "iggy", "password": "iggy", "version": "", "context": ""}
        )

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> SocketConn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(served: iggy_serve.Served) -> SocketConn:
    c = SocketConn(served)
    try:
        c.login()
    except BaseException:
        c.close()
        raise
    return c


def kill(served: iggy_serve.Served) -> None:
    os.kill(served.proc.pid, signal.SIGKILL)
    served.proc.wait(iggy_serve.STOP_DEADLINE_S)


def test_everything_reads_back_identically_after_kill_9(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    first = iggy_serve.start("--data-dir", data, directory=tmp_path / "first")
    try:
        with connect(first) as c:
            durable_history(c)
            before = read_everything(c)
            groups = before["0/0/groups"]["groups"]
            assert groups[0]["members_count"] == 1 and before["0/0/0"]["messages"]
            kill(first)
    finally:
        first.stop()
    groups[0]["members_count"] = 0  # the member's connection did not survive
    for n in range(2):  # a restart, then one more from what the first may have compacted
        logs = tmp_path / f"again-{n}"
        with iggy_serve.running("--data-dir", data, directory=logs) as again, connect(again) as c:
            assert read_everything(c) == before, again.log()
            kill(again)


WHERE = {"stream": S0, "topic": T0, "partition_flag": 1, "partition_id": 0}
HEADERS = b"\x02\x01\0\0\0k\x02\x01\0\0\0v"


def _work(served: iggy_serve.Served, acked: dict[int, bytes], stored: list[int]) -> None:
    """Send one message at a time to partition 0 and store the offset of each; record
    what was acknowledged, until the kill cuts the connection."""
    try:
        with connect(served) as c:
            while len(acked) < 1_000_000:  # bounded; the kill comes long before
                offset = len(acked)
                message = {"payload": b"m-%d" % offset, "id": offset + 1, "headers": HEADERS}
                to_0 = {"stream": S0, "topic": T0, "partitioning": {"kind": 2, "value": 0}}
                c.ok("send_messages", {**to_0, "messages": [message]})
                acked[offset] = message["payload"]
                c.ok(
                    "store_consumer_offset", {**WHERE, "consumer": consumer("w"), "offset": offset}
                )
                stored.append(offset)
    except (OSError, AssertionError):  # the kill: a reset, or a reply cut short
        return


def _check(c: SocketConn, round_: int, acked: dict[int, bytes], stored: list[int]) -> None:
    """Every acknowledged message at its offset, at most one more (a send whose reply the
    kill cut: then it is added to ``acked``), and the stored offset not below the last
    acknowledged store."""
    known = c.ok("get_consumer_offset", {**WHERE, "consumer": consumer("w")})
    if stored:
        assert known is not None and known["stored_offset"] >= stored[-1], (
            f"after kill {round_}: stored offset {known} went back from {stored[-1]}"
        )
    got: dict[int, Any] = {}
    while True:
        body = {**WHERE, "consumer": consumer(0), "count": 1000, "auto_commit": False}
        reply = c.ok("poll_messages", {**body, "strategy": {"kind": 1, "value": len(got)}})
        if not reply["messages"]:
            break
        got.update((m["offset"], m) for m in reply["messages"])
    lost = [o for o, p in acked.items() if o not in got or got[o]["payload"] != p]
    assert not lost, f"after kill {round_}: acknowledged messages lost at offsets {lost[:5]}"
    extra = len(got) - len(acked)
    assert 0 <= extra <= 1, f"after kill {round_}: {extra} messages nobody sent"
    for o, m in got.items():
        assert (m["id"], m["headers"]) == (o + 1, HEADERS), f"offset {o}: {m}"
        acked[o] = m["payload"]


def test_nothing_acknowledged_is_lost_over_repeated_kill_9(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    acked: dict[int, bytes] = {}
    stored: list[int] = []
    with (
        iggy_serve.running("--data-dir", data, directory=tmp_path / "set-up") as served,
        connect(served) as c,
    ):
        c.ok("create_stream", {"name": "s"})
        topic = {"stream": S0, "partitions_count": 1, "compression": 1, "message_expiry": 0}
        c.ok("create_topic", {**topic, "max_topic_size": 0, "replication_factor": 1, "name": "t"})
    for round_ in range(KILL_ROUNDS + 1):
        served = iggy_serve.start("--data-dir", data, directory=tmp_path / f"round-{round_}")
        try:
            with connect(served) as c:
                _check(c, round_, acked, stored)
            if round_ == KILL_ROUNDS:
                break
            worker = threading.Thread(target=_work, args=(served, acked, stored))
            worker.start()
            threading.Event().wait(0.15 + 0.03 * round_)
            kill(served)
            worker.join(DEADLINE_S * 2)
            assert not worker.is_alive()
        finally:
            served.stop()
    assert len(acked) > 50 * KILL_ROUNDS, f"only {len(acked)} messages in {KILL_ROUNDS} rounds"
