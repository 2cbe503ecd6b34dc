"""A target the fuzzer owns: the user's broker, started from ``--target-cmd``.

The command is split as a POSIX shell would split it (:func:`shlex.split`) and run
without a shell, in a process group of its own, with ``{port}`` in any word replaced by
a free loopback port picked for each start.  A start is done when the port serves: the
protocol's session opener and its probe request get an answer within
``--target-start-timeout`` seconds.  A command that exits first, or never serves, is a
:class:`TargetFailed` quoting its last output lines.

The fuzzer restarts the target after a CRASH or a STOPPED, so that it can minimize the
finding and go on with the campaign.  Its stdout and stderr (merged) are read by a
thread: every line is appended to a log file, and the last :data:`KEPT_LINES` of the
current start are kept for the reproducer of a crash.  Stopping ends the whole process
group (SIGTERM, then SIGKILL after :data:`STOP_GRACE_S`).
"""

from __future__ import annotations

import collections
import contextlib
import os
import shlex
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import IO

from conformance.fuzz import harness
from conformance.fuzz.case import FuzzProtocol
from conformance.fuzz.target import Target, TargetLost

PLACEHOLDER = "{port}"
KEPT_LINES = 200
STOP_GRACE_S = 3.0
POLL_S = 0.1
SHOWN_LINES = 10
"""Output lines quoted when a start fails."""


class TargetFailed(Exception):
    """The command could not be run, exited before serving, or never served."""


def split(command: str) -> list[str]:
    """``command`` as words; ValueError saying what is wrong with it."""
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise ValueError(f"--target-cmd {command!r} cannot be split into words: {exc}") from None
    if not words:
        raise ValueError("--target-cmd is empty: give the command that starts your broker")
    if not any(PLACEHOLDER in w for w in words):
        raise ValueError(
            f"--target-cmd {command!r} has no {PLACEHOLDER}: the fuzzer picks the port and "
            f"puts it where {PLACEHOLDER} stands (for example 'mybroker --listen {PLACEHOLDER}')"
        )
    return words


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Owned(Target):
    restartable = True

    def __init__(
        self,
        command: str,
        proto: FuzzProtocol,
        start_timeout: float,
        deadline: float,
        log_path: Path | None = None,
    ) -> None:
        super().__init__("127.0.0.1", 0)
        self.words = split(command)
        self.proto, self.start_timeout, self.deadline = proto, start_timeout, deadline
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.reader: threading.Thread | None = None
        self.lines: collections.deque[str] = collections.deque(maxlen=KEPT_LINES)
        self.starts = 0
        self._start()

    # ----------------------------------------------------------------- start, stop

    def _start(self) -> None:
        self.port = free_port()
        argv = [w.replace(PLACEHOLDER, str(self.port)) for w in self.words]
        self.lines = collections.deque(maxlen=KEPT_LINES)
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            raise TargetFailed(
                f"cannot run --target-cmd {argv[0]!r}: {exc.strerror or exc} (it runs "
                "without a shell: give a program's path, not a shell line)"
            ) from None
        self.starts += 1
        assert self.proc.stdout is not None
        self.reader = threading.Thread(
            target=self._read, args=(self.proc.stdout, self.lines), daemon=True
        )
        self.reader.start()
        try:
            self._wait_serving()
        except BaseException:  # TargetFailed, or Ctrl-C while it starts: nothing left behind
            self.close()
            raise

    def _read(self, stream: IO[bytes], lines: collections.deque[str]) -> None:
        log = self.log_path.open("a", errors="replace") if self.log_path else None
        try:
            for raw in stream:
                line = raw.decode(errors="replace").rstrip("\r\n")
                lines.append(line)
                if log is not None:
                    log.write(line + "\n")
                    log.flush()
        except (OSError, ValueError):
            pass  # the pipe was closed under us at stop
        finally:
            if log is not None:
                log.close()

    def _wait_serving(self) -> None:
        assert self.proc is not None
        end = time.monotonic() + self.start_timeout
        while True:
            code = self.proc.poll()
            if code is not None:  # what it started in its group goes with it (in close)
                self._join_reader()
                raise TargetFailed(
                    f"--target-cmd exited with code {code} before serving on port "
                    f"{self.port}{self._last_lines()}"
                )
            left = end - time.monotonic()
            if left <= 0:
                raise TargetFailed(
                    f"--target-cmd did not serve on port {self.port} within "
                    f"--target-start-timeout {self.start_timeout:g} s: check that it listens "
                    f"on {PLACEHOLDER} (it runs without a shell: no pipes, '&&' or "
                    f"VAR=value){self._last_lines()}"
                )
            step = min(self.deadline, max(left, POLL_S))
            if harness.probe(self.proto, self.host, self.port, step) == harness.SERVING:
                return
            time.sleep(POLL_S)

    def _last_lines(self) -> str:
        shown = list(self.lines)[-SHOWN_LINES:]
        if not shown:
            return "; it printed nothing"
        return "; its last output lines:\n" + "\n".join(f"  | {line}" for line in shown)

    def _join_reader(self) -> None:
        if self.reader is not None:
            self.reader.join(STOP_GRACE_S)

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(STOP_GRACE_S)
        with contextlib.suppress(ProcessLookupError, PermissionError):  # the rest of its group
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(STOP_GRACE_S)
        self._join_reader()
        if proc.stdout is not None:
            proc.stdout.close()

    # ------------------------------------------------------------------ looking at it

    def output(self) -> list[str]:
        if self.proc is not None and self.proc.poll() is not None:
            self._join_reader()  # it died: read what it said last
        return list(self.lines)

    def exit_code(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def alive(self, timeout: float) -> bool:
        return self.proc is not None and self.proc.poll() is None and super().alive(timeout)

    def describe(self) -> str:
        pid = f" (pid {self.proc.pid})" if self.proc is not None else ""
        return f"--target-cmd {self.words[0]}{pid} on {self.address}"


__all__ = ["Owned", "TargetFailed", "TargetLost", "free_port", "split"]
