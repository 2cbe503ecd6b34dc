"""A V1 line broker that behaves as the real Go broker does: a target the suite never met.

Written from the facts recorded in conformance/protocols/v1line/FACTS.md (what the real broker
``srajandev98/distributed-real-time-event-streaming`` does, read from its source), with the
standard library only: it imports nothing from ``conformance``.  The real broker cannot be
installed here (Go, not on PyPI), so this is the closest independent peer: where FACTS.md
says the real broker does X, this does X, including what SPEC.md's ``real`` revision calls a
MAY or a flaw:

* the line is trimmed, split into at most four ``|`` parts, the command upper-cased, the args
  split on runs of whitespace; every parse error is ``V1|0|ERR|BAD_REQUEST|...``; a line of
  65536 bytes or more ends the connection (a Go scanner's 64 KiB buffer must hold the line
  and its newline);
* there is no PING: it is ``UNKNOWN_COMMAND`` with the request's correlation id (the suite's
  ``real`` revision, like the real broker, has no PING either: V1L-PING-3);
* the ISR is printed in an arbitrary order (Go map order), the leader first;
* a follower is in the ISR only while it is fully caught up and has reported within the lag
  timeout (max lag 0), so hw is always the leader's last offset;
* a new group starts at generation 1 and its first member's JOIN makes it 2; a JOIN naming
  another topic drops every member;
* COMMIT stores any integer, OFFSET of nothing is 0;
* ``--data-dir``: groups.json and offsets.json are rewritten in place, no temporary file;
* ``--panic-on-negative-offset``: CONSUME with a negative offset on a non-empty partition ends
  the process (exit 2, ``panic: runtime error: slice bounds out of range``), as the real
  broker's negative slice index would.  Off by default, so that a suite run can go on.

``python tests/support/gostyle_v1line.py --port 0 [--ack-timeout-ms N] [--lag-timeout-ms N]
[--session-timeout-ms N] [--min-isr N] [--data-dir D] [--panic-on-negative-offset]`` prints
``serving v1line on HOST:PORT`` once listening; SIGTERM ends it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socketserver
import sys
import threading
import time
from dataclasses import dataclass, field

LINE_LIMIT = 64 * 1024
PARTITIONS = 3


class Err(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def bad(message: str) -> Err:
    return Err("BAD_REQUEST", message)


def atoi(text: str, name: str) -> int:
    """Go's strconv.Atoi: an optional sign, ASCII digits, within int64; else an error."""
    body = text[1:] if text[:1] in "+-" else text
    if not body.isdigit() or not body.isascii() or len(body.lstrip("0")) > 19:
        raise bad(f"invalid {name}")
    value = int(body.lstrip("0") or "0") * (-1 if text.startswith("-") else 1)
    if not -(2**63) <= value < 2**63:
        raise bad(f"invalid {name}")
    return value


def fnv1a(data: bytes) -> int:
    h = 2166136261
    for b in data:
        h = ((h ^ b) * 16777619) % 2**32
    return h


def golist(items: list[int]) -> str:
    return "[" + " ".join(str(i) for i in items) + "]"


@dataclass
class Partition:
    values: list[str] = field(default_factory=list)
    role: str = "leader"
    followers: dict[int, tuple[int, float]] = field(default_factory=dict)  # id -> offset, seen


@dataclass
class Group:
    topic: str
    generation: int = 1
    assignor: str = "round_robin"
    seen: dict[str, float] = field(default_factory=dict)


class Broker:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.lock = threading.Condition()
        self.topics: dict[str, list[Partition]] = {}
        self.groups: dict[str, Group] = {}
        self.offsets: dict[str, dict[str, dict[str, int]]] = {}

    # ------------------------------------------------------------- replication

    def part(self, topic: str, partition: int) -> Partition:
        parts = self.topics.setdefault(topic, [Partition() for _ in range(PARTITIONS)])
        if not 0 <= partition < len(parts):
            raise bad("invalid partition")
        return parts[partition]

    def isr(self, p: Partition) -> list[int]:
        last, now = len(p.values) - 1, time.monotonic()
        lag = self.args.lag_timeout_ms / 1000
        inside = [r for r, (off, seen) in p.followers.items() if now - seen <= lag and off >= last]
        random.shuffle(inside)  # Go map order
        return [0, *inside]

    def hw(self, p: Partition) -> int:
        last = len(p.values) - 1
        offs = [p.followers[r][0] for r in self.isr(p)[1:]]
        return min([last, *offs])

    # ------------------------------------------------------------------ groups

    def expire(self, g: Group) -> None:
        now, limit = time.monotonic(), self.args.session_timeout_ms / 1000
        gone = [c for c, seen in g.seen.items() if now - seen > limit]
        if gone:
            for c in gone:
                del g.seen[c]
            g.generation += 1

    def assignment(self, g: Group, consumer: str) -> list[int]:
        members = sorted(g.seen)
        n = len(members)
        if consumer not in members:
            return []
        i = members.index(consumer)
        if g.assignor == "range":
            each, extra = divmod(PARTITIONS, n)
            start = i * each + min(i, extra)
            return list(range(start, start + each + (1 if i < extra else 0)))
        return [p for p in range(PARTITIONS) if p % n == i]

    def member(self, args: list[str]) -> tuple[Group, str]:
        group, _topic, consumer, gen_text = args[:4]
        generation = atoi(gen_text, "generation")
        for text, name in zip(args[4:], ("partition", "offset"), strict=False):
            atoi(text, name)  # every number is read before the group is looked at
        g = self.groups.get(group)
        if g is None:
            raise Err("GENERATION_MISMATCH", "group not found")
        self.expire(g)
        if consumer not in g.seen:
            raise Err("GENERATION_MISMATCH", "unknown member")
        if generation != g.generation:
            raise Err("GENERATION_MISMATCH", "stale generation")
        return g, consumer

    def save(self) -> None:
        if not self.args.data_dir:
            return
        groups = {
            name: {
                "topic": g.topic,
                "generation": g.generation,
                "assignor": g.assignor,
                "member_order": sorted(g.seen),
                "assignments": {c: self.assignment(g, c) for c in sorted(g.seen)},
                "members": [{"consumer_id": c, "last_heartbeat_unix_ms": 0} for c in g.seen],
            }
            for name, g in self.groups.items()
        }
        for name, doc in (("groups.json", groups), ("offsets.json", self.offsets)):
            with open(
                os.path.join(self.args.data_dir, name), "w"
            ) as f:  # in place, as the real one
                json.dump(doc, f)

    # ---------------------------------------------------------------- commands

    def handle(self, line: str) -> str | None:
        parts = [s.strip() for s in line.strip().split("|", 3)]
        if len(parts) < 4:
            return "V1|0|ERR|BAD_REQUEST|expected format V1|<correlation_id>|<command>|<args>"
        version, cid, command, rest = parts
        for wrong, message in (
            (version != "V1", "unsupported version"),
            (not cid, "correlation id required"),
            (not command, "command required"),
        ):
            if wrong:
                return f"V1|0|ERR|BAD_REQUEST|{message}"
        try:
            with self.lock:
                payload = self.command(command.upper(), rest.split())
        except Err as e:
            return f"V1|{cid}|ERR|{e.code}|{e.message}"
        return f"V1|{cid}|OK" + (f"|{payload}" if payload else "")

    def command(self, name: str, args: list[str]) -> str:
        usage = {
            "PRODUCE": (2, 3, "<topic> <key>:<value> [acks=0|1|all]"),
            "CONSUME": (3, 3, "<topic> <partition> <offset>"),
            "JOIN": (3, 4, "<group> <topic> <consumer_id> [assignor=round_robin|range]"),
            "SYNC": (4, 4, "<group> <topic> <consumer_id> <generation>"),
            "HEARTBEAT": (4, 4, "<group> <topic> <consumer_id> <generation>"),
            "LEAVE": (4, 4, "<group> <topic> <consumer_id> <generation>"),
            "COMMIT": (6, 6, "<group> <topic> <consumer_id> <generation> <partition> <offset>"),
            "OFFSET": (3, 3, "<group> <topic> <partition>"),
            "REPLICA_FETCH": (4, 4, "<topic> <partition> <replica_id> <offset>"),
            "SET_PARTITION_ROLE": (3, 3, "<topic> <partition> <leader|follower>"),
        }
        if name not in usage:
            raise Err("UNKNOWN_COMMAND", "unsupported command")
        least, most, text = usage[name]
        if not least <= len(args) <= most:
            raise bad(f"{name} requires: {text}")
        return str(getattr(self, name.lower())(args))

    def produce(self, args: list[str]) -> str:
        topic, message = args[0], args[1]
        key, sep, value = message.partition(":")
        if not sep:
            raise bad("message must be key:value")
        acks = "1"
        if len(args) == 3:
            k, _, v = args[2].partition("=")
            if k.lower() != "acks" or v.lower() not in ("0", "1", "all"):
                raise bad("invalid ack mode; expected acks=0|1|all")
            acks = v.lower()
        partition = fnv1a(key.encode()) % PARTITIONS
        p = self.part(topic, partition)
        if p.role != "leader":
            raise Err("NOT_LEADER", "partition leader unavailable on this broker")
        p.values.append(value)
        offset = len(p.values) - 1
        if acks == "all":
            end = time.monotonic() + self.args.ack_timeout_ms / 1000
            while not (self.hw(p) >= offset and len(self.isr(p)) >= self.args.min_isr):
                if time.monotonic() >= end:
                    raise Err("REPLICATION_TIMEOUT", "acks=all timeout")
                self.lock.wait(0.01)
        return f"partition={partition} offset={offset} hw={self.hw(p)}"

    def consume(self, args: list[str]) -> str:
        topic = args[0]
        partition, offset = atoi(args[1], "partition"), atoi(args[2], "offset")
        if topic not in self.topics:
            return "messages= hw=-1"
        p = self.part(topic, partition)
        hw = self.hw(p)
        if hw < 0 or offset > hw:
            return f"messages= hw={hw}"
        if offset < 0 and self.args.panic_on_negative_offset:
            print("panic: runtime error: slice bounds out of range", file=sys.stderr, flush=True)
            os._exit(2)
        items = ",".join(f"{o}:{p.values[o]}" for o in range(max(offset, 0), hw + 1))
        return f"messages={items} hw={hw}"

    def join(self, args: list[str]) -> str:
        group, topic, consumer = args[:3]
        assignor = None
        if len(args) == 4:
            k, _, v = args[3].partition("=")
            if k.lower() != "assignor" or v.lower() not in ("round_robin", "range"):
                raise bad("invalid assignor; expected assignor=round_robin|range")
            assignor = v.lower()
        g = self.groups.setdefault(group, Group(topic))
        self.expire(g)
        if g.topic != topic:
            g.topic, g.seen = topic, {}
            g.generation += 1
        if assignor is not None and assignor != g.assignor:
            g.assignor = assignor
            g.generation += 1
        if consumer not in g.seen:
            g.generation += 1
        g.seen[consumer] = time.monotonic()
        self.save()
        return f"generation={g.generation} assigned={golist(self.assignment(g, consumer))}"

    def sync(self, args: list[str]) -> str:
        g, consumer = self.member(args)
        g.seen[consumer] = time.monotonic()
        self.save()
        return f"generation={g.generation} assigned={golist(self.assignment(g, consumer))}"

    def heartbeat(self, args: list[str]) -> str:
        g, consumer = self.member(args)
        g.seen[consumer] = time.monotonic()
        self.save()
        return "heartbeat=ok"

    def leave(self, args: list[str]) -> str:
        g, consumer = self.member(args)
        del g.seen[consumer]
        g.generation += 1
        self.save()
        return "left=true"

    def commit(self, args: list[str]) -> str:
        g, consumer = self.member(args)
        partition, offset = atoi(args[4], "partition"), atoi(args[5], "offset")
        if partition not in self.assignment(g, consumer):
            raise Err("GENERATION_MISMATCH", "partition not assigned to member")
        self.offsets.setdefault(args[0], {}).setdefault(args[1], {})[str(partition)] = offset
        self.save()
        return "committed=true"

    def offset(self, args: list[str]) -> str:
        partition = atoi(args[2], "partition")
        return f"offset={self.offsets.get(args[0], {}).get(args[1], {}).get(str(partition), 0)}"

    def replica_fetch(self, args: list[str]) -> str:
        partition = atoi(args[1], "partition")
        replica, offset = atoi(args[2], "replica_id"), atoi(args[3], "offset")
        if not 1 <= replica < self.args.replication_factor:
            raise bad("invalid replica id")
        p = self.part(args[0], partition)
        if p.role != "leader":
            raise bad("partition is not leader")
        last = len(p.values) - 1
        before = p.followers.get(replica, (-1, 0.0))[0]
        p.followers[replica] = (max(before, min(offset, last)), time.monotonic())
        self.lock.notify_all()
        isr = self.isr(p)
        under = "true" if len(isr) < self.args.min_isr else "false"
        return (
            f"replica={replica} acked_offset={offset} hw={self.hw(p)} isr={golist(isr)} "
            f"under_replicated={under}"
        )

    def set_partition_role(self, args: list[str]) -> str:
        partition, role = atoi(args[1], "partition"), args[2].lower()
        if role not in ("leader", "follower"):
            raise bad("invalid role")
        p = self.part(args[0], partition)
        p.role = role
        return f"topic={args[0]} partition={partition} role={role} hw={self.hw(p)}"


class Handler(socketserver.StreamRequestHandler):
    server: Server

    def handle(self) -> None:
        try:
            self._serve()
        except OSError:
            return  # the client went away (a reset): Go's reader just ends, printing nothing

    def _serve(self) -> None:
        while True:
            line = self.rfile.readline(LINE_LIMIT + 1)
            if not line:
                return
            if len(line.removesuffix(b"\n")) >= LINE_LIMIT:
                return  # the scanner's buffer (64 KiB) holds no line and its newline: it ends
            reply = self.server.broker.handle(line.decode("utf-8", "replace"))
            if reply is not None:
                self.wfile.write(reply.encode() + b"\n")
                self.wfile.flush()


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024  # Go listens with the system's backlog, not socketserver's 5

    def __init__(self, port: int, broker: Broker) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        self.broker = broker


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--ack-timeout-ms", type=int, default=2000)
    parser.add_argument("--lag-timeout-ms", type=int, default=10_000)
    parser.add_argument("--session-timeout-ms", type=int, default=10_000)
    parser.add_argument("--min-isr", type=int, default=2)
    parser.add_argument("--replication-factor", type=int, default=3)
    parser.add_argument("--data-dir")
    parser.add_argument("--panic-on-negative-offset", action="store_true")
    args = parser.parse_args()
    server = Server(args.port, Broker(args))
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    host, port = server.server_address[:2]
    print(f"serving v1line on {host!s}:{port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
