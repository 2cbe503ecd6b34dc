"""``conformance serve --protocol v1line`` as a subprocess, and a blocking V1 line client, for
the V1 line broker tests.

The broker is started on a port the system picks, found by its line ``serving v1line on
HOST:PORT``, with stdout and stderr in files (a broker that logs must never block on a pipe
nobody reads), and stopped or killed by its PID.  The client sends raw bytes and reads reply
lines; every read has a deadline (``DEADLINE_S`` unless told), and a closed connection is an
error, never an empty reply.  Nothing here knows the protocol's grammar beyond "one line per
reply": tests compare reply lines as text.
"""

from __future__ import annotations

import atexit
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SERVING = re.compile(r"serving v1line on (\S+):(\d+)")
START_DEADLINE_S = 20.0
STOP_DEADLINE_S = 10.0
DEADLINE_S = 5.0
COMMAND = [sys.executable, "-m", "conformance"]


@dataclass
class Served:
    proc: subprocess.Popen[bytes]
    host: str
    port: int
    out: Path
    err: Path
    revision: str = "doc"

    def log(self, tail: int = 2000) -> str:
        """The end of what the broker wrote on stdout and stderr."""
        text = self.out.read_text(errors="replace") + self.err.read_text(errors="replace")
        return text[-tail:]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL by PID, as a crash would; waits for the process to be gone."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(STOP_DEADLINE_S)

    def stop(self) -> None:
        """SIGTERM by PID, SIGKILL if it is still there after STOP_DEADLINE_S."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(STOP_DEADLINE_S)
            except subprocess.TimeoutExpired:
                self.kill()

    def connect(self, timeout: float = DEADLINE_S) -> Client:
        return Client(self.host, self.port, timeout)


_OUTPUTS: list[Path] = []
"""The folders :func:`start` made for brokers' output, removed when the test process ends."""


@atexit.register
def _remove_outputs() -> None:
    for folder in _OUTPUTS:
        shutil.rmtree(folder, ignore_errors=True)


def start(*args: str, revision: str = "doc", directory: Path | None = None) -> Served:
    """Start the broker with ``args`` (v1line or generic serve options), its output in files
    under ``directory`` (by default a folder of its own, removed when the test process ends:
    nothing is left in /tmp)."""
    if directory is None:
        directory = Path(tempfile.mkdtemp(prefix="v1line-serve-"))
        _OUTPUTS.append(directory)
    where = directory
    where.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix="out-", suffix=".txt", dir=where)
    os.close(fd)
    out, err = Path(name), Path(name[: -len(".txt")] + ".err.txt")
    command = [*COMMAND, "serve", "--protocol", "v1line", "--host", "127.0.0.1", "--port", "0"]
    with out.open("wb") as out_f, err.open("wb") as err_f:
        proc = subprocess.Popen(
            [*command, "--revision", revision, *args],
            stdin=subprocess.DEVNULL,
            stdout=out_f,
            stderr=err_f,
        )
    end = time.monotonic() + START_DEADLINE_S
    while time.monotonic() < end:
        m = SERVING.search(out.read_text(errors="replace"))
        if m:
            return Served(proc, m.group(1), int(m.group(2)), out, err, revision)
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    served = Served(proc, "", 0, out, err)
    served.stop()
    raise RuntimeError(f"conformance serve --protocol v1line did not start: {served.log(800)}")


@contextmanager
def running(*args: str, revision: str = "doc", directory: Path | None = None) -> Iterator[Served]:
    served = start(*args, revision=revision, directory=directory)
    try:
        yield served
    finally:
        served.stop()


class Client:
    """One TCP connection: send bytes, read ``\\n``-terminated reply lines with deadlines."""

    def __init__(self, host: str, port: int, timeout: float = DEADLINE_S) -> None:
        self.timeout = timeout
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = b""

    def send(self, data: bytes) -> None:
        self.sock.settimeout(self.timeout)
        self.sock.sendall(data)

    def _fill(self, deadline: float) -> bool:
        """Read what arrives before ``deadline`` (monotonic); False on end of stream."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no reply line before the deadline")
        self.sock.settimeout(left)
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            return False
        self.buf += chunk
        return True

    def line(self, timeout: float | None = None) -> str:
        """The next reply line without its ``\\n``; raises TimeoutError or ConnectionError."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while b"\n" not in self.buf:
            if not self._fill(deadline):
                raise ConnectionError(f"the broker closed the connection (unread {self.buf!r})")
        text, _, self.buf = self.buf.partition(b"\n")
        return text.decode("utf-8", "replace")

    def raw(self, line: bytes) -> str:
        """Send ``line`` (``\\n`` added) and read one reply line."""
        self.send(line + b"\n")
        return self.line()

    def call(self, cid: str | int, command: str, args: str = "") -> str:
        """``V1|cid|command|args`` and its reply line."""
        return self.raw(f"V1|{cid}|{command}|{args}".encode())

    def silent_for(self, seconds: float) -> bool:
        """True when nothing arrives for ``seconds`` (and the connection stays open)."""
        if self.buf:
            return False
        ready, _, _ = select.select([self.sock], [], [], seconds)
        return not ready

    def closed_within(self, seconds: float) -> bool:
        """True when the broker ends the connection within ``seconds`` (what it sent before
        is kept in ``buf``); False if it is still open then."""
        deadline = time.monotonic() + seconds
        try:
            while self._fill(deadline):
                pass
        except TimeoutError:
            return False
        except ConnectionResetError:
            return True
        return True

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


FIELD = re.compile(r"(\w+)=(\[[^\]]*\]|\S*)")


def fields(reply: str) -> dict[str, str]:
    """The ``key=value`` fields of an OK reply's payload (lists kept as ``[..]`` text)."""
    parts = reply.split("|", 3)
    assert len(parts) == 4 and parts[2] == "OK", f"not an OK reply with a payload: {reply!r}"
    return dict(FIELD.findall(parts[3]))


def messages(reply: str) -> tuple[list[tuple[int, str]], int]:
    """A CONSUME reply's ``(offset, value)`` items and its hw (values without ``,``)."""
    parts = reply.split("|", 3)
    assert len(parts) == 4 and parts[2] == "OK", f"not a CONSUME reply: {reply!r}"
    m = re.fullmatch(r"messages=(.*) hw=(-?\d+)", parts[3], re.DOTALL)
    assert m, f"not a CONSUME payload: {parts[3]!r}"
    items = []
    for item in m.group(1).split(",") if m.group(1) else []:
        offset, _, value = item.partition(":")
        items.append((int(offset), value))
    return items, int(m.group(2))


def fnv1a32(data: bytes) -> int:
    """FNV-1a, 32 bits (offset basis 2166136261, prime 16777619)."""
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def partition_of(key: str, partitions: int = 3) -> int:
    """The partition PRODUCE places a key on (V1L-PROD-10): FNV-1a 32-bit modulo the count."""
    return fnv1a32(key.encode()) % partitions


def int_list(text: str) -> list[int]:
    """``[0 1 2]`` -> ``[0, 1, 2]``."""
    assert text.startswith("[") and text.endswith("]"), f"not a list: {text!r}"
    return [int(x) for x in text[1:-1].split()]
