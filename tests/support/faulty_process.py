"""Start the faulty Cursus broker (``tests/support/faulty_cursus.py``) as a subprocess for
a test; it is stopped by its PID when the test is done, and must not have crashed."""

from __future__ import annotations

import contextlib
import re
import select
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "faulty_cursus.py"


@dataclass
class Broker:
    proc: subprocess.Popen[str]
    port: int
    out: str = ""
    err: str = ""

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it lingers; collects its stdout and stderr."""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.out, self.err = self.proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.out, self.err = self.proc.communicate(timeout=5)


@contextlib.contextmanager
def faulty(*flags: str) -> Iterator[Broker]:
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--port", "0", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    broker = Broker(proc, 0)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 10)
        line = proc.stdout.readline() if ready and proc.stdout else ""
        m = re.fullmatch(r"serving cursus on 127\.0\.0\.1:(\d+)\n", line)
        assert m, f"no serving line, got {line!r}"
        broker.port = int(m.group(1))
        yield broker
    finally:
        broker.stop()
    assert "Traceback" not in broker.err, broker.err
