"""The embedded reference broker as a subprocess: ``conformance serve --port 0`` started,
its address read from the line it prints, and stopped by its PID.

``run`` (against no ``--target``), ``run --all`` (``serve --all``) and the fuzzer's
embedded target start it so; a broker that does not start is a UsageError quoting the last
line of its log.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from conformance.exits import UsageError

SERVING = re.compile(r"serving \S+ on (\S+):(\d+)")
START_DEADLINE_S = 30.0


@dataclass
class Embedded:
    proc: subprocess.Popen[bytes]
    address: str


def spawn_broker(
    protocol: str, quirks: list[str], log_path: Path, *extra: str
) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``conformance serve --port 0`` (stderr appended to ``log_path``) and return it
    with the address it says it listens on; a broker that does not start is a UsageError
    quoting the last line of its log."""
    cmd = [sys.executable, "-m", "conformance", "serve", "--protocol", protocol, "--port", "0"]
    cmd += list(extra)
    for q in quirks:
        cmd += ["--quirk", q]
    with log_path.open("a") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log)
    address = wait_serving(proc)
    if address is None:
        stop_process(proc)
        tail = log_path.read_text(errors="replace").strip().splitlines()[-1:]
        raise UsageError(
            f"the embedded {protocol} broker did not start: "
            f"{tail[0] if tail else 'no output'} (see {log_path})"
        )
    return proc, address


@contextlib.contextmanager
def embedded_broker(
    protocol: str, quirks: list[str], reports: Path, *extra: str
) -> Iterator[Embedded]:
    """Start ``conformance serve --port 0`` and yield once it says where it listens."""
    log_path = reports / "broker.log"
    log_path.write_text("")
    proc, address = spawn_broker(protocol, quirks, log_path, *extra)
    try:
        yield Embedded(proc, address)
    finally:
        stop_process(proc)


def wait_serving(proc: subprocess.Popen[bytes]) -> str | None:
    """The address of the first ``serving P on HOST:PORT`` line, None if none comes."""
    said = read_until(proc, lambda text: SERVING.search(text) is not None)
    m = SERVING.search(said or "")
    return f"{m.group(1)}:{m.group(2)}" if m else None


def read_until(proc: subprocess.Popen[bytes], done: Callable[[str], bool]) -> str | None:
    """What ``proc`` printed on stdout once ``done`` holds of it, or None if it ends, or
    :data:`START_DEADLINE_S` passes, first."""
    assert proc.stdout is not None
    end = time.monotonic() + START_DEADLINE_S
    buf = b""
    while time.monotonic() < end:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, end - time.monotonic()))
        if not ready:
            return None
        chunk = os.read(proc.stdout.fileno(), 4096)
        if not chunk:
            return None
        buf += chunk
        text = buf.decode(errors="replace")
        if done(text):
            return text
    return None


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    if proc.stdout is not None:
        proc.stdout.close()
