"""A warm spare (``Supervisor(spare=True)``, ``fuzz --spare``): the next copy of the target is
started while the current one serves, a restart takes it (its port, its output numbered
after the last copy's, its lines in the log), and a command that cannot run twice at once
gives spares up and is started the usual way.

The target is a few lines of Python started by the supervisor: it prints ``listening <pid>``
and answers ``ok`` on each connection; with ``--lock FILE`` it exits 4 when another copy
holds the lock on FILE (a broker whose data folder two copies cannot share).
"""

from __future__ import annotations

import os
import shlex
import socket
import sys
from pathlib import Path

import pytest

from conformance.supervisor import Supervisor

TARGET = """
import fcntl, os, socket, sys
port = int(sys.argv[1])
if len(sys.argv) > 2:
    held = open(sys.argv[2], "w")
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        print("locked by another copy", flush=True)
        sys.exit(4)
server = socket.create_server(("127.0.0.1", port))
print(f"listening {os.getpid()}", flush=True)
while True:
    conn, _ = server.accept()
    conn.sendall(b"ok")
    conn.close()
"""


def serving(host: str, port: int, timeout: float) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            return sock.recv(2) == b"ok"
    except OSError:
        return False


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def supervisor(tmp_path: Path, *extra: str) -> Supervisor:
    script = tmp_path / "target.py"
    script.write_text(TARGET)
    command = shlex.join([sys.executable, str(script), "{port}", *extra])
    return Supervisor(command, serving, 20, 2, tmp_path / "out.log", spare=True)


def test_a_restart_takes_the_spare_that_already_serves(tmp_path: Path) -> None:
    sup = supervisor(tmp_path)
    sup.start()
    try:
        first = sup.proc
        spare = sup._spare
        assert first is not None and spare is not None
        assert spare.ready.wait(20) and spare.serves, spare.why
        assert spare.port != sup.port
        mark = sup.mark()
        assert not any(str(spare.proc.pid) in line for line in sup.since(mark)), (
            "the spare's output is not the current copy's"
        )
        sup.restart()
        assert sup.proc is spare.proc and sup.port == spare.port and sup.starts == 2
        assert not alive(first.pid)
        assert serving(sup.host, sup.port, 5)
        assert sup.output() == [f"listening {spare.proc.pid}"]  # numbered after the last
        assert f"listening {spare.proc.pid}" in sup.since(mark)
        assert sup._spare is not None and sup._spare is not spare, "the next one is started"
        nxt = sup._spare
    finally:
        sup.close()
    logged = (tmp_path / "out.log").read_text().splitlines()
    assert logged[:2] == [f"listening {first.pid}", f"listening {spare.proc.pid}"]
    assert not alive(spare.proc.pid) and not alive(nxt.proc.pid), "close ends the spare too"


def test_a_command_that_cannot_run_twice_gives_spares_up(tmp_path: Path) -> None:
    sup = supervisor(tmp_path, str(tmp_path / "data.lock"))
    sup.start()
    try:
        spare = sup._spare
        assert spare is not None and spare.ready.wait(20)
        assert not spare.serves and "exited with code 4" in spare.why
        sup.restart()  # started the usual way: the copy before it let go of the lock
        assert serving(sup.host, sup.port, 5) and sup.starts == 2  # (a spare is not one)
        assert "exited with code 4" in sup.spare_failed
        assert sup._spare is None, "no more spares once one could not serve"
        assert not alive(spare.proc.pid)
    finally:
        sup.close()


@pytest.mark.parametrize("spare", [False, True])
def test_restarts_serve_with_and_without_a_spare(tmp_path: Path, spare: bool) -> None:
    sup = supervisor(tmp_path)
    sup.spare = spare
    sup.start()
    try:
        ports = {sup.port}
        for _ in range(3):
            sup.restart()
            assert serving(sup.host, sup.port, 5)
            ports.add(sup.port)
        assert len(ports) == 4 and sup.starts == 4
        assert (sup._spare is not None) == spare
    finally:
        sup.close()
