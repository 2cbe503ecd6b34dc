"""The oracle, judged against small hostile servers and the reference broker."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from conformance import fuzz
from conformance.fuzz import campaign, events, harness
from conformance.fuzz.case import FuzzCase
from conformance.fuzz.target import External
from conformance.protocols.cursus import codec
from conformance.protocols.cursus.fuzzing import FUZZ_TOPIC
from conformance.protocols.cursus.messages import Batch, Message
from tests.support import broker

PROTO = fuzz.protocol("cursus")
DEADLINE = 0.4
LIST = PROTO.frame(b"LIST")


def case(*writes: bytes) -> FuzzCase:
    return FuzzCase(0, "test", "frame", writes)


@contextlib.contextmanager
def server(behaviour: Callable[[socket.socket, socket.socket], None]) -> Iterator[int]:
    """A one-behaviour TCP server on 127.0.0.1; ``behaviour(conn, listener)`` per connection."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    stop = threading.Event()

    def handle(conn: socket.socket) -> None:
        with conn:
            behaviour(conn, listener)
            stop.wait(5)  # hold the connection open until the test is over

    def loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        listener.close()


def read_some(conn: socket.socket) -> bytes:
    conn.settimeout(2)
    try:
        return conn.recv(65536)
    except OSError:
        return b""


def drops_everything(conn: socket.socket, _: socket.socket) -> None:
    read_some(conn)
    conn.close()


def answers(conn: socket.socket, _: socket.socket) -> None:
    if read_some(conn):
        conn.sendall(PROTO.frame(b"OK"))


def silent(conn: socket.socket, _: socket.socket) -> None:
    read_some(conn)


def stalls_the_case(conn: socket.socket, _: socket.socket) -> None:
    """Answers the harness's probe (a LIST) and nothing else: one connection stalls."""
    if read_some(conn) == LIST:
        conn.sendall(PROTO.frame(b"[]"))


def garbles(conn: socket.socket, _: socket.socket) -> None:
    if read_some(conn):
        conn.sendall(b"\xff\xff\xff\xff")


def closes(conn: socket.socket, _: socket.socket) -> None:
    """Closes on the case; answers the harness's probe (a LIST) like a live broker."""
    if read_some(conn) == LIST:
        conn.sendall(PROTO.frame(b"[]"))
    conn.close()


def dies(conn: socket.socket, listener: socket.socket) -> None:
    read_some(conn)
    with contextlib.suppress(OSError):
        listener.shutdown(socket.SHUT_RDWR)  # stops listening (a bare close would not, on Linux,
    listener.close()  # while another thread is blocked in accept)
    conn.close()


def until_eof(conn: socket.socket, _: socket.socket) -> None:
    """Reads until EOF, then closes; answers the harness's probe (a LIST)."""
    while data := read_some(conn):
        if data == LIST:
            conn.sendall(PROTO.frame(b"[]"))
    conn.close()


def answers_then_dies(conn: socket.socket, listener: socket.socket) -> None:
    answers(conn, listener)
    dies(conn, listener)


def run(port: int, c: FuzzCase) -> harness.Result:
    return harness.execute(PROTO, c, "127.0.0.1", port, DEADLINE)


@pytest.mark.parametrize(
    ("behaviour", "outcome"),
    [
        (answers, harness.ANSWERED),
        (stalls_the_case, harness.HANG),
        (silent, harness.STOPPED),  # accepts, and answers not even the probe, twice
        (garbles, harness.BAD_REPLY),
        (closes, harness.CLOSED),
        (dies, harness.CRASH),
        (drops_everything, harness.CRASH),  # accepts, but drops even the probe, twice
    ],
)
def test_outcome_of_a_whole_frame(
    behaviour: Callable[[socket.socket, socket.socket], None], outcome: str
) -> None:
    with server(behaviour) as port:
        result = run(port, case(PROTO.frame(b"FUZZ")))
    assert result.outcome == outcome, result
    assert result.finding == harness.FINDING_OF.get(outcome, "")


def test_a_partial_frame_owes_a_close_after_our_half_close() -> None:
    with server(until_eof) as port:
        assert run(port, case(LIST[:6])).outcome == harness.CLOSED
    with server(stalls_the_case) as port:  # keeps the connection after we finished: a hang
        assert run(port, case(LIST[:6])).outcome == harness.HANG


def test_a_crash_after_the_reply_is_a_crash_of_the_next_case() -> None:
    with server(answers_then_dies) as port:
        assert run(port, case(LIST)).outcome == harness.ANSWERED
        time.sleep(0.1)
        result = run(port, case(LIST))
    assert (result.outcome, result.finding) == (harness.REFUSED, "CRASH")


def test_a_refused_case_suspects_the_cases_before_it() -> None:
    def row(index: int, outcome: str, finding: str = "") -> campaign.Row:
        return campaign.Row(
            index, 0, "valid", "structure", LIST, 1, outcome, 0, finding, "", "", False, 0.0, -1.0
        )

    rows = [row(i, harness.ANSWERED) for i in range(6)] + [row(6, harness.REFUSED, "CRASH")]
    (event,) = events.events(PROTO, rows)
    assert (event.finding, event.index, event.window) == ("CRASH", 6, (3, 4, 5, 6))


def test_hang_waits_only_the_deadline() -> None:
    with server(stalls_the_case) as port:
        result = run(port, case(PROTO.frame(b"FUZZ")))
    assert DEADLINE <= result.latency_s < DEADLINE + 0.5


def test_reference_broker_answers_every_shape(clean: External) -> None:
    port = clean.port
    assert run(port, case(LIST * 5)).outcome == harness.ANSWERED
    assert run(port, case(LIST[:3], LIST[3:])).outcome == harness.ANSWERED
    assert run(port, case(LIST[:5])).outcome == harness.CLOSED
    assert run(port, case(b"\xff" * 8)).outcome == harness.CLOSED  # over the limit: refused


def test_stream_then_half_close_is_closed_not_hung(clean: External) -> None:
    # Regression: the broker kept a connection whose push stream raced the client's EOF
    # (asyncio.wait_for swallowed the cancellation of the stream task on Python 3.11).
    msgs = (Message(0, 0, "p", "", 0, b"x"),)
    batch = Batch(FUZZ_TOPIC, "1", "1", False, 0, 0, msgs)
    harness.exchange(PROTO, clean.host, clean.port, [codec.encode_batch(batch)], 2.0)
    stream = PROTO.frame(f"STREAM {FUZZ_TOPIC} 1 0".encode())
    for _ in range(20):
        assert run(clean.port, case(stream)).outcome == harness.CLOSED


def test_canary_round_trip(clean: External) -> None:
    canary = harness.Canary(PROTO, clean.host, clean.port, "t", 2.0)
    assert canary.check() == ""
    assert canary.check() == ""
    assert len(canary.acked) == 2


def test_canary_sees_lost_data() -> None:
    b = broker.start("--quirk", "burst-loses-acked")
    try:
        target = External(b.host, b.port)
        campaign.setup(PROTO, target, 2.0)
        canary = harness.Canary(PROTO, b.host, b.port, "t", 2.0)
        assert canary.check() == ""
        run(b.port, case(PROTO.frame(b"") * 16))  # the burst that trips the quirk
        assert "reads back nothing" in canary.check()
    finally:
        b.stop()


class Swelling(External):
    """A target whose resident memory grows 100 MiB at every look."""

    reads = 0

    def rss_bytes(self) -> int | None:
        self.reads += 1
        return self.reads * 100 * 2**20


def test_leak_when_resident_memory_grows_past_the_bound(clean: External) -> None:
    target = Swelling(clean.host, clean.port)
    options = campaign.Options(deadline=1.0, canary_every=10, leak_bound_mb=250)
    rows = campaign.run_range(PROTO, target, 5, 0, 40, options)
    assert [r.index for r in rows if r.leak] == [29]  # looks at 9, 19, 29: +300 MiB > 250
    found = events.events(PROTO, rows)
    assert [(e.finding, e.window) for e in found] == [("LEAK", tuple(range(20, 30)))]
    steady = campaign.run_range(PROTO, clean, 5, 0, 40, options)
    assert not any(r.leak for r in steady)


# ---------------------------------------------- a close the protocol does not allow
V1 = fuzz.protocol("v1line")
V1_PING = V1.frame(b"V1|1|PING|")


def v1_closes_on_bad(conn: socket.socket, _: socket.socket) -> None:
    """A V1 broker that answers each line but closes, unanswered, on one holding ``bad``."""
    buf = b""
    while data := read_some(conn):
        buf += data
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            if b"bad" in line:
                conn.close()
                return
            conn.sendall(b"V1|1|OK\n")
    conn.close()


@pytest.mark.parametrize(
    ("sent", "outcome", "revision"),
    [
        (V1_PING + V1.frame(b"V1|2|CONSUME|bad 0 0"), harness.DROPPED, "doc"),
        (V1_PING + V1_PING, harness.ANSWERED, "doc"),
        # a line of 64 KiB or more may close the connection (V1L-ENV-13; Go's scanner)
        (V1.frame(b"V1|3|PRODUCE|bad " + b"x" * 65_519), harness.CLOSED, "real"),
        # doc: a parse error may close it (keeping it open is real's V1L-ENV-12)
        (V1_PING + V1.frame(b"V2|bad|PING|"), harness.CLOSED, "doc"),
        (V1_PING + V1.frame(b"V2|bad|PING|"), harness.DROPPED, "real"),
    ],
)
def test_a_close_with_a_line_unanswered_is_dropped_where_the_protocol_allows_none(
    sent: bytes, outcome: str, revision: str
) -> None:
    """V1's ``may_close``: a protocol without the hook (Cursus, above: ``closes``) may close
    on anything; V1 only on a line of 64 KiB or more, and in ``doc`` after a parse error."""
    proto = fuzz.protocol("v1line", {}, revision)
    with server(v1_closes_on_bad) as port:
        got = harness.execute(proto, case(sent), "127.0.0.1", port, DEADLINE)
    assert got.outcome == outcome, got
    if outcome == harness.DROPPED:
        assert (got.finding, got.replies) == ("DROPPED", 1)
        assert "closed with 1 of 2 replies owed" in got.detail
    if sent.endswith(b"bad 0 0\n"):
        assert proto.requirement(got.finding, case(sent), got.replies) == "V1L-CONS-1"
        assert proto.requirement(got.finding, case(sent), got.replies).startswith("V1L-")
