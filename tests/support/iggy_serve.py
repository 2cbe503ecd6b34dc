"""``conformance serve --protocol iggy`` as a subprocess for a test: started on a port the
system picks, found by the line ``serving iggy on HOST:PORT``, stopped by its PID.

Unlike :mod:`tests.support.broker`, the broker's stdout and stderr go to files, not pipes: a
client test sends thousands of requests, and a broker that logs them must never block on a full
pipe nobody reads.  :meth:`Served.log` gives what it wrote, for a failing test's message.
Every wait has a deadline: the start (``START_DEADLINE_S``) and the stop (``STOP_DEADLINE_S``
after SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SERVING = re.compile(r"serving iggy on (\S+):(\d+)")
START_DEADLINE_S = 20.0
STOP_DEADLINE_S = 10.0
COMMAND = [sys.executable, "-m", "conformance"]
"""How ``conformance`` is run (the checkout's package, in this interpreter)."""


@dataclass
class Served:
    proc: subprocess.Popen[bytes]
    host: str
    port: int
    out: Path
    err: Path

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def log(self, tail: int = 2000) -> str:
        """The end of what the broker wrote on stdout and stderr."""
        text = self.out.read_text(errors="replace") + self.err.read_text(errors="replace")
        return text[-tail:]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        """SIGTERM by PID, SIGKILL if it is still there after STOP_DEADLINE_S."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(STOP_DEADLINE_S)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(STOP_DEADLINE_S)


def start(*args: str, directory: Path) -> Served:
    """Start the broker with ``args`` (e.g. ``--revision classic``), its output in files under
    ``directory`` (a test's own temporary folder: nothing is left in /tmp); raise if it does
    not say where it serves within START_DEADLINE_S."""
    where = directory
    where.mkdir(parents=True, exist_ok=True)
    out, err = where / "stdout.txt", where / "stderr.txt"
    with out.open("wb") as out_f, err.open("wb") as err_f:
        proc = subprocess.Popen(
            [*COMMAND, "serve", "--protocol", "iggy", "--port", "0", *args],
            stdin=subprocess.DEVNULL,
            stdout=out_f,
            stderr=err_f,
        )
    end = time.monotonic() + START_DEADLINE_S
    while time.monotonic() < end:
        m = SERVING.search(out.read_text(errors="replace"))
        if m:
            return Served(proc, m.group(1), int(m.group(2)), out, err)
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    served = Served(proc, "", 0, out, err)
    served.stop()
    raise RuntimeError(f"conformance serve --protocol iggy did not start: {served.log(800)}")


@contextmanager
def running(*args: str, directory: Path) -> Iterator[Served]:
    served = start(*args, directory=directory)
    try:
        yield served
    finally:
        served.stop()
