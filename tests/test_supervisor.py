"""The supervisor's reading of a target's output: a line the target printed before it
answered a request is in the window the caller reads after the answer, however late the
reader thread runs; every line goes to the log file; a last line without a newline is kept.

The target is a few lines of Python started by the supervisor: on each connection it
prints ``request N`` (flushed), then answers ``ok``; after ``--exit-after`` connections it
prints a line without a newline and exits 3.
"""

from __future__ import annotations

import shlex
import socket
import sys
import time
from pathlib import Path

import pytest

from conformance import ports, supervisor, target_output
from conformance.supervisor import Supervisor

TARGET = """
import socket, sys
port, exit_after = int(sys.argv[1]), int(sys.argv[2])
server = socket.create_server(("127.0.0.1", port))
print("listening", flush=True)
n = 0
while True:
    conn, _ = server.accept()
    if conn.recv(16) == b"probe":
        conn.close()
        continue
    n += 1
    print(f"request {n}", flush=True)
    conn.sendall(b"ok")
    conn.close()
    if n == exit_after:
        sys.stdout.write("cut short")
        sys.stdout.flush()
        sys.exit(3)
"""


def serving(host: str, port: int, timeout: float) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(b"probe")
        return True
    except OSError:
        return False


def ask(sup: Supervisor) -> bytes:
    with socket.create_connection((sup.host, sup.port), timeout=5) as sock:
        sock.sendall(b"hello")
        return sock.recv(16)


@pytest.fixture
def started(tmp_path: Path):
    script = tmp_path / "target.py"
    script.write_text(TARGET)
    command = shlex.join([sys.executable, str(script), "{port}", "3"])
    sup = Supervisor(command, serving, start_timeout=20, deadline=2, log_path=tmp_path / "out.log")
    sup.start()
    try:
        yield sup
    finally:
        sup.close()


def test_a_line_printed_before_the_answer_is_in_the_window_at_once(
    started: Supervisor, monkeypatch: pytest.MonkeyPatch
) -> None:
    waited = target_output.OutputPipe.wait

    def late(self: target_output.OutputPipe) -> bool:  # a reader thread left waiting
        time.sleep(3)
        return waited(self)

    monkeypatch.setattr(target_output.OutputPipe, "wait", late)
    time.sleep(target_output.WAIT_S * 2)  # the reader thread is now in the late wait
    mark = started.mark()
    assert ask(started) == b"ok"
    end, lines = started.window(mark, settle=False)
    assert [line for _, line in lines] == ["request 1"]
    assert end == mark + 1


def test_every_line_is_logged_and_a_cut_last_line_is_kept(
    started: Supervisor, tmp_path: Path
) -> None:
    first = started.first_of_start
    for _ in range(3):
        assert ask(started) == b"ok"
    deadline = time.monotonic() + 10
    while started.running() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started.exit_code() == 3
    said = started.since(first)
    assert said == ["listening", "request 1", "request 2", "request 3", "cut short"]
    assert (tmp_path / "out.log").read_text().splitlines() == said
    started.restart()
    assert started.first_of_start == first + len(said)
    assert started.output() == ["listening"]


def test_a_port_an_older_process_took_is_not_taken_for_the_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The port picked for a start is taken by another process before the target binds it:
    the stranger's answer is not the target's; the start is made again on another port."""
    stranger = socket.create_server(("127.0.0.1", 0))
    taken = stranger.getsockname()[1]
    picks = iter([taken])
    monkeypatch.setattr(supervisor, "free_port", lambda: next(picks, ports.free_port()))
    script = tmp_path / "target.py"
    script.write_text(TARGET)
    command = shlex.join([sys.executable, str(script), "{port}", "3"])
    sup = Supervisor(command, serving, start_timeout=20, deadline=2)
    try:
        sup.start()
        assert sup.port != taken
        assert sup.starts == 2
        assert ask(sup) == b"ok"
        assert sup.since(sup.first_of_start) == ["listening", "request 1"]
    finally:
        sup.close()
        stranger.close()


def test_free_ports_are_below_the_ephemeral_range() -> None:
    low, _ = ports.ephemeral_range()
    picked = {ports.free_port() for _ in range(20)}
    assert all(ports.PORT_FLOOR <= p < low for p in picked), picked
    assert len(picked) > 10  # at random, not one after another


def test_output_that_never_ends_a_line_is_cut_in_lines(tmp_path: Path) -> None:
    script = tmp_path / "chatty.py"
    script.write_text(
        "import socket, sys\n"
        "server = socket.create_server(('127.0.0.1', int(sys.argv[1])))\n"
        "sys.stdout.write('.' * 200000)\n"
        "sys.stdout.flush()\n"
        "while True:\n"
        "    server.accept()[0].close()\n"
    )
    command = shlex.join([sys.executable, str(script), "{port}"])
    sup = Supervisor(command, serving, start_timeout=20, deadline=2)
    sup.start()
    try:
        deadline = time.monotonic() + 10
        while sum(map(len, sup.output())) < 200000 and time.monotonic() < deadline:
            time.sleep(0.05)
        lines = sup.output()
        assert sum(map(len, lines)) >= 200000 - target_output.LINE_CAP
        assert max(map(len, lines)) <= target_output.LINE_CAP + 65536
    finally:
        sup.close()
