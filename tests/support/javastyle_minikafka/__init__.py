"""The Java-style mini-Kafka peer: a broker and a client written in Java from FACTS.md alone
(JavaStyleBroker.java, JavaStyleClient.java next to this file; their headers say what they
do).  Compiled at test time with Java 17's javac, run as subprocesses, stopped by PID."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

SOURCES = Path(__file__).resolve().parent
JAVAC = Path("/usr/bin/javac")
JAVA = Path("/usr/bin/java")
JVM_FLAGS = ("-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto")
"""A small heap: a 2 GiB length allocates nothing and throws OutOfMemoryError, as it did
for the real server (FACTS.md 1.4), whatever the machine's memory."""
LISTENING = re.compile(r"listening on (\S+):(\d+)")
START_S = 20.0


def compile_into(classes: Path) -> Path:
    """javac both sources into ``classes`` (skip without Java 17's javac, unless on CI)."""
    if not (JAVAC.exists() and JAVA.exists()):
        if os.environ.get("CI"):
            raise AssertionError(f"{JAVAC} is missing on CI")
        pytest.skip(f"{JAVAC} is not installed")
    sources = sorted(str(p) for p in SOURCES.glob("*.java"))
    done = subprocess.run(
        [str(JAVAC), "-Xlint:all", "-Werror", "-d", str(classes), *sources],
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return classes


def broker_command(classes: Path, port: str = "0") -> list[str]:
    return [str(JAVA), *JVM_FLAGS, "-cp", str(classes), "JavaStyleBroker", "--port", port]


@dataclass
class Peer:
    proc: subprocess.Popen[bytes]
    host: str
    port: int
    log: Path

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@contextmanager
def running(classes: Path, log: Path) -> Iterator[Peer]:
    """The Java-style broker on a free port, its output in ``log``; ended by its PID."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            broker_command(classes),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        end = time.monotonic() + START_S
        while (m := LISTENING.search(log.read_text(errors="replace"))) is None:
            assert proc.poll() is None, log.read_text(errors="replace")[-2000:]
            assert time.monotonic() < end, "the Java-style broker did not start"
            time.sleep(0.02)
        yield Peer(proc, m.group(1), int(m.group(2)), log)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)


def client(
    classes: Path, host: str, port: int, *ops: str, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    """The Java-style client: ``ops`` as JavaStyleClient.java's usage says, one connection."""
    return subprocess.run(
        [str(JAVA), *JVM_FLAGS, "-cp", str(classes), "JavaStyleClient", host, str(port), *ops],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
