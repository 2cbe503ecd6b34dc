"""Start the reference broker as a subprocess for a test, and stop it by its PID."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

SERVING = re.compile(r"serving (\S+) on (\S+):(\d+)")


@dataclass
class Broker:
    proc: subprocess.Popen[str]
    host: str
    port: int

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
        for f in (self.proc.stdout, self.proc.stderr):
            if f is not None:
                f.close()


def start(*args: str, protocol: str = "cursus", deadline: float = 20.0) -> Broker:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "conformance",
            "serve",
            "--protocol",
            protocol,
            "--port",
            "0",
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, end - time.monotonic()))
        if not ready:
            break
        line = proc.stdout.readline()
        if not line:
            break
        m = SERVING.search(line)
        if m:
            return Broker(proc, m.group(2), int(m.group(3)))
    proc.kill()
    _, err = proc.communicate(timeout=10)
    raise RuntimeError(f"broker did not start: {err.strip()[-500:]}")


@contextmanager
def running(*args: str, protocol: str = "cursus") -> Iterator[Broker]:
    broker = start(*args, protocol=protocol)
    try:
        yield broker
    finally:
        broker.stop()
