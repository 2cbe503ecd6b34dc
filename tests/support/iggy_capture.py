"""A loopback recorder for Apache Iggy's classic binary TCP protocol, to capture the bytes the
real ``apache-iggy==0.8.0`` Python client sends.

:class:`Recorder` listens on 127.0.0.1 (port 0: the system picks one), deframes each classic
request ``[u32 len = 4 + payload][u32 code][payload]`` (little-endian), records it whole, in
order, with the client call that sent it, and answers ``[u32 status = 0][u32 len][payload]``
with a payload of the layout the client decodes for that command.  The answers come from a
small in-memory model (streams, topics with partitions, messages, consumer offsets, consumer
groups), enough for the client to go on; they are not the reference broker and claim nothing
about conformance.  The layouts were read in the Rust SDK the 0.8 binding is built from
(``apache/iggy`` at tag ``python-sdk-0.8.0``, ``core/binary_protocol/src/responses/`` and
``core/common/src/types/message/polled_messages.rs``) and confirmed by the client accepting them.

Every read has a deadline (``READ_DEADLINE_S``), a frame is at most ``MAX_FRAME`` bytes and a
connection at most ``MAX_FRAMES`` frames; an unknown code is answered with status 3
(InvalidCommand) and recorded like any other.

Run as a program, it drives the real client through a session and writes each captured request
to ``DIR/<n>-<command>.yaml``::

    .venv/bin/python -m tests.support.iggy_capture --out tests/iggy/captured
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import socket
import struct
import sys
import threading
import time
from collections.abc import Awaitable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.loopback import LoopbackServer

CLIENT = "apache-iggy==0.8.0"
SDK_SOURCE = "apache/iggy@python-sdk-0.8.0 (f5350d999d883fd3ca9dd33b3dc2754ddb0df049)"
READ_DEADLINE_S = 10.0
CALL_DEADLINE_S = 10.0
SESSION_DEADLINE_S = 120.0
MAX_FRAME = 16 * 1024 * 1024
MAX_FRAMES = 10_000
STATUS_OK = 0
STATUS_INVALID_COMMAND = 3
# The model's server-side clock: message timestamps (microseconds) are BASE_TS + offset * 1000
# in every partition, so a Timestamp poll can ask for a fixed value and the capture repeats.
BASE_TS = 1_700_000_000_000_000
CREATED_AT = 1_700_000_000_000_000

COMMANDS: dict[int, str] = {
    1: "ping",
    10: "get_stats",
    11: "get_snapshot_file",
    12: "get_cluster_metadata",
    20: "get_me",
    21: "get_client",
    22: "get_clients",
    31: "get_user",
    32: "get_users",
    33: "create_user",
    34: "delete_user",
    35: "update_user",
    36: "update_permissions",
    37: "change_password",
    38: "login_user",
    39: "logout_user",
    41: "get_personal_access_tokens",
    42: "create_personal_access_token",
    43: "delete_personal_access_token",
    44: "login_with_personal_access_token",
    100: "poll_messages",
    101: "send_messages",
    102: "flush_unsaved_buffer",
    120: "get_consumer_offset",
    121: "store_consumer_offset",
    122: "delete_consumer_offset",
    200: "get_stream",
    201: "get_streams",
    202: "create_stream",
    203: "delete_stream",
    204: "update_stream",
    205: "purge_stream",
    300: "get_topic",
    301: "get_topics",
    302: "create_topic",
    303: "delete_topic",
    304: "update_topic",
    305: "purge_topic",
    402: "create_partitions",
    403: "delete_partitions",
    503: "delete_segments",
    600: "get_consumer_group",
    601: "get_consumer_groups",
    602: "create_consumer_group",
    603: "delete_consumer_group",
    604: "join_consumer_group",
    605: "leave_consumer_group",
}

MESSAGE_HEADER = struct.Struct("<QQQQQQIIQ")  # checksum, id (lo, hi), offset, ts, origin, h, p, r
MESSAGE_HEADER_SIZE = 64
INDEX_SIZE = 16


@dataclass(frozen=True)
class Request:
    """One whole request frame as the client sent it (its length prefix included)."""

    order: int
    connection: int
    code: int
    frame: bytes
    call: str

    @property
    def command(self) -> str:
        return COMMANDS.get(self.code, f"code_{self.code}")

    @property
    def payload(self) -> bytes:
        return self.frame[8:]


# --------------------------------------------------------------------------- wire helpers


class Malformed(Exception):
    """A request the model cannot read (answered with status 3)."""


class Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise Malformed(f"needs {n} bytes at {self.pos}, has {len(self.data) - self.pos}")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def u8(self) -> int:
        return self.take(1)[0]

    def u32(self) -> int:
        return int(struct.unpack("<I", self.take(4))[0])

    def u64(self) -> int:
        return int(struct.unpack("<Q", self.take(8))[0])

    def identifier(self) -> int | str:
        kind, length = self.u8(), self.u8()
        value = self.take(length)
        if kind == 1 and length == 4:
            return int(struct.unpack("<I", value)[0])
        if kind == 2:
            return value.decode()
        raise Malformed(f"identifier kind {kind} length {length}")

    def optional_partition(self) -> int | None:
        flag, value = self.u8(), self.u32()
        return value if flag == 1 else None


def name_bytes(name: str) -> bytes:
    raw = name.encode()
    return bytes([len(raw)]) + raw


# --------------------------------------------------------------------------- the model


@dataclass
class Message:
    offset: int
    id: int
    timestamp: int
    origin_timestamp: int
    payload: bytes
    headers: bytes


@dataclass
class Group:
    id: int
    name: str
    members: list[int] = field(default_factory=list)


@dataclass
class Topic:
    id: int
    name: str
    partitions: list[list[Message]]
    compression: int = 1
    message_expiry: int = 0
    max_topic_size: int = 0
    replication_factor: int = 1
    groups: list[Group] = field(default_factory=list)
    offsets: dict[tuple[int, int | str, int], int] = field(default_factory=dict)
    """Stored offsets by (consumer kind, consumer id, partition id)."""

    def messages_count(self) -> int:
        return sum(len(p) for p in self.partitions)

    def size_bytes(self) -> int:
        return sum(MESSAGE_HEADER_SIZE + len(m.payload) for p in self.partitions for m in p)

    def header(self) -> bytes:
        return struct.pack(
            "<IQIQBQBQQ",
            self.id,
            CREATED_AT,
            len(self.partitions),
            self.message_expiry,
            self.compression,
            self.max_topic_size,
            self.replication_factor,
            self.size_bytes(),
            self.messages_count(),
        ) + name_bytes(self.name)

    def details(self) -> bytes:
        out = self.header()
        for pid, msgs in enumerate(self.partitions):
            size = sum(MESSAGE_HEADER_SIZE + len(m.payload) for m in msgs)
            out += struct.pack(
                "<IQIQQQ", pid, CREATED_AT, 1, max(len(msgs) - 1, 0), size, len(msgs)
            )
        return out


@dataclass
class Stream:
    id: int
    name: str
    topics: list[Topic] = field(default_factory=list)

    def details(self) -> bytes:
        size = sum(t.size_bytes() for t in self.topics)
        count = sum(t.messages_count() for t in self.topics)
        out = struct.pack("<IQIQQ", self.id, CREATED_AT, len(self.topics), size, count)
        out += name_bytes(self.name)
        return out + b"".join(t.header() for t in self.topics)


def _find(items: list[Any], ident: int | str) -> Any:
    for item in items:
        if item.id == ident or item.name == ident:
            return item
    return None


class Model:
    """Just enough of a broker for the client to go on; ``None`` from a handler = not found."""

    def __init__(self, port: int = 0) -> None:
        self.port = port
        self.streams: list[Stream] = []
        self.lock = threading.Lock()

    def answer(self, code: int, payload: bytes, client_id: int) -> tuple[int, bytes]:
        handler = getattr(self, f"_{COMMANDS.get(code, '')}", None)
        if handler is None:
            return STATUS_INVALID_COMMAND, b""
        with self.lock:
            try:
                return handler(Reader(payload), client_id)  # type: ignore[no-any-return]
            except Malformed:
                return STATUS_INVALID_COMMAND, b""

    def _topic(self, r: Reader) -> tuple[Stream | None, Topic | None]:
        stream = _find(self.streams, r.identifier())
        topic_id = r.identifier()
        return stream, (_find(stream.topics, topic_id) if stream else None)

    # system and users
    def _ping(self, r: Reader, cid: int) -> tuple[int, bytes]:
        return STATUS_OK, b""

    def _login_user(self, r: Reader, cid: int) -> tuple[int, bytes]:
        username = r.take(r.u8()).decode()
        password = r.take(r.u8()).decode()
        if (username, password) != ("iggy", "iggy"):
            return 42, b""  # InvalidCredentials
        return STATUS_OK, struct.pack("<I", 0)  # the user id (the root user is 0)

    def _get_cluster_metadata(self, r: Reader, cid: int) -> tuple[int, bytes]:
        # One healthy leader (role 0, status 0): the client sees a single node, no redirect.
        def text(value: str) -> bytes:
            return struct.pack("<I", len(value)) + value.encode()

        node = text("recorder") + text("127.0.0.1")
        node += struct.pack("<HHHHBB", self.port, 0, 0, 0, 0, 0)
        return STATUS_OK, text("iggy-capture") + struct.pack("<I", 1) + node

    def _logout_user(self, r: Reader, cid: int) -> tuple[int, bytes]:
        return STATUS_OK, b""

    # streams and topics
    def _create_stream(self, r: Reader, cid: int) -> tuple[int, bytes]:
        name = r.take(r.u8()).decode()
        if _find(self.streams, name):
            return 1012, b""  # StreamNameAlreadyExists
        stream = Stream(len(self.streams), name)
        self.streams.append(stream)
        return STATUS_OK, stream.details()

    def _get_stream(self, r: Reader, cid: int) -> tuple[int, bytes]:
        stream = _find(self.streams, r.identifier())
        return STATUS_OK, stream.details() if stream else b""

    def _get_streams(self, r: Reader, cid: int) -> tuple[int, bytes]:
        return STATUS_OK, b"".join(s.details()[: 33 + len(s.name)] for s in self.streams)

    def _create_topic(self, r: Reader, cid: int) -> tuple[int, bytes]:
        stream = _find(self.streams, r.identifier())
        partitions, compression = r.u32(), r.u8()
        expiry, max_size, replication = r.u64(), r.u64(), r.u8()
        name = r.take(r.u8()).decode()
        if stream is None:
            return 1009, b""  # StreamIdNotFound
        topic = Topic(len(stream.topics), name, [[] for _ in range(partitions)])
        topic.compression, topic.message_expiry = compression, expiry
        topic.max_topic_size, topic.replication_factor = max_size, replication or 1
        stream.topics.append(topic)
        return STATUS_OK, topic.details()

    def _get_topic(self, r: Reader, cid: int) -> tuple[int, bytes]:
        _, topic = self._topic(r)
        return STATUS_OK, topic.details() if topic else b""

    def _get_topics(self, r: Reader, cid: int) -> tuple[int, bytes]:
        stream = _find(self.streams, r.identifier())
        return STATUS_OK, b"".join(t.header() for t in stream.topics) if stream else b""

    # messages
    def _send_messages(self, r: Reader, cid: int) -> tuple[int, bytes]:
        r.u32()  # metadata length
        _, topic = self._topic(r)
        kind, length = r.u8(), r.u8()
        value = r.take(length)
        count = r.u32()
        r.take(count * INDEX_SIZE)
        if topic is None:
            return 2010, b""  # TopicIdNotFound
        if kind == 2:
            pid = int(struct.unpack("<I", value)[0])
        elif kind == 3:
            pid = sum(value) % len(topic.partitions)
        else:
            pid = 0
        if pid >= len(topic.partitions):
            return 3007, b""  # PartitionNotFound
        part = topic.partitions[pid]
        for _ in range(count):
            _, lo, hi, _, _, origin, hlen, plen, _ = MESSAGE_HEADER.unpack(r.take(64))
            payload = r.take(plen)
            headers = r.take(hlen)
            off = len(part)
            part.append(Message(off, lo | hi << 64, BASE_TS + off * 1000, origin, payload, headers))
        return STATUS_OK, b""

    def _poll_messages(self, r: Reader, cid: int) -> tuple[int, bytes]:
        ckind, cident = r.u8(), r.identifier()
        _, topic = self._topic(r)
        pid = r.optional_partition()
        strategy, value = r.u8(), r.u64()
        count, auto_commit = r.u32(), r.u8()
        if topic is None:
            return 2010, b""
        if pid is None:  # a group member without a partition: its first assigned one
            pid = 0
        if pid >= len(topic.partitions):
            return 3007, b""
        part = topic.partitions[pid]
        key = (ckind, cident, pid)
        if strategy == 1:
            picked = [m for m in part if m.offset >= value]
        elif strategy == 2:
            picked = [m for m in part if m.timestamp >= value]
        elif strategy == 3:
            picked = list(part)
        elif strategy == 4:
            picked = part[-count:] if count else []
        elif strategy == 5:
            start = topic.offsets[key] + 1 if key in topic.offsets else 0
            picked = [m for m in part if m.offset >= start]
        else:
            return STATUS_INVALID_COMMAND, b""
        picked = picked[:count]
        if auto_commit and picked:
            topic.offsets[key] = picked[-1].offset
        out = struct.pack("<IQI", pid, max(len(part) - 1, 0), len(picked))
        for m in picked:
            out += MESSAGE_HEADER.pack(
                0,
                m.id & (2**64 - 1),
                m.id >> 64,
                m.offset,
                m.timestamp,
                m.origin_timestamp,
                len(m.headers),
                len(m.payload),
                0,
            )
            out += m.payload + m.headers
        return STATUS_OK, out

    # consumer offsets
    def _offset_key(self, r: Reader) -> tuple[Topic | None, tuple[int, int | str, int]]:
        ckind, cident = r.u8(), r.identifier()
        _, topic = self._topic(r)
        pid = r.optional_partition()
        return topic, (ckind, cident, 0 if pid is None else pid)

    def _store_consumer_offset(self, r: Reader, cid: int) -> tuple[int, bytes]:
        topic, key = self._offset_key(r)
        offset = r.u64()
        if topic is None:
            return 2010, b""
        topic.offsets[key] = offset
        return STATUS_OK, b""

    def _get_consumer_offset(self, r: Reader, cid: int) -> tuple[int, bytes]:
        topic, key = self._offset_key(r)
        if topic is None or key not in topic.offsets:
            return STATUS_OK, b""
        current = max(len(topic.partitions[key[2]]) - 1, 0)
        return STATUS_OK, struct.pack("<IQQ", key[2], current, topic.offsets[key])

    def _delete_consumer_offset(self, r: Reader, cid: int) -> tuple[int, bytes]:
        topic, key = self._offset_key(r)
        if topic is not None:
            topic.offsets.pop(key, None)
        return STATUS_OK, b""

    # consumer groups
    def _group_details(self, topic: Topic, group: Group) -> bytes:
        out = struct.pack("<III", group.id, len(topic.partitions), len(group.members))
        out += name_bytes(group.name)
        n = max(len(group.members), 1)
        for i, member in enumerate(group.members):
            mine = [p for p in range(len(topic.partitions)) if p % n == i]
            out += struct.pack(f"<II{len(mine)}I", member, len(mine), *mine)
        return out

    def _create_consumer_group(self, r: Reader, cid: int) -> tuple[int, bytes]:
        _, topic = self._topic(r)
        name = r.take(r.u8()).decode()
        if topic is None:
            return 2010, b""
        if _find(topic.groups, name):
            return 5004, b""  # ConsumerGroupNameAlreadyExists
        group = Group(len(topic.groups), name)
        topic.groups.append(group)
        return STATUS_OK, self._group_details(topic, group)

    def _get_consumer_group(self, r: Reader, cid: int) -> tuple[int, bytes]:
        _, topic = self._topic(r)
        group = _find(topic.groups, r.identifier()) if topic else None
        return STATUS_OK, self._group_details(topic, group) if topic and group else b""

    def _get_consumer_groups(self, r: Reader, cid: int) -> tuple[int, bytes]:
        _, topic = self._topic(r)
        if topic is None:
            return STATUS_OK, b""
        return STATUS_OK, b"".join(
            struct.pack("<III", g.id, len(topic.partitions), len(g.members)) + name_bytes(g.name)
            for g in topic.groups
        )

    def _join_consumer_group(self, r: Reader, cid: int) -> tuple[int, bytes]:
        _, topic = self._topic(r)
        group = _find(topic.groups, r.identifier()) if topic else None
        if group is None:
            return 5000, b""  # ConsumerGroupIdNotFound
        if cid not in group.members:
            group.members.append(cid)
        return STATUS_OK, b""

    def _leave_consumer_group(self, r: Reader, cid: int) -> tuple[int, bytes]:
        _, topic = self._topic(r)
        group = _find(topic.groups, r.identifier()) if topic else None
        if group is not None and cid in group.members:
            group.members.remove(cid)
        return STATUS_OK, b""


# --------------------------------------------------------------------------- the recorder


@dataclass
class Recorder(LoopbackServer):
    """A loopback server; ``requests`` grows as frames arrive, labelled with ``call``."""

    host: str = "127.0.0.1"
    port: int = 0
    requests: list[Request] = field(default_factory=list)
    call: str = ""
    """The client call under way (set by :meth:`calling`); each request is labelled with it."""

    def __post_init__(self) -> None:
        self.model = Model()
        self.init_server()
        self.errors: list[str] = []

    def start(self) -> tuple[str, int]:
        address = super().start()
        self.model.port = self.port
        return address

    @contextlib.contextmanager
    def calling(self, call: str) -> Iterator[None]:
        self.call = call
        try:
            yield
        finally:
            self.call = ""

    def accepted(self, conn: socket.socket) -> None:
        conn.settimeout(READ_DEADLINE_S)
        self.spawn(self._serve, self.track(conn), conn)

    def _read(self, conn: socket.socket, n: int) -> bytes | None:
        """Exactly ``n`` bytes, or ``None`` at a close; each recv has READ_DEADLINE_S."""
        buf = bytearray()
        while len(buf) < n:
            try:
                chunk = conn.recv(n - len(buf))
            except TimeoutError:
                if self.stopping:
                    return None
                continue  # an idle client between calls; the stop flag ends the wait
            except OSError:
                return None
            if not chunk:
                return None
            buf += chunk
        return bytes(buf)

    def _serve(self, number: int, conn: socket.socket) -> None:
        try:
            for _ in range(MAX_FRAMES):
                head = self._read(conn, 8)
                if head is None:
                    return
                length, code = struct.unpack("<II", head)
                if length < 4 or length > MAX_FRAME:
                    self.errors.append(f"connection {number}: frame length {length}")
                    return
                payload = self._read(conn, length - 4)
                if payload is None:
                    return
                with self._lock:
                    self.requests.append(
                        Request(len(self.requests) + 1, number, code, head + payload, self.call)
                    )
                status, body = self.model.answer(code, payload, number)
                conn.sendall(struct.pack("<II", status, len(body)) + body)
        except OSError:
            return
        finally:
            with contextlib.suppress(OSError):
                conn.close()


# --------------------------------------------------------------------------- the session


STREAM = "conformance"
TOPIC = "orders"
GROUP = "capture-group"
PAYLOADS = {0: [b"p0-m0", b"p0-m1"], 1: [b"p1-m0"], 2: [b"p2-m0", b"p2-m1", b"p2-m2"]}
TIMESTAMP_ASKED = BASE_TS + 1000  # the second message of a partition onward


@dataclass
class Step:
    call: str
    ok: bool
    result: str


async def _run(recorder: Recorder, steps: list[Step], call: str, coro: Awaitable[Any]) -> Any:
    """Await one client call under a deadline; a call whose label says "refused" must fail."""
    refused = "refused" in call
    # A recorder that let one call wait out its deadline would let the others: after a
    # timeout, each call gets a short one (the session stays well inside SESSION_DEADLINE_S).
    timed_out = any(s.result.startswith("TimeoutError") for s in steps)
    with recorder.calling(call):
        try:
            result = await asyncio.wait_for(coro, 1.0 if timed_out else CALL_DEADLINE_S)
        except Exception as exc:  # the client's error, or the deadline
            steps.append(Step(call, refused, f"{type(exc).__name__}: {exc}"))
            return None
        finally:
            await asyncio.sleep(0.02)  # let a trailing frame land under this label
    steps.append(Step(call, not refused, _shown(result)))
    return result


def _shown(result: Any) -> str:
    if isinstance(result, list):
        return "[" + ", ".join(_shown(r) for r in result) + "]"
    if hasattr(result, "payload") and hasattr(result, "offset"):
        return f"(offset {result.offset()}, {result.payload()!r})"
    if hasattr(result, "name") and hasattr(result, "id") and not callable(result.id):
        return f"{type(result).__name__}(id={result.id}, name={result.name!r})"
    return repr(result)


async def session(recorder: Recorder, full: bool = True) -> list[Step]:
    """Drive the real client against ``recorder``; each call is labelled and bounded."""
    import apache_iggy as iggy

    steps: list[Step] = []
    client = iggy.IggyClient(recorder.address)
    run = lambda call, coro: _run(recorder, steps, call, coro)  # noqa: E731
    await run("connect()", client.connect())
    await run("ping()", client.ping())
    await run('login_user("iggy", "iggy")', client.login_user("iggy", "iggy"))
    await run(f'create_stream("{STREAM}")', client.create_stream(STREAM))
    await run(f'get_stream("{STREAM}")', client.get_stream(STREAM))
    await run(
        f'create_topic("{STREAM}", "{TOPIC}", partitions_count=3)',
        client.create_topic(STREAM, TOPIC, partitions_count=3),
    )
    for pid, payloads in PAYLOADS.items():
        shown = ", ".join(f"SendMessage({p!r})" for p in payloads)
        await run(
            f'send_messages("{STREAM}", "{TOPIC}", {pid}, [{shown}])',
            client.send_messages(STREAM, TOPIC, pid, [iggy.SendMessage(p) for p in payloads]),
        )
    await run(
        f'poll_messages("{STREAM}", "{TOPIC}", 0, PollingStrategy.Offset(0), 10, False)',
        client.poll_messages(STREAM, TOPIC, 0, iggy.PollingStrategy.Offset(0), 10, False),
    )
    if not full:
        return steps
    await run('get_stream("missing")', client.get_stream("missing"))
    await run(f'create_stream("{STREAM}") (again: refused)', client.create_stream(STREAM))
    await run(f'get_topic("{STREAM}", "{TOPIC}")', client.get_topic(STREAM, TOPIC))
    await run("get_stream(0)", client.get_stream(0))
    await run(f'get_topic(0, "{TOPIC}")', client.get_topic(0, TOPIC))
    strategies: list[tuple[str, Any]] = [
        ("Offset(1)", iggy.PollingStrategy.Offset(1)),
        (f"Timestamp({TIMESTAMP_ASKED})", iggy.PollingStrategy.Timestamp(TIMESTAMP_ASKED)),
        ("First()", iggy.PollingStrategy.First()),
        ("Last()", iggy.PollingStrategy.Last()),
        ("Next()", iggy.PollingStrategy.Next()),
    ]
    for auto_commit in (False, True):
        for pid in (0, 2):
            for shown, strategy in strategies:
                await run(
                    f'poll_messages("{STREAM}", "{TOPIC}", {pid}, PollingStrategy.{shown}, 10, '
                    f"{auto_commit})",
                    client.poll_messages(STREAM, TOPIC, pid, strategy, 10, auto_commit),
                )
    await run(
        "poll_messages(0, 0, 1, PollingStrategy.Next(), 1, True)",
        client.poll_messages(0, 0, 1, iggy.PollingStrategy.Next(), 1, True),
    )
    consumer = await run(
        f'consumer_group("{GROUP}", "{STREAM}", "{TOPIC}", partition_id=1, '
        "polling_strategy=PollingStrategy.Next(), batch_length=10, "
        "auto_commit=AutoCommit.When(AutoCommitWhen.PollingMessages()))",
        client.consumer_group(
            GROUP,
            STREAM,
            TOPIC,
            partition_id=1,
            polling_strategy=iggy.PollingStrategy.Next(),
            batch_length=10,
            auto_commit=iggy.AutoCommit.When(iggy.AutoCommitWhen.PollingMessages()),
            poll_interval=datetime.timedelta(milliseconds=10),
            init_retries=1,
            init_retry_interval=datetime.timedelta(milliseconds=100),
        ),
    )
    if consumer is not None:
        await run("consumer.iter_messages() (first message)", _first(consumer.iter_messages()))
        await run("consumer.store_offset(0, 1)", consumer.store_offset(0, 1))
        await run("consumer.delete_offset(1)", consumer.delete_offset(1))
    other = iggy.IggyClient(recorder.address)
    await run("second client: connect()", other.connect())
    await run(
        'second client: login_user("iggy", "wrong") (refused)', other.login_user("iggy", "wrong")
    )
    return steps


async def _first(it: Any) -> Any:
    return await it.__anext__()


# --------------------------------------------------------------------------- output


def capture(full: bool = True) -> tuple[list[Request], list[Step], list[str]]:
    """Run the session against a fresh recorder; the requests, the steps, the server's errors."""
    with Recorder() as recorder:
        steps = asyncio.run(asyncio.wait_for(session(recorder, full), SESSION_DEADLINE_S))
        time.sleep(0.1)
        return list(recorder.requests), steps, list(recorder.errors)


def client_version() -> str:
    from importlib.metadata import version

    return version("apache-iggy")


def volatile(req: Request) -> list[tuple[int, int, str]]:
    """The byte ranges ``[start, end)`` of ``req.frame`` that differ from run to run.

    Only SEND_MESSAGES has any: each message's ``origin_timestamp`` (u64 at 40..48 of its
    64-byte header) is the client's clock in microseconds.  Its message id is 0 (the binding's
    ``SendMessage`` leaves it to the server) and every other byte of every captured request
    repeats exactly."""
    if req.code != 101:
        return []
    r = Reader(req.payload)
    r.take(r.u32())  # metadata: stream, topic, partitioning, message count
    count = int(struct.unpack("<I", req.payload[r.pos - 4 : r.pos])[0])
    r.take(count * INDEX_SIZE)
    out = []
    for n in range(count):
        start = 8 + r.pos
        header = MESSAGE_HEADER.unpack(r.take(MESSAGE_HEADER_SIZE))
        out.append(
            (start + 40, start + 48, f"message {n} origin_timestamp (client clock, microseconds)")
        )
        r.take(header[7] + header[6])  # payload, then user headers
    return out


def as_yaml(req: Request, version: str) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "command": req.command,
        "code": req.code,
        "hex": req.frame.hex(),
        "call": req.call or "(none: sent by the client on its own)",
        "connection": req.connection,
        "client": f"apache-iggy=={version}",
    }
    ranges = volatile(req)
    doc["deterministic"] = not ranges
    if ranges:
        doc["volatile"] = [{"bytes": f"{a}..{b}", "field": why} for a, b, why in ranges]
    return doc


def write(out: Path, requests: list[Request]) -> list[Path]:
    import yaml

    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.yaml"):
        old.unlink()
    version = client_version()
    width = len(str(len(requests)))
    paths = []
    for req in requests:
        path = out / f"{req.order:0{width}d}-{req.command}.yaml"
        path.write_text(yaml.safe_dump(as_yaml(req, version), sort_keys=False, width=1_000_000))
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="directory for the YAML files")
    args = parser.parse_args(argv)
    requests, steps, errors = capture()
    write(args.out, requests)
    print(f"{client_version()}: {len(requests)} requests captured into {args.out}")
    for step in steps:
        print(f"  {'ok  ' if step.ok else 'FAIL'} {step.call} -> {step.result[:120]}")
    for req in requests:
        print(f"  {req.order:3d} conn {req.connection} {req.command:<24} {len(req.frame):5d} B")
    for error in errors:
        print(f"  server: {error}")
    return 0 if all(s.ok for s in steps) else 1


if __name__ == "__main__":
    sys.exit(main())
