"""A warm spare: the next copy of a ``--target-cmd`` target, started while the current
copy serves, so that a restart takes a copy that already serves instead of waiting for
one to start.

A target that stops or crashes on a large share of its inputs is restarted after each of
them; with a JVM that costs 0.1 s every time, twice per stop (once to replay the case
that did it, once to go on).  :class:`Spare` starts a copy of the command on a port of
its own as soon as the current copy serves, looks until it serves too (the caller's
``serving`` check, as for any start), and keeps what it prints aside until the supervisor
takes it over (:meth:`Spare.take_over`): its lines are then numbered after the last
copy's and written to the log, as if it had been started at that moment.

Two copies of the command run at once, each on its own port: a command that binds a
fixed second port or locks a data folder cannot have a spare.  A spare that does not
serve is not an error (the supervisor starts a copy the usual way, which says what went
wrong); the supervisor then stops making spares (:attr:`Spare.why`).

The process-group helpers here (:func:`launch`, :func:`end_group`) are the supervisor's
too: a copy is always started in a group of its own and ended with everything it started.
"""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from conformance import ports
from conformance.target_output import OutputPipe, read_lines

STOP_GRACE_S = 3.0
POLL_S = 0.1
FIRST_POLL_S = 0.01
"""A start is looked at after 0.01 s, then twice as long each time up to POLL_S (a JVM
serves in about 0.05 s: a fixed 0.1 s poll made every restart cost 0.1 s more)."""

Serving = Callable[[str, int, float], "bool | str"]
"""``serving(host, port, timeout)``: whether the target answers a probe on a fresh
connection: True, or False or what the look saw instead (``'closed before replying'``)."""


def launch(argv: list[str]) -> subprocess.Popen[bytes]:
    """Run ``argv`` without a shell, in a process group of its own, stdout and stderr merged
    into one pipe (OSError if it cannot be run)."""
    return subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def end_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to ``proc``'s group, SIGKILL to what is left after STOP_GRACE_S."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(STOP_GRACE_S)
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the rest of its group
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(STOP_GRACE_S)


class Spare:
    """One copy of the command started ahead on ``port``; see the module's text.

    ``lock`` is the supervisor's: the spare's reader thread holds it while it reads, so
    that :meth:`take_over` (called with it held) sees every line exactly once."""

    host = "127.0.0.1"

    def __init__(
        self,
        argv: list[str],
        port: int,
        serving: Serving,
        timeouts: tuple[float, float],
        lock: threading.Lock,
        kept: int,
    ) -> None:
        self.port, self.serving, (self.start_timeout, self.deadline) = port, serving, timeouts
        self.began = time.monotonic()
        self.proc = launch(argv)
        assert self.proc.stdout is not None
        self.pipe = OutputPipe(self.proc.stdout, None)
        self.pending: collections.deque[str] = collections.deque(maxlen=kept)
        """What it printed before it was taken over (the last ``kept`` lines)."""
        self.owner: Callable[[str], None] | None = None
        self.ready = threading.Event()
        """Set when it serves, or when it is known it will not."""
        self.serves = False
        self.start_s = 0.0
        """How long it took to serve."""
        self.why = ""
        """Why it did not serve ('' while it may)."""
        self._cancel = threading.Event()
        self.lock = lock
        self.reader = threading.Thread(
            target=read_lines, args=(self.pipe, self._take, lock), daemon=True
        )
        self.reader.start()
        threading.Thread(target=self._prepare, name="target-spare", daemon=True).start()

    def _take(self, line: str) -> None:
        """One line read (the lock is held): aside until taken over, then the owner's."""
        if self.owner is not None:
            self.owner(line)
        else:
            self.pending.append(line)

    def _prepare(self) -> None:
        end = self.began + self.start_timeout
        pause = FIRST_POLL_S
        try:
            while not self._cancel.is_set():
                code = self.proc.poll()
                left = end - time.monotonic()
                if code is not None:
                    self.why = f"the spare copy exited with code {code} before serving"
                    return
                if left <= 0:
                    self.why = f"the spare copy did not serve within {self.start_timeout:g} s"
                    return
                timeout = min(self.deadline, max(left, POLL_S))
                if self.serving(self.host, self.port, timeout) is True:
                    if ports.stranger_listens(self.port, self.proc.pid):
                        self.why = "an older process answered on the spare copy's port"
                        return
                    self.serves, self.start_s = True, time.monotonic() - self.began
                    return
                time.sleep(pause)
                pause = min(pause * 2, POLL_S)
        finally:
            self.ready.set()

    def wait(self) -> bool:
        """Wait until it serves (True) or is known not to (False), a start timeout at most;
        True only if it still runs."""
        self.ready.wait(self.start_timeout)
        if self.serves and self.proc.poll() is not None:
            self.serves, self.why = False, "the spare copy exited after it served"
        return self.serves

    def take_over(self, owner: Callable[[str], None], log_path: Path | None) -> None:
        """From now on its lines are ``owner``'s (the lock is held), those aside first."""
        self.pipe.open_log(log_path)
        for line in self.pending:
            owner(line)
            self.pipe.log_line(line)
        self.pending.clear()
        self.owner = owner

    def close(self) -> None:
        """End the copy and its reader (a spare never taken over)."""
        self._cancel.set()
        end_group(self.proc)
        self.reader.join(STOP_GRACE_S)
        with self.lock:
            self.pipe.close()
