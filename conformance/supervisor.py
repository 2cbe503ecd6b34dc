"""A target the tool starts itself from the user's command line (``--target-cmd``), for
``run`` and ``fuzz`` alike.

The command is split as a POSIX shell would split it (:func:`shlex.split`) and run
without a shell, in a process group of its own, with ``{port}`` in any word replaced by
a free loopback port picked for each start.  A start is done when the port serves (the
caller's ``serving`` check: the protocol's session opener and its probe request answered)
within the start timeout; a command that exits first, or never serves, is a
:class:`TargetFailed` quoting its last output lines.

Its stdout and stderr (merged) are read by a thread: every line is appended to a log file
and numbered across starts, and the last :data:`KEPT_LINES` are kept, so that a caller can
:meth:`~Supervisor.mark` where a case began and ask what the target printed since
(:meth:`~Supervisor.since`): the panic and its stack when it dies.  Stopping ends the
whole process group (SIGTERM, then SIGKILL after :data:`STOP_GRACE_S`).

What the supervisor tells apart, for the caller to judge: a *crash* (the process exited:
:meth:`~Supervisor.exit_code`), a *stop* (alive, but its port no longer serves: the
caller's probe) and a *panic* (a message in its output while it lives:
:mod:`conformance.panics`).
"""

from __future__ import annotations

import collections
import contextlib
import os
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from conformance import ports
from conformance.client import PARTIAL_REPLY
from conformance.ports import free_port
from conformance.spare import FIRST_POLL_S, POLL_S, STOP_GRACE_S, Serving, Spare, end_group, launch
from conformance.target_output import OutputPipe, read_lines

PLACEHOLDER = "{port}"
TARGET_START_TIMEOUT_S = 30.0
"""``--target-start-timeout``'s default."""
KEPT_LINES = 400
"""Output lines kept in memory (the log file has every line)."""
SETTLE_S = 0.1
SETTLE_CAP_S = 0.5
"""A target that printed within SETTLE_S may still be printing: wait (at most SETTLE_CAP_S)."""
SHOWN_LINES = 10
"""Output lines quoted when a start fails."""
PORT_TRIES = 3
NO_CONNECT = "cannot connect"


def _says_more(seen: str, looked: str) -> bool:
    """Whether a look's ``seen`` replaces what an earlier one saw (``looked``) as the reason
    a target did not serve: a look that connected says more than one that could not, and
    one that saw a reply begin more than a later one that saw nothing (a slow target's
    last look, with the little time left, may see no byte)."""
    if not looked:
        return True
    if seen.startswith(NO_CONNECT):
        return False
    return not (looked.startswith(PARTIAL_REPLY) and not seen.startswith(PARTIAL_REPLY))


"""How a serving check's answer begins when nothing accepted the connection."""


class TargetFailed(Exception):
    """The command could not be run, exited before serving, or never served: ``why``, and
    its last output lines (in ``str()`` too, one per line)."""

    def __init__(self, why: str, shown: Sequence[str] | None = None) -> None:
        self.why, self.shown = why, list(shown) if shown is not None else None
        if shown is None:
            text = why
        elif not shown:
            text = f"{why}; it printed nothing"
        else:
            text = f"{why}; its last output lines:\n" + "\n".join(f"  | {x}" for x in shown)
        super().__init__(text)

    def one_line(self, log: Path | None) -> str:
        """The same in one line: the last line it printed, and where the rest is."""
        where = f" (its output: {log})" if log is not None else ""
        if self.shown is None:
            return self.why + where
        if not self.shown:
            return f"{self.why}; it printed nothing{where}"
        return f"{self.why}; it last printed {self.shown[-1].strip()!r}{where}"


def split(command: str, flag: str = "--target-cmd") -> list[str]:
    """``command`` as words; ValueError saying what is wrong with it."""
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise ValueError(f"{flag} {command!r} cannot be split into words: {exc}") from None
    if not words:
        raise ValueError(f"{flag} is empty: give the command that starts your broker")
    if not any(PLACEHOLDER in w for w in words):
        raise ValueError(
            f"{flag} {command!r} has no {PLACEHOLDER}: the tool picks the port and puts it "
            f"where {PLACEHOLDER} stands (for example 'mybroker --listen {PLACEHOLDER}')"
        )
    return words


def exit_status(code: int) -> str:
    """``exit status 2`` or ``killed by signal 6 (SIGABRT)``, from a Popen return code."""
    if code >= 0:
        return f"exit status {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        return f"killed by signal {-code}"
    return f"killed by signal {-code} ({name})"


class Supervisor:
    """One target process at a time, started from ``command`` (with ``spare``, the next one
    is started ahead, :mod:`conformance.spare`); see the module's text."""

    host = "127.0.0.1"

    def __init__(
        self,
        command: str,
        serving: Serving,
        start_timeout: float,
        deadline: float,
        log_path: Path | None = None,
        flag: str = "--target-cmd",
        spare: bool = False,
    ) -> None:
        self.words = split(command, flag)
        self.command, self.flag = command, flag
        self.serving, self.start_timeout, self.deadline = serving, start_timeout, deadline
        self.log_path = log_path
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.reader: threading.Thread | None = None
        self.pipe: OutputPipe | None = None
        self.port_taken = False
        """Whether, in the last start, an older process answered on the target's port."""
        self.lines: collections.deque[tuple[int, float, str]] = collections.deque(maxlen=KEPT_LINES)
        """``(number, time.monotonic() when read, text)`` of the last lines."""
        self.last_read = 0.0
        self.count = 0
        """Lines read so far, every start together (the number of the next line)."""
        self.first_of_start = 0
        """The number of the first line of the current start."""
        self.lock = threading.Lock()
        self.starts = 0
        self.start_s = 0.0
        """How long the last start took to serve."""
        self.spare = spare
        """Keep the next copy started ahead (:mod:`conformance.spare`)."""
        self._spare: Spare | None = None
        self.spare_failed = ""
        """Why spares were given up ('' while they serve, or none is made)."""

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    # ----------------------------------------------------------------- start, stop

    def start(self) -> None:
        """Start the command on a new port and wait until it serves; TargetFailed if not.

        A start whose port another process took first (see :mod:`conformance.ports`) is
        made again on another port, up to :data:`PORT_TRIES` times."""
        for left in range(PORT_TRIES - 1, -1, -1):
            try:
                self._start_once()
                break
            except TargetFailed:
                if not (self.port_taken and left):
                    raise
        self._start_spare()

    def _start_once(self) -> None:
        self.port, self.port_taken = free_port(), False
        argv = [w.replace(PLACEHOLDER, str(self.port)) for w in self.words]
        with self.lock:
            self.first_of_start = self.count
        began = time.monotonic()
        try:
            self.proc = launch(argv)
        except OSError as exc:
            raise TargetFailed(
                f"cannot run {self.flag} {argv[0]!r}: {exc.strerror or exc} (it runs "
                "without a shell: give a program's path, not a shell line)"
            ) from None
        self.starts += 1
        assert self.proc.stdout is not None
        self.pipe = OutputPipe(self.proc.stdout, self.log_path)
        self.reader = threading.Thread(
            target=read_lines, args=(self.pipe, self._take, self.lock), daemon=True
        )
        self.reader.start()
        try:
            self._wait_serving()
        except BaseException:  # TargetFailed, or Ctrl-C while it starts: nothing left behind
            self.close()
            raise
        self.start_s = time.monotonic() - began

    def restart(self) -> None:
        """Stop the current copy and start one: the spare, if it serves (see
        :mod:`conformance.spare`), else a new start."""
        self._stop()
        spare, self._spare = self._spare, None
        if spare is None or not self._take_over(spare):
            self.start()
        else:
            self._start_spare()

    def _start_spare(self) -> None:
        """Start the next copy now, while this one serves (with ``spare`` only)."""
        if not self.spare or self.spare_failed or self._spare is not None:
            return
        port = free_port()
        argv = [w.replace(PLACEHOLDER, str(port)) for w in self.words]
        try:
            self._spare = Spare(
                argv, port, self.serving, (self.start_timeout, self.deadline), self.lock, KEPT_LINES
            )
        except OSError as exc:
            self.spare_failed = f"the spare copy could not be run: {exc.strerror or exc}"

    def _take_over(self, spare: Spare) -> bool:
        """Make ``spare`` the current copy if it serves; else end it and make no more."""
        if not spare.wait():
            self.spare_failed = spare.why or "the spare copy did not serve"
            spare.close()
            return False
        with self.lock:
            self.first_of_start = self.count
            spare.take_over(self._take, self.log_path)
        self.proc, self.pipe, self.reader = spare.proc, spare.pipe, spare.reader
        self.port = spare.port
        self.port_taken, self.starts, self.start_s = False, self.starts + 1, spare.start_s
        return True

    def _take(self, line: str) -> None:
        """One output line read (the lock is held)."""
        self.last_read = time.monotonic()
        self.lines.append((self.count, self.last_read, line))
        self.count += 1

    def _wait_serving(self) -> None:
        assert self.proc is not None
        end = time.monotonic() + self.start_timeout
        pause = FIRST_POLL_S
        looked = ""
        while True:
            code = self.proc.poll()
            if code is not None:  # what it started in its group goes with it (in close)
                self._join_reader()
                how = f"exited with code {code}" if code >= 0 else f"was {exit_status(code)}"
                raise TargetFailed(
                    f"{self.flag} {how} before serving on port {self.port}", self._last_lines()
                )
            left = end - time.monotonic()
            if left <= 0:
                raise TargetFailed(self._not_serving(looked), self._last_lines())
            seen = self.serving(self.host, self.port, min(self.deadline, max(left, POLL_S)))
            if isinstance(seen, str) and _says_more(seen, looked):
                looked = seen
            if seen is True:
                if not ports.stranger_listens(self.port, self.proc.pid):
                    return
                self.port_taken = True  # not its answer: wait for it to fail to bind
            time.sleep(pause)
            pause = min(pause * 2, POLL_S)

    def _not_serving(self, looked: str) -> str:
        said = (
            f"{self.flag} did not serve on port {self.port} within --target-start-timeout "
            f"{self.start_timeout:g} s"
        )
        if self.port_taken:
            return f"{said}: an older process answered on that port"
        if looked and not looked.startswith(NO_CONNECT):  # it listens, but
            return f"{said}: it accepts connections, but the protocol's probe got: {looked}"
        return (
            f"{said}: check that it listens on {PLACEHOLDER} (it runs without a shell: no "
            "pipes, '&&' or VAR=value)"
        )

    def _last_lines(self) -> list[str]:
        return self.since(self.first_of_start)[-SHOWN_LINES:]

    def _join_reader(self) -> None:
        if self.reader is not None:
            self.reader.join(STOP_GRACE_S)

    def close(self) -> None:
        """Stop the current copy, and the spare if there is one."""
        spare, self._spare = self._spare, None
        if spare is not None:
            spare.close()
        self._stop()

    def _stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        end_group(proc)
        self._join_reader()
        with self.lock:  # the reader thread, if still there, sees it closed before it reads
            if self.pipe is not None:
                self.pipe.close()

    # ------------------------------------------------------------------ looking at it

    def mark(self) -> int:
        """The number of the next output line (where a case begins)."""
        with self.lock:
            return self.count

    def since(self, mark: int) -> list[str]:
        """The lines printed from ``mark`` on that are still kept (all, once it died)."""
        return [line for _, line in self.window(mark)[1]]

    def window(self, mark: int, settle: bool = True) -> tuple[int, list[tuple[float, str]]]:
        """The lines printed from ``mark`` on, with when each was read, and the number of
        the next line (where the next window begins).  Once the process has died, what is
        left of its group is ended and every line it wrote is read first; while it lives,
        a reader still busy (a line within :data:`SETTLE_S`) is given up to
        :data:`SETTLE_CAP_S` to finish what it is printing (unless ``settle`` is false:
        the fuzzer looks after every case and cannot wait)."""
        if self.proc is not None and self.proc.poll() is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)  # its children hold the pipe open
            self._join_reader()
        elif settle:
            end = time.monotonic() + SETTLE_CAP_S
            while time.monotonic() - self.last_read < SETTLE_S and time.monotonic() < end:
                time.sleep(SETTLE_S / 4)
                self._catch_up()
        self._catch_up()  # what it printed before now is in the window, reader thread or not
        with self.lock:
            return self.count, [(t, line) for n, t, line in self.lines if n >= mark]

    def _catch_up(self) -> None:
        """Read what the pipe holds now, in the caller's thread."""
        with self.lock:
            if self.pipe is not None:
                self.pipe.drain(self._take)

    def output(self) -> list[str]:
        """What the current (or last) start printed, as far as it is kept."""
        return self.since(self.first_of_start)

    def exit_code(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def describe(self) -> str:
        pid = f" (pid {self.proc.pid})" if self.proc is not None else ""
        return f"{self.flag} {self.words[0]}{pid} on {self.address}"


def interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # so that every target the command started is stopped


def on_termination() -> None:
    """SIGTERM and SIGHUP (a cancelled CI job, a closed terminal) end the command as Ctrl-C
    does: ``finally`` blocks run and the target's process group is stopped."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupted)


__all__ = ["Supervisor", "TargetFailed", "exit_status", "free_port", "on_termination", "split"]
