"""A started target's merged stdout and stderr, read line by line without blocking.

The supervisor (:mod:`conformance.supervisor`) hands every line to its caller's ``take``
and appends it to the log file; output that never ends a line is cut into lines of
:data:`LINE_CAP` bytes, so that no target can make the tool hold an unbounded line.
"""

from __future__ import annotations

import os
import select
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO

WAIT_S = 0.5
"""How often the reader thread looks whether its pipe was closed under it."""
LINE_CAP = 64 * 1024
"""Output bytes without a line end kept before they are taken as a line of their own."""


class OutputPipe:
    """One start's merged stdout and stderr, read without blocking by whoever holds the
    supervisor's lock: its reader thread when bytes arrive, and the supervisor's
    ``window`` before it answers, so that a line the target wrote before a case's reply was read is
    in the window of that case however late the reader thread is scheduled (on a loaded
    machine it can be late by more than a probe's round trip).  Lines go to the log file
    as they are read; a line cut at end of file is kept."""

    def __init__(self, stream: IO[bytes], log_path: Path | None) -> None:
        self.stream, self.fd = stream, stream.fileno()
        os.set_blocking(self.fd, False)
        self.log = log_path.open("a", errors="replace") if log_path else None
        self.partial = b""
        self.ended = False

    def wait(self) -> bool:
        """Block until the pipe has bytes (or ends); False once it is closed or ended."""
        if self.ended:
            return False
        try:
            ready, _, _ = select.select([self.fd], [], [], WAIT_S)
        except (OSError, ValueError):  # closed under us at stop
            return False
        return bool(ready) or not self.stream.closed

    def drain(self, take: Callable[[str], None]) -> bool:
        """Read every byte waiting, hand each whole line to ``take``; False at end of file."""
        while not self.ended and not self.stream.closed:
            try:
                chunk = os.read(self.fd, 65536)
            except BlockingIOError:
                return True
            except (OSError, ValueError):
                chunk = b""
            if not chunk:
                self.ended = True
                if self.partial:
                    self._line(self.partial, take)
                    self.partial = b""
                return False
            *whole, self.partial = (self.partial + chunk).split(b"\n")
            if len(self.partial) > LINE_CAP:  # output that never ends a line is cut in lines
                whole.append(self.partial)
                self.partial = b""
            for raw in whole:
                self._line(raw, take)
        return False

    def _line(self, raw: bytes, take: Callable[[str], None]) -> None:
        line = raw.decode(errors="replace").rstrip("\r")
        take(line)
        self.log_line(line)

    def open_log(self, log_path: Path | None) -> None:
        """Append what is read from now on to ``log_path`` (a spare's pipe, taken over)."""
        if log_path is not None and self.log is None:
            self.log = log_path.open("a", errors="replace")

    def log_line(self, line: str) -> None:
        if self.log is not None:
            self.log.write(line + "\n")
            self.log.flush()

    def finish(self) -> None:
        if self.log is not None:
            self.log.close()
            self.log = None

    def close(self) -> None:
        """Close the pipe (with the supervisor's lock held: a closed descriptor's number
        may be reused at once, and must never be read again)."""
        self.ended = True
        self.stream.close()
        self.finish()


def read_lines(pipe: OutputPipe, take: Callable[[str], None], lock: threading.Lock) -> None:
    """A reader thread: whenever the pipe has bytes, drain it with ``lock`` held (as the
    supervisor's ``window`` does), until end of file or the pipe is closed at stop."""
    try:
        while pipe.wait():
            with lock:
                if not pipe.drain(take):
                    return
    finally:
        with lock:
            pipe.finish()
