"""A small V1 line client library for the ``serve --validate`` tests: what an SDK does.

It is written from the document and SPEC.md's client requirements, on top of the
blocking line client of :mod:`tests.support.v1line_client` (which reads a reply up to its
``\\n`` however it arrives, so split and slow replies are read whole):

* correlation ids count up from 1 on each connection (V1L-CLI-4, -5);
* a connection that ends before a reply (a reset) is opened again and the request sent
  again (V1L-CLI-20); a PRODUCE answered NOT_LEADER or REPLICATION_TIMEOUT is sent again
  (V1L-CLI-18); each at most :data:`ATTEMPTS` times;
* a group member keeps the generation and assignment of its latest JOIN or SYNC answer
  (V1L-CLI-11, -12), heartbeats after every poll (V1L-CLI-13), and after
  GENERATION_MISMATCH joins again before anything else (V1L-CLI-14); it keeps its read
  position for partitions it still owns after a re-join, so it reads no record twice,
  and starts a newly assigned partition at the group's committed offset.

Every call has a deadline (the line client's), and every loop is bounded.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tests.support.v1line_client import Client, fields, int_list, messages

ATTEMPTS = 5
RETRY_PAUSE_S = 0.05
RETRIABLE = ("NOT_LEADER", "REPLICATION_TIMEOUT")


class V1Error(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


def _status(reply: str) -> tuple[str, str]:
    """``(OK|ERR, payload or code|message)`` of a reply line."""
    parts = reply.split("|", 3)
    assert len(parts) >= 3 and parts[0] == "V1", f"not a V1 reply: {reply!r}"
    return parts[2], parts[3] if len(parts) == 4 else ""


class Connection:
    """One connection at a time to ``host:port``, opened again after it ends."""

    def __init__(self, host: str, port: int, timeout: float = 5.0) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self.client: Client | None = None
        self.cid = 0
        self.reconnects = 0

    def _open(self) -> Client:
        if self.client is None:
            self.client = Client(self.host, self.port, self.timeout)
            self.cid = 0
        return self.client

    def call(self, command: str, args: str = "", on_reset: Callable[[], None] | None = None) -> str:
        """Send ``command`` and return its reply line; a connection that ends first is
        opened again and the request sent again (at most ATTEMPTS times in all)."""
        for _ in range(ATTEMPTS):
            client = self._open()
            self.cid += 1
            try:
                return client.call(self.cid, command, args)
            except (ConnectionError, OSError):
                client.close()
                self.client = None
                self.reconnects += 1
                if on_reset is not None:
                    on_reset()
        raise ConnectionError(f"{command}: no reply after {ATTEMPTS} connections")

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None


@dataclass
class Producer:
    conn: Connection
    acked: list[tuple[str, int, int, str]] = field(default_factory=list)
    """(topic, partition, offset, value) of every acknowledged record."""
    unanswered: list[str] = field(default_factory=list)
    """Values whose PRODUCE lost its connection before the reply (maybe stored)."""
    retried_errors: list[str] = field(default_factory=list)

    def produce(self, topic: str, key: str, value: str, acks: str | None = None) -> tuple[int, int]:
        args = f"{topic} {key}:{value}" + (f" acks={acks}" if acks else "")
        for _ in range(ATTEMPTS):
            reply = self.conn.call("PRODUCE", args, lambda: self.unanswered.append(value))
            status, rest = _status(reply)
            if status == "OK":
                got = fields(reply)
                partition, offset = int(got["partition"]), int(got["offset"])
                self.acked.append((topic, partition, offset, value))
                return partition, offset
            code = rest.split("|", 1)[0]
            if code not in RETRIABLE:
                raise V1Error(code, rest)
            self.retried_errors.append(code)
            time.sleep(RETRY_PAUSE_S)
        raise V1Error("GAVE_UP", f"PRODUCE {args}: {ATTEMPTS} attempts")


@dataclass
class GroupConsumer:
    conn: Connection
    group: str
    topic: str
    consumer: str
    generation: int | None = None
    assigned: list[int] = field(default_factory=list)
    positions: dict[int, int] = field(default_factory=dict)
    processed: list[tuple[int, int, str]] = field(default_factory=list)
    """(partition, offset, value) of every record handed to the application."""
    rejoins: int = 0

    def _member(self, command: str, extra: str = "") -> str:
        args = f"{self.group} {self.topic} {self.consumer} {self.generation}{extra}"
        return self.conn.call(command, args)

    def join(self) -> None:
        reply = self.conn.call("JOIN", f"{self.group} {self.topic} {self.consumer}")
        got = fields(reply)
        self.generation, self.assigned = int(got["generation"]), int_list(got["assigned"])
        for gone in [p for p in self.positions if p not in self.assigned]:
            del self.positions[gone]
        for p in self.assigned:
            if p not in self.positions:
                self.positions[p] = int(fields(self.conn.call("OFFSET", self._where(p)))["offset"])

    def _where(self, partition: int) -> str:
        return f"{self.group} {self.topic} {partition}"

    def _refused(self, reply: str) -> bool:
        """True (after joining again) when ``reply`` is GENERATION_MISMATCH."""
        status, rest = _status(reply)
        if status == "OK":
            return False
        if not rest.startswith("GENERATION_MISMATCH|"):
            raise V1Error(rest.split("|", 1)[0], rest)
        self.rejoins += 1
        self.join()
        return True

    def poll(self) -> int:
        """One round: read each owned partition from its position, hand the records on,
        commit, heartbeat; the number of records read."""
        if self.generation is None:
            self.join()
        read = 0
        for p in list(self.assigned):
            if p not in self.assigned:
                continue
            items, _hw = messages(
                self.conn.call("CONSUME", f"{self.topic} {p} {self.positions[p]}")
            )
            for offset, value in items:
                self.processed.append((p, offset, value))
                self.positions[p] = offset + 1
                read += 1
            for _ in range(ATTEMPTS):
                if p not in self.assigned:
                    break
                if not self._refused(self._member("COMMIT", f" {p} {self.positions[p]}")):
                    break
        for _ in range(ATTEMPTS):
            if not self._refused(self._member("HEARTBEAT")):
                break
        return read

    def leave(self) -> None:
        for _ in range(ATTEMPTS):
            if not self._refused(self._member("LEAVE")):
                return
