"""The real ``apache-iggy==0.8.0`` client (the Python binding of Iggy's Rust SDK 0.10.0) against
the reference broker, ``conformance serve --protocol iggy`` (revision classic), over loopback.

One broker serves the whole module (started on a port the system picks, stopped by its PID).
The client logs in as iggy/iggy, creates a stream and topics of 3 partitions and sends 1,000
messages to each topic, message ``i`` to partition ``i % 3`` (partition-id partitioning: the
binding's ``send_messages`` takes nothing else), in batches.  Each test then reads them back
one way and checks, partition by partition, that every message comes back exactly once, in
offset order, with its payload intact:

- polling by offset, timestamp, first, last and next, without auto-commit (topic ``orders``,
  which nothing ever commits to, so ``Next`` keeps starting from 0);
- ``Next`` with auto-commit, and auto-commit on the other strategies (each on its own topic:
  the binding's ``poll_messages`` always polls as consumer kind 1, id 0);
- a consumer offset stored and deleted through the binding's consumer-group consumer
  (``store_offset``/``delete_offset``) and read back through what the consumer then polls;
- the consumer-group consumer reading a whole topic with auto-commit.

The binding has no call that reads a stored offset from the server (FACTS.md section 2: nothing
it exposes sends GET_CONSUMER_OFFSET), nor one that sends raw requests, so the stored offsets
and the refusal of a wrong password are also read on a plain socket here, with the classic
framing of FACTS.md section 1 (``_Wire``): that part is the broker's answer as bytes, not the
client's.  A wrong password must be refused as the real server refuses it: status 42
(InvalidCredentials) with no payload, the connection kept and still not logged in.  The
GET_CLUSTER_METADATA the client sends after each login is checked on the socket too: the client
goes on whatever the answer, the real server answers it.

What the binding cannot exercise (proven by vectors instead): message headers, user message
ids, balanced and messages-key partitioning, GET_CONSUMER_OFFSET, LOGOUT_USER.

Without ``apache_iggy`` the module is skipped, except under ``CI``, where it fails: CI installs
it with the ``dev`` extras.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import socket
import struct
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest

from tests.support import iggy_serve

pytestmark = [
    pytest.mark.slow,
    # one worker and one broker under --dist loadgroup; each test also stands alone (its own
    # topic where it commits), so a split over workers (a broker each) is as good
    pytest.mark.xdist_group("iggy-interop"),
    pytest.mark.timeout(120),
]

try:
    import apache_iggy as iggy
except ImportError as exc:  # pragma: no cover - depends on the environment
    reason = f"apache_iggy is not importable ({exc}); pip install -e '.[dev]' installs it"
    if os.environ.get("CI"):
        raise
    pytest.skip(reason, allow_module_level=True)

T = TypeVar("T")

USER, PASSWORD = "iggy", "iggy"
STREAM = "interop"
ORDERS = "orders"
PARTITIONS = 3
TOTAL = 1000
CHUNK = 150  # messages 0..149, 150..299, ... each sent as one batch per partition
PAGE = 100
CALL_DEADLINE_S = 10.0  # one client call
TEST_DEADLINE_S = 40.0  # one test's whole session
READ_DEADLINE_S = 20.0  # the group consumer reading a whole topic

Got = tuple[int, int, bytes]
"""(partition, offset, payload) of a message the client received."""


def payload(i: int) -> bytes:
    """Message ``i``'s payload: its number, then 0..96 bytes of every value (NUL, non-UTF-8)."""
    return b"m%04d:" % i + bytes((i * 7 + j) % 256 for j in range(i % 97))


EXPECTED: dict[int, list[bytes]] = {
    p: [payload(i) for i in range(p, TOTAL, PARTITIONS)] for p in range(PARTITIONS)
}
"""The payloads each partition holds, in offset order (334, 333 and 333 messages)."""


# --------------------------------------------------------------------------- bounded calls


def run(session: Callable[[], Awaitable[T]]) -> T:
    """One test's client session, in its own event loop, under TEST_DEADLINE_S."""

    async def bounded() -> T:
        return await asyncio.wait_for(session(), TEST_DEADLINE_S)

    return asyncio.run(bounded())


async def call(awaitable: Awaitable[T], deadline: float = CALL_DEADLINE_S) -> T:
    return await asyncio.wait_for(awaitable, deadline)


async def logged_in(address: str) -> Any:
    client = iggy.IggyClient(address)
    await call(client.connect())
    await call(client.login_user(USER, PASSWORD))
    return client


async def send_all(client: Any, topic: str) -> None:
    """Create ``topic`` (3 partitions) and send the 1,000 messages, in batches per partition."""
    await call(client.create_topic(STREAM, topic, partitions_count=PARTITIONS))
    for start in range(0, TOTAL, CHUNK):
        for p in range(PARTITIONS):
            batch = [i for i in range(start, min(start + CHUNK, TOTAL)) if i % PARTITIONS == p]
            messages = [iggy.SendMessage(payload(i)) for i in batch]
            await call(client.send_messages(STREAM, topic, p, messages))


def got(messages: list[Any]) -> list[Got]:
    return [(m.partition_id(), m.offset(), m.payload()) for m in messages]


async def poll(
    client: Any, topic: str, p: int, strategy: Any, count: int, auto_commit: bool = False
) -> list[Any]:
    result: list[Any] = await call(
        client.poll_messages(STREAM, topic, p, strategy, count, auto_commit)
    )
    return result


async def read_by_offset(client: Any, topic: str, p: int) -> list[Any]:
    """Every message of partition ``p``, page by page with strategy offset (no commit)."""
    out: list[Any] = []
    for _ in range(TOTAL // PAGE + 3):  # a broker that never ends a page cannot loop forever
        page = await poll(client, topic, p, iggy.PollingStrategy.Offset(len(out)), PAGE)
        if not page:
            return out
        out += page
    return out


def check_partition(p: int, messages: list[Got], start: int = 0, what: str = "") -> None:
    """``messages`` are partition ``p``'s from offset ``start`` to its end, each once, intact."""
    want = EXPECTED[p][start:]
    offsets = [o for _, o, _ in messages]
    assert offsets == list(range(start, start + len(want))), (
        f"{what}partition {p}: offsets {_span(offsets)}, expected {start}..{start + len(want) - 1}"
    )
    assert {q for q, _, _ in messages} <= {p}, f"{what}partition {p}: messages of another"
    bad = [o for (_, o, data), w in zip(messages, want, strict=True) if data != w]
    assert not bad, f"{what}partition {p}: payloads differ at offsets {bad[:10]}"


def _span(offsets: list[int]) -> str:
    if not offsets:
        return "none"
    dupes = len(offsets) - len(set(offsets))
    return f"{len(offsets)} from {offsets[0]} to {offsets[-1]}" + (
        f", {dupes} repeated" if dupes else ""
    )


# --------------------------------------------------------------------------- the raw wire


class _Wire:
    """A plain socket speaking classic framing (FACTS.md section 1): request ``u32 length = 4 +
    payload, u32 code, payload``; reply ``u32 status, u32 length, payload``; little-endian."""

    PING, LOGIN_USER, GET_STREAMS, GET_CONSUMER_OFFSET = 1, 38, 201, 120

    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port), timeout=CALL_DEADLINE_S)

    def close(self) -> None:
        self.sock.close()

    def exchange(self, code: int, body: bytes = b"") -> bytes:
        """The whole reply (header included) to one request."""
        self.sock.sendall(struct.pack("<II", 4 + len(body), code) + body)
        head = self._read(8)
        _, length = struct.unpack("<II", head)
        return head + self._read(length)

    def request(self, code: int, body: bytes = b"") -> tuple[int, bytes]:
        reply = self.exchange(code, body)
        return int(struct.unpack("<I", reply[:4])[0]), reply[8:]

    def _read(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError(f"closed after {len(buf)} of {n} reply bytes")
            buf += chunk
        return buf

    @staticmethod
    def login_body(user: str, password: str) -> bytes:
        """Username and password (u8 length each), no version, no context (u32 0 each)."""
        u, pw = user.encode(), password.encode()
        return bytes([len(u)]) + u + bytes([len(pw)]) + pw + struct.pack("<II", 0, 0)

    @staticmethod
    def identifier(value: int | str) -> bytes:
        if isinstance(value, int):
            return b"\x01\x04" + struct.pack("<I", value)
        raw = value.encode()
        return b"\x02" + bytes([len(raw)]) + raw

    def consumer_offset(self, kind: int, consumer: int | str, topic: str, p: int) -> bytes:
        """GET_CONSUMER_OFFSET's reply payload (u32 partition, u64 current, u64 stored), or
        b"" when none is stored; any other status fails."""
        body = bytes([kind]) + self.identifier(consumer) + self.identifier(STREAM)
        body += self.identifier(topic) + b"\x01" + struct.pack("<I", p)
        status, reply = self.request(self.GET_CONSUMER_OFFSET, body)
        assert status == 0, f"GET_CONSUMER_OFFSET answered status {status}"
        return reply


@pytest.fixture
def wire(served: iggy_serve.Served) -> Iterator[_Wire]:
    w = _Wire(served.host, served.port)
    try:
        yield w
    finally:
        w.close()


def stored(wire: _Wire, kind: int, consumer: int | str, topic: str, p: int) -> tuple[int, int]:
    """(current offset, stored offset) of partition ``p`` as the broker answers them."""
    reply = wire.consumer_offset(kind, consumer, topic, p)
    assert len(reply) == 20, f"GET_CONSUMER_OFFSET replied {reply.hex() or 'empty'}"
    partition, current, offset = struct.unpack("<IQQ", reply)
    assert partition == p, f"GET_CONSUMER_OFFSET answered partition {partition}, asked {p}"
    return current, offset


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[iggy_serve.Served]:
    broker = iggy_serve.start(
        "--revision", "classic", directory=tmp_path_factory.mktemp("iggy-serve")
    )
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def orders(served: iggy_serve.Served) -> str:
    """The stream, and topic ``orders`` with its 1,000 messages; the broker's address."""

    async def session() -> None:
        client = await logged_in(served.address)
        await call(client.create_stream(STREAM))
        await send_all(client, ORDERS)

    run(session)
    return served.address


@pytest.fixture
def authed_wire(wire: _Wire) -> _Wire:
    status, _ = wire.request(_Wire.LOGIN_USER, _Wire.login_body(USER, PASSWORD))
    assert status == 0, f"LOGIN_USER iggy/iggy answered status {status}"
    return wire


# --------------------------------------------------------------------------- the tests


def test_stream_and_topic_hold_the_messages_sent(orders: str) -> None:
    async def session() -> None:
        client = await logged_in(orders)
        stream = await call(client.get_stream(STREAM))
        assert stream is not None, f"get_stream({STREAM!r}) found nothing"
        assert stream.name == STREAM
        same = await call(client.get_stream(stream.id))
        assert same is not None and same.name == STREAM, "the stream is not found by its id"
        topic = await call(client.get_topic(STREAM, ORDERS))
        assert topic is not None, f"get_topic({STREAM!r}, {ORDERS!r}) found nothing"
        assert (topic.name, topic.partitions_count) == (ORDERS, PARTITIONS)
        assert topic.messages_count == TOTAL, f"{topic.messages_count} messages, sent {TOTAL}"
        assert await call(client.get_stream("no-such-stream")) is None

    run(session)


def test_poll_by_offset_returns_every_message_once(orders: str) -> None:
    async def session() -> None:
        client = await logged_in(orders)
        ids: set[int] = set()
        for p in range(PARTITIONS):
            messages = await read_by_offset(client, ORDERS, p)
            check_partition(p, got(messages), what="offset pages: ")
            assert all(m.length() == len(m.payload()) for m in messages)
            # XXH3 over the stored message; its origin timestamp is not exposed, so only this
            assert all(m.checksum() != 0 for m in messages), f"partition {p}: checksum 0"
            ids |= {m.id() for m in messages}
            middle = await poll(client, ORDERS, p, iggy.PollingStrategy.Offset(200), 10)
            assert [o for _, o, _ in got(middle)] == list(range(200, 210)), "Offset(200), 10"
        assert 0 not in ids and len(ids) == TOTAL, "message ids: server-assigned and unique"

    run(session)


def test_poll_by_timestamp(orders: str) -> None:
    async def session() -> None:
        client = await logged_in(orders)
        for p in range(PARTITIONS):
            messages = await read_by_offset(client, ORDERS, p)
            stamps = [m.timestamp() for m in messages]
            assert stamps == sorted(stamps), f"partition {p}: timestamps go back"
            assert stamps[0] > 1_600_000_000_000_000, f"timestamp {stamps[0]} is not in µs"
            everything = await poll(client, ORDERS, p, iggy.PollingStrategy.Timestamp(0), TOTAL)
            check_partition(p, got(everything), what="Timestamp(0): ")
            # the first message of a later batch: only it and those after it are at or after
            later = [k for k in range(1, len(stamps)) if stamps[k] > stamps[k - 1]]
            assert later, f"partition {p}: every message has the same timestamp"
            k = later[len(later) // 2]
            since = await poll(client, ORDERS, p, iggy.PollingStrategy.Timestamp(stamps[k]), TOTAL)
            check_partition(p, got(since), start=k, what=f"Timestamp(offset {k}'s): ")
            after = iggy.PollingStrategy.Timestamp(stamps[-1] + 1)
            assert await poll(client, ORDERS, p, after, TOTAL) == [], "after the last timestamp"

    run(session)


def test_poll_first_and_last(orders: str) -> None:
    async def session() -> None:
        client = await logged_in(orders)
        for p in range(PARTITIONS):
            n = len(EXPECTED[p])
            first = got(await poll(client, ORDERS, p, iggy.PollingStrategy.First(), 10))
            check_partition(p, first + _rest(p, 10), what="First(), 10: ")
            whole = got(await poll(client, ORDERS, p, iggy.PollingStrategy.First(), TOTAL))
            check_partition(p, whole, what="First(), 1000: ")
            last = got(await poll(client, ORDERS, p, iggy.PollingStrategy.Last(), 10))
            check_partition(p, last, start=n - 10, what="Last(), 10: ")
            whole = got(await poll(client, ORDERS, p, iggy.PollingStrategy.Last(), TOTAL))
            check_partition(p, whole, what="Last(), 1000: ")

    run(session)


def _rest(p: int, start: int) -> list[Got]:
    """Partition ``p``'s messages from ``start`` as expected: pads a partial read for
    :func:`check_partition`, which then checks the part that was read."""
    return [(p, start + k, data) for k, data in enumerate(EXPECTED[p][start:])]


def test_poll_next_without_auto_commit_starts_over(orders: str) -> None:
    async def session() -> None:
        client = await logged_in(orders)
        for p in range(PARTITIONS):
            for attempt in (1, 2):
                page = got(await poll(client, ORDERS, p, iggy.PollingStrategy.Next(), 50))
                check_partition(p, page + _rest(p, 50), what=f"Next() #{attempt}, no commit: ")

    run(session)


def test_poll_next_with_auto_commit_reads_each_message_once(
    orders: str, authed_wire: _Wire
) -> None:
    topic = "next-commit"

    async def session() -> None:
        client = await logged_in(orders)
        await send_all(client, topic)
        for p in range(PARTITIONS):
            seen: list[Got] = []
            for _ in range(TOTAL // PAGE + 3):
                page = await poll(client, topic, p, iggy.PollingStrategy.Next(), PAGE, True)
                if not page:
                    break
                seen += got(page)
            check_partition(p, seen, what="Next() with auto-commit: ")
            again = await poll(client, topic, p, iggy.PollingStrategy.Next(), PAGE)
            assert again == [], f"partition {p}: Next() after the end returned {len(again)}"

    run(session)
    for p in range(PARTITIONS):
        last = len(EXPECTED[p]) - 1
        assert stored(authed_wire, 1, 0, topic, p) == (last, last), (
            f"partition {p}: (current, stored offset) of consumer 0 after reading all"
        )


def test_auto_commit_with_offset_timestamp_first_and_last(orders: str) -> None:
    topic = "strategies-commit"

    async def session() -> None:
        client = await logged_in(orders)
        await send_all(client, topic)
        s = iggy.PollingStrategy

        async def then_next(p: int, start: int, what: str) -> None:
            page = got(await poll(client, topic, p, s.Next(), 5))
            check_partition(p, page + _rest(p, start + len(page)), start, f"Next() after {what}: ")
            assert page or start == len(EXPECTED[p]), f"Next() after {what} returned nothing"

        picked = got(await poll(client, topic, 0, s.Offset(100), 10, True))
        check_partition(0, picked + _rest(0, 110), 100, "Offset(100), 10, auto-commit: ")
        await then_next(0, 110, "Offset(100), 10, auto-commit")

        stamps = [m.timestamp() for m in await read_by_offset(client, topic, 0)]
        n = len(stamps)
        k = min(k for k in range(n // 2, n - 7) if stamps[k] > stamps[k - 1])
        picked = got(await poll(client, topic, 0, s.Timestamp(stamps[k]), 7, True))
        check_partition(0, picked + _rest(0, k + 7), k, f"Timestamp(offset {k}'s), 7, auto: ")
        await then_next(0, k + 7, "Timestamp, 7, auto-commit")

        picked = got(await poll(client, topic, 1, s.First(), 5, True))
        check_partition(1, picked + _rest(1, 5), 0, "First(), 5, auto-commit: ")
        await then_next(1, 5, "First(), 5, auto-commit")

        n = len(EXPECTED[2])
        picked = got(await poll(client, topic, 2, s.Last(), 3, True))
        check_partition(2, picked, n - 3, "Last(), 3, auto-commit: ")
        await then_next(2, n, "Last(), 3, auto-commit")

    run(session)


def test_consumer_offset_stored_is_where_the_consumer_resumes(
    orders: str, authed_wire: _Wire
) -> None:
    topic, group, p, offset = "offsets", "offset-keepers", 1, 99

    async def session() -> None:
        client = await logged_in(orders)
        await send_all(client, topic)
        consumer = await call(
            client.consumer_group(
                group,
                STREAM,
                topic,
                partition_id=p,
                polling_strategy=iggy.PollingStrategy.Next(),
                batch_length=TOTAL,  # one poll: without a commit, Next would return it again
                auto_commit=iggy.AutoCommit.Disabled(),
                poll_interval=datetime.timedelta(milliseconds=1),
                init_retries=1,
                init_retry_interval=datetime.timedelta(milliseconds=100),
                allow_replay=True,
            )
        )
        await call(consumer.store_offset(offset, p))
        assert consumer.get_last_stored_offset(p) == offset
        current, kept = stored(authed_wire, 2, group, topic, p)
        assert (current, kept) == (len(EXPECTED[p]) - 1, offset), "after store_offset(99, 1)"
        assert authed_wire.consumer_offset(2, group, topic, 0) == b"", "none stored on 0"

        with pytest.raises(RuntimeError, match="InvalidOffset"):
            await call(consumer.store_offset(TOTAL, p))  # past the partition's end: 4100

        messages = consumer.iter_messages()
        seen: list[Got] = []
        while len(seen) < len(EXPECTED[p]) - offset - 1:
            m = await call(messages.__anext__())
            seen.append((m.partition_id(), m.offset(), m.payload()))
        check_partition(p, seen, start=offset + 1, what="the consumer after store_offset(99): ")
        assert stored(authed_wire, 2, group, topic, p)[1] == offset, "no auto-commit, still 99"

        await call(consumer.delete_offset(p))
        assert authed_wire.consumer_offset(2, group, topic, p) == b"", "after delete_offset"

    run(session)


def test_consumer_group_with_auto_commit_reads_every_message_once(
    orders: str, authed_wire: _Wire
) -> None:
    topic, group = "group", "readers"

    async def session() -> list[Got]:
        client = await logged_in(orders)
        await send_all(client, topic)
        consumer = await call(
            client.consumer_group(
                group,
                STREAM,
                topic,
                polling_strategy=iggy.PollingStrategy.Next(),
                batch_length=PAGE,
                auto_commit=iggy.AutoCommit.When(iggy.AutoCommitWhen.PollingMessages()),
                poll_interval=datetime.timedelta(milliseconds=1),
                init_retries=1,
                init_retry_interval=datetime.timedelta(milliseconds=100),
                allow_replay=True,  # the broker's repeats reach the test, not hidden
            )
        )
        messages = consumer.iter_messages()
        seen: list[Got] = []
        end = time.monotonic() + READ_DEADLINE_S
        while len(seen) < TOTAL:
            left = end - time.monotonic()
            assert left > 0, f"{len(seen)} of {TOTAL} messages read in {READ_DEADLINE_S} s"
            try:
                m = await call(messages.__anext__(), min(left, CALL_DEADLINE_S))
            except TimeoutError:
                raise AssertionError(_progress(seen)) from None
            seen.append((m.partition_id(), m.offset(), m.payload()))
        return seen

    seen = run(session)
    for p in range(PARTITIONS):
        mine = sorted((m for m in seen if m[0] == p), key=lambda m: m[1])
        check_partition(p, mine, what="consumer group: ")
        last = len(EXPECTED[p]) - 1
        assert stored(authed_wire, 2, group, topic, p) == (last, last), (
            f"partition {p}: (current, stored offset) of group {group!r} after reading all"
        )


def test_two_group_members_share_the_partitions(orders: str, authed_wire: _Wire) -> None:
    """Two clients in one group read the topic between them: each partition is read by one
    member only, and every message once (the members poll with no partition: the broker
    deals them their partitions)."""
    topic, group = "shared", "pair"

    async def member(address: str) -> Any:
        client = await logged_in(address)
        return client, await call(
            client.consumer_group(
                group,
                STREAM,
                topic,
                polling_strategy=iggy.PollingStrategy.Next(),
                batch_length=PAGE,
                auto_commit=iggy.AutoCommit.When(iggy.AutoCommitWhen.PollingMessages()),
                poll_interval=datetime.timedelta(milliseconds=1),
                init_retries=1,
                init_retry_interval=datetime.timedelta(milliseconds=100),
                allow_replay=True,
            )
        )

    async def read(consumer: Any, into: list[Got]) -> None:
        messages = consumer.iter_messages()
        while True:
            m = await messages.__anext__()
            into.append((m.partition_id(), m.offset(), m.payload()))

    async def session() -> tuple[list[Got], list[Got]]:
        await send_all(await logged_in(orders), topic)
        members = [await member(orders), await member(orders)]  # both joined before reading
        seen: tuple[list[Got], list[Got]] = ([], [])
        tasks = [asyncio.create_task(read(c, s)) for (_, c), s in zip(members, seen, strict=True)]
        try:
            end = time.monotonic() + READ_DEADLINE_S
            while sum(map(len, seen)) < TOTAL and time.monotonic() < end:
                assert not any(t.done() for t in tasks), [t.exception() for t in tasks]
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.3)  # a repeat sent after the last message would land here
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        return seen

    a, b = run(session)
    assert len(a) + len(b) == TOTAL, f"{_progress(a + b)}; member a {len(a)}, member b {len(b)}"
    owned = {q for q, _, _ in a}, {q for q, _, _ in b}
    assert owned[0].isdisjoint(owned[1]), f"both members read partitions {owned[0] & owned[1]}"
    assert owned[0] and owned[1], f"one member read nothing: partitions {owned}"
    for p in range(PARTITIONS):
        mine = sorted((m for m in a + b if m[0] == p), key=lambda m: m[1])
        check_partition(p, mine, what="two members: ")


def _progress(seen: list[Got]) -> str:
    counts = {p: sum(1 for q, _, _ in seen if q == p) for p in range(PARTITIONS)}
    return f"the consumer stopped after {len(seen)} of {TOTAL} messages; per partition {counts}"


def test_wrong_password_is_refused_as_the_server_does(
    served: iggy_serve.Served, wire: _Wire
) -> None:
    async def session() -> None:
        for user, password in ((USER, "wrong"), ("nobody", PASSWORD)):
            client = iggy.IggyClient(served.address)
            await call(client.connect())
            with pytest.raises(RuntimeError, match="InvalidCredentials"):
                await call(client.login_user(user, password))

    run(session)
    refused = wire.exchange(_Wire.LOGIN_USER, _Wire.login_body(USER, "wrong"))
    assert refused == struct.pack("<II", 42, 0), f"wrong password answered {refused.hex()}"
    assert wire.exchange(_Wire.PING) == bytes(8), "PING after the refusal"
    status, _ = wire.request(_Wire.GET_STREAMS)
    assert status == 40, f"GET_STREAMS after a refused login answered {status}, not 40"
    status, body = wire.request(_Wire.LOGIN_USER, _Wire.login_body(USER, PASSWORD))
    assert (status, len(body)) == (0, 4), f"the right password then: {status}, {body.hex()}"
    assert wire.request(_Wire.GET_STREAMS)[0] == 0, "GET_STREAMS once logged in"


def test_cluster_metadata_the_client_asks_for_after_login(
    served: iggy_serve.Served, authed_wire: _Wire
) -> None:
    """The client sends GET_CLUSTER_METADATA (12) right after each login (its leader check,
    core/sdk/src/leader_aware.rs at f5350d999; captured as tests/iggy/captured/04-*).  It goes on
    whatever the answer, so here it is the broker's answer that is checked: the real server,
    clustering off, answers status 0 with one node, itself (core/server/src/shard/system/
    cluster.rs: name, then u32 node count; per node name, ip, u16 tcp/quic/http/websocket
    ports, u8 role 0 = leader, u8 status 0 = healthy;
    core/binary_protocol/src/responses/system/get_cluster_metadata.rs)."""
    reply = authed_wire.exchange(12)
    status, length = struct.unpack("<II", reply[:8])
    assert status == 0, f"GET_CLUSTER_METADATA answered {reply.hex()}, not status 0"
    body, pos = reply[8:], 0

    def text() -> str:
        nonlocal pos
        (n,) = struct.unpack_from("<I", body, pos)
        pos += 4 + n
        return body[pos - n : pos].decode()

    text()  # the cluster's name
    (nodes,) = struct.unpack_from("<I", body, pos)
    pos += 4
    assert nodes == 1, f"{nodes} nodes; a single broker is one"
    text(), text()  # the node's name and ip
    tcp, _quic, _http, _ws, role, health = struct.unpack_from("<HHHHBB", body, pos)
    assert pos + 10 == len(body) == length, f"reply {body.hex()} is not one node's"
    assert (tcp, role, health) == (served.port, 0, 0), "tcp port, role leader, status healthy"
