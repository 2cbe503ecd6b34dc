"""The faulty Cursus broker (tests/support/faulty_cursus.py): it serves, and each fault does
what its flag says.  The broker runs as a subprocess, stopped by its PID at the end."""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from conformance.fuzz import campaign, harness, protocol
from conformance.fuzz.case import FuzzCase
from conformance.fuzz.target import External
from tests.support.faulty_process import SCRIPT, Broker, faulty

HOST = "127.0.0.1"
PROTO = protocol("cursus")
FRAME_LIMIT = 64 * 1024 * 1024
SILENCE = 0.3
"""How long a reply is waited for where none must come."""


def frame(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


def connect(port: int) -> socket.socket:
    return socket.create_connection((HOST, port), timeout=2)


class Reader:
    """Reply payloads read off ``sock`` one at a time, each within its own timeout."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.buf = sock, b""

    def __call__(self, timeout: float = 2.0) -> bytes | None:
        """The next reply; None if none came in time (ConnectionError if the broker closed)."""
        end = time.monotonic() + timeout
        while len(self.buf) < 4 or len(self.buf) < 4 + int.from_bytes(self.buf[:4], "big"):
            self.sock.settimeout(max(end - time.monotonic(), 0.001))
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                return None
            if not data:
                raise ConnectionError("the broker closed the connection")
            self.buf += data
        size = int.from_bytes(self.buf[:4], "big")
        reply, self.buf = self.buf[4 : 4 + size], self.buf[4 + size :]
        return reply


def read_frame(sock: socket.socket, timeout: float = 2.0) -> bytes | None:
    return Reader(sock)(timeout)


def ask(port: int, *payloads: bytes) -> list[bytes | None]:
    with connect(port) as sock:
        sock.sendall(b"".join(frame(p) for p in payloads))
        read = Reader(sock)
        return [read() for _ in payloads]


def closed(sock: socket.socket, timeout: float = 2.0) -> bool:
    """True if the broker closes ``sock`` within ``timeout`` (whatever it sends first)."""
    read = Reader(sock)
    try:
        while read(timeout) is not None:
            pass
    except OSError:  # ConnectionError included
        return True
    return False


def s16(data: bytes) -> bytes:
    return struct.pack(">H", len(data)) + data


def message(seq: int, value: bytes, epoch: int) -> bytes:
    """offset, seqNum, producerId, key, epoch, payload, eventType, schemaVersion,
    aggregateVersion, metadata (the document's message layout)."""
    head = struct.pack(">qq", 0, seq) + s16(b"producer") + s16(b"") + struct.pack(">q", epoch)
    return (
        head
        + struct.pack(">i", len(value))
        + value
        + s16(b"")
        + struct.pack(">iq", 0, 0)
        + s16(b"")
    )


def batch(
    values: tuple[bytes, ...] = (b"v",),
    count: int | None = None,
    epoch: int = 0,
    partition: bytes = b"0",
) -> bytes:
    """A batch for topic ``fuzz``, built by hand from the document; ``count`` may lie."""
    head = b"\xba\x7c" + s16(b"fuzz") + s16(partition) + s16(b"1") + b"\x00"
    head += struct.pack(">qqi", 0, 0, len(values) if count is None else count)
    return head + b"".join(message(i, v, epoch) for i, v in enumerate(values))


@pytest.fixture(scope="module")
def plain() -> Iterator[Broker]:
    with faulty() as broker:
        campaign.setup(PROTO, External(HOST, broker.port), 2.0)
        yield broker


# ------------------------------------------------------------------- serving


def test_canary_round_trip_works(plain: Broker) -> None:
    canary = harness.Canary(PROTO, HOST, plain.port, "t", 2.0)
    assert canary.check() == ""
    assert canary.check() == ""  # reads both values back
    assert harness.serves(PROTO, HOST, plain.port, 2.0)


def test_produce_is_acked_with_offsets_and_consumed_back() -> None:
    with faulty() as broker:
        create, again, first, second = ask(
            broker.port,
            b"CREATE fuzz 4",
            b"CREATE fuzz 4",
            batch((b"a", b"b")),
            batch((b"c",), epoch=7),
        )
        assert create == b"OK topic=fuzz partitions=4"
        assert again is not None and again.startswith(b"ERROR: TOPIC_EXISTS")
        acks = [json.loads(r or b"") for r in (first, second)]
        assert [(a["status"], a["last_offset"]) for a in acks] == [("OK", 1), ("OK", 2)]
        assert acks[1]["producer_epoch"] == 7 and acks[1]["producer_id"] == "producer"
        assert PROTO.canary_acked(second or b"") == 2
        (reply,) = ask(broker.port, b"CONSUME fuzz 0 1")
        assert PROTO.canary_values(reply or b"") == [b"b", b"c"]
        (past,) = ask(broker.port, b"CONSUME fuzz 0 9")
        assert past is not None and past.startswith(b"\xba\x7c")
        assert PROTO.canary_values(past) == []
        (listed,) = ask(broker.port, b"LIST")
        assert json.loads(listed or b"") == ["fuzz"]


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"\xff\xfe",
        b"\xba\x7c",
        b"LIST extra",
        b"list",
        b"CONSUME fuzz x 0",
        b"CONSUME nope 0 0",
        b"CONSUME fuzz 99 0",
        b"STREAM fuzz 3 0",
        b"COMMIT t g 0 1",
        batch(count=-1),
        batch(count=2**31 - 1),
        batch() + b"x",
    ],
)
def test_every_other_frame_gets_a_framed_error(plain: Broker, payload: bytes) -> None:
    (reply,) = ask(plain.port, payload)
    assert reply is not None
    assert reply.startswith(b"ERROR: ") or json.loads(reply)["status"] == "ERROR"


def test_a_length_over_the_limit_closes_the_connection(plain: Broker) -> None:
    with connect(plain.port) as sock:
        sock.sendall((FRAME_LIMIT + 1).to_bytes(4, "big"))
        assert closed(sock)


def test_a_half_close_closes_the_connection(plain: Broker) -> None:
    with connect(plain.port) as sock:
        sock.sendall(FRAME_LIMIT.to_bytes(4, "big") + b"LIST")  # a frame it waits the rest of
        sock.shutdown(socket.SHUT_WR)
        assert closed(sock)


@pytest.mark.parametrize("seed", [0, 1])
def test_a_short_campaign_finds_nothing(plain: Broker, seed: int) -> None:
    target = External(HOST, plain.port)
    rows = campaign.run_range(PROTO, target, seed, 0, 300, campaign.Options())
    assert len(rows) == 300
    assert [r for r in rows if r.finding or r.canary == "lost"] == []


def test_a_stream_is_answered_not_left_hanging(plain: Broker) -> None:
    case = FuzzCase(0, "test", "structure", (frame(b"STREAM fuzz 3 0"), frame(b"LIST")))
    result = harness.execute(PROTO, case, HOST, plain.port, 2.0)
    assert result.finding == ""


def test_print_every_frame_prints_a_line_per_frame() -> None:
    with faulty("--print-every-frame") as broker:
        ask(broker.port, b"LIST", b"CREATE t 1", b"")
    frames = [line for line in broker.out.splitlines() if line.startswith("frame ")]
    assert len(frames) == 3 and "b'CREATE t 1'" in frames[1]


def test_sigterm_ends_it_quietly() -> None:
    with faulty() as broker:
        ask(broker.port, b"LIST")
    assert broker.proc.returncode == 0
    assert broker.err == ""


@pytest.mark.parametrize(
    "flags",
    [
        ["--stall-every", "0"],
        ["--stall-every", "x"],
        ["--exit-on-batch-field", "nope=1"],
        ["--exit-on-batch-field", "message_count=x"],
        ["--stop-on", ""],
        ["--port", "x"],
    ],
)
def test_bad_flags_are_a_usage_error(flags: list[str]) -> None:
    r = subprocess.run(
        [sys.executable, str(SCRIPT), *flags], capture_output=True, text=True, timeout=10
    )
    assert r.returncode == 2
    assert "error:" in r.stderr and "Traceback" not in r.stderr


# -------------------------------------------------------------------- faults


@pytest.mark.parametrize(
    ("flags", "served", "fatal", "line"),
    [
        (["--exit-on-batch-field"], batch(), batch(count=-1), "message_count=-1"),
        (["--exit-on-batch-field", "epoch=7"], batch(), batch((b"a", b"b"), epoch=7), "epoch=7"),
        # the header is judged before the messages: a lying count does not save it
        (
            ["--exit-on-batch-field", "partition=0"],
            batch(partition=b"1"),
            batch(count=9),
            "partition=0",
        ),
    ],
)
def test_exit_on_batch_field_crashes(
    flags: list[str], served: bytes, fatal: bytes, line: str
) -> None:
    with faulty(*flags) as broker:
        ok, ack = ask(broker.port, b"CREATE fuzz 4", served)  # other frames are served
        assert ok == b"OK topic=fuzz partitions=4"
        assert json.loads(ack or b"")["status"] == "OK"
        with connect(broker.port) as sock:
            sock.sendall(frame(fatal))
            assert closed(sock)
        assert broker.proc.wait(5) == 70
        assert not harness.accepts(HOST, broker.port, 1.0)
    assert f"fatal: batch field {line}\n" in broker.err


def test_exit_on_batch_field_is_a_crash_to_the_fuzzer() -> None:
    with faulty("--exit-on-batch-field") as broker:
        case = FuzzCase(0, "test", "structure", (frame(batch(count=-1)),))
        result = harness.execute(PROTO, case, HOST, broker.port, 1.0)
        assert result.finding == "CRASH"


def test_stop_on_stops_serving_every_connection() -> None:
    with faulty("--stop-on") as broker, connect(broker.port) as old:
        old.sendall(frame(b"LIST"))
        assert read_frame(old) == b"[]"
        with connect(broker.port) as sock:
            sock.sendall(frame(b"listing"))  # starts with the example, "list"
            assert read_frame(sock, SILENCE) is None
        old.sendall(frame(b"LIST"))
        assert read_frame(old, SILENCE) is None  # old connections are not answered
        with connect(broker.port) as new:  # new ones are accepted, not answered
            new.sendall(frame(b"LIST"))
            assert read_frame(new, SILENCE) is None
            new.shutdown(socket.SHUT_WR)
            assert read_frame(new, SILENCE) is None  # nor closed, even after a half-close
    assert "stopped serving after list\n" in broker.err


def test_stall_every_stalls_exactly_every_nth_connection() -> None:
    with faulty("--stall-every", "3") as broker, contextlib.ExitStack() as stack:
        answered = []
        for n in range(1, 8):
            sock = stack.enter_context(connect(broker.port))
            sock.sendall(frame(b"LIST"))
            wait = SILENCE if n % 3 == 0 else 2.0  # the served ones get the usual deadline
            answered.append(read_frame(sock, wait) is not None)  # a stall is not a close
        assert answered == [True, True, False, True, True, False, True]
