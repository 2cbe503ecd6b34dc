"""A small, deliberately faulty Cursus broker: a target the fuzzer did not grow up with.

Written from the Cursus protocol document with the standard library only (it imports
nothing from ``conformance``), so that ``conformance fuzz --target`` meets a broker no one
here wrote.  Frames are ``[u32 BE length][payload]`` up to 64 MiB; a longer prefix gets
``ERROR: FRAME_TOO_LARGE`` and a close.  A 0xBA7C payload is a batch, stored in memory
and answered with the JSON ack; text commands: ``CREATE t n`` (``OK topic=t
partitions=n``, or ``ERROR: TOPIC_EXISTS``), ``DELETE t``, ``LIST`` (a JSON array),
``CONSUME t p o`` (up to 100 messages from ``o`` in the batch layout).  Every other frame,
STREAM included, gets ``ERROR: <CODE> ...``; EOF or a half-close closes the connection.

Faults, each off unless its flag is given (given bare, a flag uses the example shown):

* ``--exit-on-batch-field NAME=VALUE`` (``message_count=-1``): a batch whose NAME
  (partition, acks, idempotent, seq_start, seq_end, message_count, or a message's epoch)
  is VALUE ends the process at once: ``fatal: batch field NAME=VALUE`` on stderr, exit 70.
* ``--stop-on TEXT`` (``list``, a command word the fuzzer lower-cased): after a payload
  starting with TEXT the broker stops serving: it still accepts connections but never
  reads, answers or closes one again (``stopped serving after TEXT`` on stderr), like a
  real server that stops after one unknown type byte.
* ``--stall-every N``: every N-th accepted connection is never read, answered or closed.
* ``--print-every-frame``: one line on stdout per frame received.

``python tests/support/faulty_cursus.py --port 0 [faults]`` prints ``serving cursus on
HOST:PORT`` once listening; SIGTERM ends it quietly.  Stalled and stopped connections
stay open until it exits.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import signal
import socket
import socketserver
import struct
import sys
import threading
from typing import Any

FRAME_LIMIT = 64 * 1024 * 1024
MAGIC = b"\xba\x7c"
MAX_POLL = 100
NUMBER = re.compile(r"-?[0-9]+", re.ASCII)
EXIT_CODE = 70
EXAMPLE_FIELD = "message_count=-1"
EXAMPLE_STOP = "list"


def layout(spec: str) -> list[tuple[str, str]]:
    return [(f.split(":")[0], f.split(":")[1]) for f in spec.split()]


# The batch layout (document, "Batch message format"), NAME:KIND in wire order: a struct
# code for a big-endian integer, "s" a u16-length string, "b" an i32-length byte string.
HEADER = layout(
    "magic:H topic:s partition:s acks:s idempotent:B seq_start:q seq_end:q message_count:i"
)
MESSAGE = layout(
    "offset:q seq_num:q producer_id:s key:s epoch:q payload:b event_type:s schema_version:i"
    " aggregate_version:q metadata:s"
)
EXIT_FIELDS = {"partition": "s", "acks": "s", "idempotent": "B", "seq_start": "q"}
EXIT_FIELDS |= {"seq_end": "q", "message_count": "i", "epoch": "q"}
ARITY = {"CREATE": 2, "DELETE": 1, "LIST": 0, "CONSUME": 3, "SUBSCRIBE": 2, "JOIN_GROUP": 3}
ARITY |= {"LEAVE_GROUP": 3, "STREAM": 3, "COMMIT": 4, "HEARTBEAT": 5, "BATCH_COMMIT": 5}
ARITY |= {"SYNC_GROUP": 4}


class Refused(Exception):
    """A request refused: the reply says ``ERROR: <code> <text>`` (or a JSON ack, for a batch)."""

    def __init__(self, code: str, text: str) -> None:
        super().__init__(f"{code} {text}")


def read_fields(data: bytes, pos: int, layout: Any) -> tuple[dict[str, Any], int]:
    out: dict[str, Any] = {}
    for name, kind in layout:
        fmt = {"s": ">H", "b": ">i"}.get(kind, ">" + kind)
        if pos + struct.calcsize(fmt) > len(data):
            raise Refused("MALFORMED_BATCH", f"the batch ends inside {name}")
        (value,) = struct.unpack_from(fmt, data, pos)
        pos += struct.calcsize(fmt)
        if kind in "sb":  # a length, then that many bytes
            if value < 0 or pos + value > len(data):
                raise Refused("MALFORMED_BATCH", f"{name} length {value} runs past the batch")
            value, pos = data[pos : pos + value], pos + value
        out[name] = value
    return out, pos


def write_fields(values: dict[str, Any], layout: Any) -> bytes:
    parts = []
    for name, kind in layout:
        v, fmt = values[name], {"s": ">H", "b": ">i"}.get(kind, ">" + kind)
        parts += [struct.pack(fmt, len(v)), v] if kind in "sb" else [struct.pack(fmt, v)]
    return b"".join(parts)


def number(text: str, what: str) -> int:
    if not NUMBER.fullmatch(text) or len(text) > 20 or not -(2**63) <= int(text) < 2**63:
        raise Refused("BAD_ARGUMENT", f"{what} {text[:40]!r} is not an int64")
    return int(text)


class Broker:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.lock = threading.Lock()
        self.topics: dict[str, list[list[dict[str, Any]]]] = {}
        self.stopped = threading.Event()
        self.frames = 0
        self.leader = ""
        self.exit_on: tuple[str, Any] | None = None
        if args.exit_on_batch_field:
            name, value = args.exit_on_batch_field
            kind = EXIT_FIELDS[name]
            self.exit_on = (name, value.encode() if kind == "s" else int(value))

    def answer(self, payload: bytes, peer: str) -> bytes | None:
        """The reply payload, or None once the broker has stopped serving."""
        with self.lock:
            self.frames += 1
            if self.args.print_every_frame:
                print(f"frame {self.frames} from {peer}: {len(payload)} bytes {payload[:60]!r}")
                sys.stdout.flush()
        stop = self.args.stop_on
        if stop is not None and payload.startswith(stop.encode()) and not self.stopped.is_set():
            self.stopped.set()
            sys.stderr.write(f"stopped serving after {stop}\n")
            sys.stderr.flush()
        if self.stopped.is_set():
            return None
        if payload[:2] == MAGIC:
            return self.produce(payload)
        try:
            return self.command(payload)
        except Refused as exc:
            return f"ERROR: {exc}".encode()

    def check_exit(self, fields: dict[str, Any]) -> None:
        if self.exit_on is not None and fields.get(self.exit_on[0], self) == self.exit_on[1]:
            name, value = self.args.exit_on_batch_field
            sys.stderr.write(f"fatal: batch field {name}={value}\n")
            sys.stderr.flush()
            os._exit(EXIT_CODE)

    def produce(self, payload: bytes) -> bytes:
        first: dict[str, Any] = {}
        head: dict[str, Any] = {}
        try:
            head, pos = read_fields(payload, 0, HEADER)
            self.check_exit(head)
            if head["message_count"] < 0:
                raise Refused("MALFORMED_BATCH", "messageCount is negative")
            messages = []
            for _ in range(head["message_count"]):
                message, pos = read_fields(payload, pos, MESSAGE)
                self.check_exit(message)
                messages.append(message)
                first = first or message
            if pos != len(payload):
                raise Refused("MALFORMED_BATCH", f"{len(payload) - pos} bytes after the batch")
            last = self.append(head, messages)
            status, error = "OK", ""
        except Refused as exc:
            status, last, error = "ERROR", -1, str(exc)
        ack = {
            "status": status,
            "last_offset": last,
            "producer_epoch": first.get("epoch", 0),
            "producer_id": first.get("producer_id", b"").decode("utf-8", "replace"),
            "seq_start": head.get("seq_start", 0),
            "seq_end": head.get("seq_end", 0),
            "leader": self.leader,
            "error": error,
        }
        return json.dumps(ack).encode()

    def partition(self, topic: str, text: str) -> list[dict[str, Any]]:
        """The log of a partition; the caller holds the lock."""
        if topic not in self.topics:
            raise Refused("UNKNOWN_TOPIC", f"no topic {topic[:60]!r}")
        logs, index = self.topics[topic], number(text, "partition")
        if not 0 <= index < len(logs):
            raise Refused("UNKNOWN_PARTITION", f"{topic[:60]!r} has no partition {index}")
        return logs[index]

    def append(self, head: dict[str, Any], messages: list[dict[str, Any]]) -> int:
        topic = head["topic"].decode("utf-8", "surrogateescape")  # no created name matches
        with self.lock:
            log = self.partition(topic, head["partition"].decode("ascii", "replace"))
            for message in messages:
                log.append({**message, "offset": len(log)})
            return len(log) - 1 if messages else -1

    def command(self, payload: bytes) -> bytes:
        try:
            word, *args = payload.decode("utf-8").split(" ")
        except UnicodeDecodeError:
            raise Refused("INVALID_UTF8", "the command is not UTF-8") from None
        if word not in ARITY:
            raise Refused("UNKNOWN_COMMAND", f"unknown command {word[:40]!r}")
        if len(args) != ARITY[word] or "" in args:
            raise Refused("BAD_ARGUMENTS", f"{word} takes {ARITY[word]} argument(s)")
        with self.lock:
            if word == "CREATE":
                return self.create(args[0], number(args[1], "partitions"))
            if word == "DELETE":
                self.partition(args[0], "0")  # UNKNOWN_TOPIC if it is not there
                del self.topics[args[0]]
                return f"OK topic={args[0]}".encode()
            if word == "LIST":
                return json.dumps(sorted(self.topics)).encode()
            if word == "CONSUME":
                return self.consume(args[0], args[1], number(args[2], "offset"))
        raise Refused("UNSUPPORTED", f"{word} is not served by this broker")

    def create(self, topic: str, count: int) -> bytes:
        if topic in self.topics:
            raise Refused("TOPIC_EXISTS", f"topic {topic[:60]!r} already exists")
        if not 1 <= count <= 1024 or len(topic.encode()) > 65535:
            raise Refused("BAD_ARGUMENT", "1 to 1024 partitions, a name under 64 KiB")
        self.topics[topic] = [[] for _ in range(count)]
        return f"OK topic={topic} partitions={count}".encode()

    def consume(self, topic: str, partition: str, offset: int) -> bytes:
        log = self.partition(topic, partition)
        if offset < 0:
            raise Refused("OFFSET_OUT_OF_RANGE", f"offset {offset} is below 0")
        body, size = [], 0
        for message in log[offset : offset + MAX_POLL]:
            encoded = write_fields(message, MESSAGE)
            if size + len(encoded) > FRAME_LIMIT - 65536 - 64:
                break
            body.append(encoded)
            size += len(encoded)
        index = str(number(partition, "partition")).encode()
        head = {"magic": 0xBA7C, "topic": topic.encode(), "partition": index}
        head |= {"acks": b"", "idempotent": 0, "seq_start": offset}
        head |= {"seq_end": offset + max(len(body) - 1, 0), "message_count": len(body)}
        return write_fields(head, HEADER) + b"".join(body)


class Handler(socketserver.BaseRequestHandler):
    server: Server

    def handle(self) -> None:
        broker, sock = self.server.broker, self.request
        peer = "{}:{}".format(*self.client_address)
        buf = bytearray()
        try:
            while not broker.stopped.is_set():
                data = sock.recv(65536)
                if broker.stopped.is_set():
                    break
                if not data:
                    return  # EOF or half-close: socketserver closes the connection
                buf += data
                while len(buf) >= 4 and not broker.stopped.is_set():
                    size = int.from_bytes(buf[:4], "big")
                    if size > FRAME_LIMIT:
                        reply = f"ERROR: FRAME_TOO_LARGE {size} > {FRAME_LIMIT}".encode()
                        sock.sendall(len(reply).to_bytes(4, "big") + reply)
                        return
                    if len(buf) < 4 + size:
                        break
                    reply = broker.answer(bytes(buf[4 : 4 + size]), peer)
                    del buf[: 4 + size]
                    if reply is not None and not broker.stopped.is_set():
                        sock.sendall(len(reply).to_bytes(4, "big") + reply)
        except OSError:
            return
        self.server.park(sock)  # stopped serving: never answer, never close


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
    block_on_close = False
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], broker: Broker, stall_every: int) -> None:
        super().__init__(address, Handler)
        self.broker, self.stall_every = broker, stall_every
        self.accepted = 0
        self.parked: set[socket.socket] = set()

    def park(self, sock: socket.socket) -> None:
        with self.broker.lock:
            self.parked.add(sock)

    def process_request(self, request: Any, client_address: Any) -> None:
        self.accepted += 1  # the accepting thread: counts in accept order
        if self.stall_every and self.accepted % self.stall_every == 0:
            self.park(request)  # never read, never answered, never closed
            return
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        if request not in self.parked:
            super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        sys.stderr.write(f"error on a connection from {client_address}: {exc!r}\n")


def field_value(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or name not in EXIT_FIELDS:
        raise argparse.ArgumentTypeError(f"NAME=VALUE with NAME one of {', '.join(EXIT_FIELDS)}")
    if EXIT_FIELDS[name] != "s" and not NUMBER.fullmatch(value):
        raise argparse.ArgumentTypeError(f"{name} takes an integer, not {value!r}")
    return name, value


def positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"a whole number >= 1, not {text!r}")
    return int(text)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=9000, help="0 picks a free port")
    p.add_argument(
        "--exit-on-batch-field",
        nargs="?",
        const=field_value(EXAMPLE_FIELD),
        type=field_value,
        metavar="NAME=VALUE",
        help=f"die (exit {EXIT_CODE}) on a batch with that field (bare: {EXAMPLE_FIELD})",
    )
    p.add_argument(
        "--stop-on",
        nargs="?",
        const=EXAMPLE_STOP,
        metavar="TEXT",
        help=f"stop serving after a payload starting with TEXT (bare: {EXAMPLE_STOP})",
    )
    p.add_argument("--stall-every", type=positive, default=0, metavar="N")
    p.add_argument("--print-every-frame", action="store_true")
    args = p.parse_args(argv)
    if args.stop_on == "":
        p.error("--stop-on needs a non-empty TEXT")
    broker = Broker(args)
    with contextlib.suppress(ValueError, OSError):  # parked connections each keep an fd
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    try:
        server = Server((args.host, args.port), broker, args.stall_every)
    except OSError as exc:
        p.exit(2, f"cannot listen on {args.host}:{args.port}: {exc}\n")
    host, port = server.server_address[:2]
    broker.leader = f"{host}:{port}"
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"serving cursus on {host}:{port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
