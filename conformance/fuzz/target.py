"""What a campaign fuzzes: a ``HOST:PORT``, the embedded reference broker, or a command.

The embedded broker runs as a subprocess (``conformance serve --port 0``) so that a crash
it is made to have cannot take the fuzzer down; it can be restarted after a CRASH or a
STOPPED (or a CORRUPTION, to continue from a clean state) and its resident memory read
for the LEAK check.  Its stderr goes to ``broker.log`` in the campaign's output folder.
A broker started from the user's command line (``--target-cmd``, :mod:`owned`) can be
restarted too.  A target given by address can be neither restarted nor read: a campaign
against it stops at the first case after which it no longer accepts or serves, and a
minimization can only wait for someone else to bring it back.
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

from conformance import panics
from conformance.embedded import spawn_broker, stop_process
from conformance.fuzz import harness
from conformance.fuzz.case import FuzzProtocol
from conformance.runner import parse_target

BACK_POLL_S = 0.25


class TargetLost(Exception):
    """The target is down and did not come back (the message says why)."""


class Target:
    restartable = False
    reads_output = False
    """Its output is read line by line (a target started from ``--target-cmd``)."""
    looks = harness.CONFIRMED
    """How a silence of it is judged a stop (:class:`harness.Looks`)."""
    lost = ""
    """Why the target was lost during a campaign ('' while it is not)."""
    down_output: list[str] = []  # noqa: RUF012 (replaced, never changed in place)
    """What it printed last before it last went down (a target the fuzzer started)."""
    patterns: tuple[re.Pattern[str], ...] = ()
    """``--panic-pattern``: lines of its output that mean it broke, besides the default."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def _start(self) -> None:
        raise RuntimeError(f"{self.address} cannot be started by the fuzzer")

    def restart(self) -> None:
        """Stop and start it again (a target the fuzzer started itself)."""
        if not self.restartable:
            raise RuntimeError(f"{self.address} cannot be restarted by the fuzzer")
        self.close()
        self._start()

    def bring_back(self, proto: FuzzProtocol, timeout: float, deadline: float) -> None:
        """Restart it, or (when the fuzzer cannot) wait up to ``timeout`` seconds for it to
        serve again; TargetLost if it does not."""
        if self.restartable:
            try:
                self.restart()
            except Exception as exc:  # a start that failed, said in one line
                raise TargetLost(f"{self.describe()} did not restart: {exc}") from None
            return
        end = time.monotonic() + timeout
        while True:
            if harness.serves(proto, self.host, self.port, deadline):
                return
            if time.monotonic() >= end:
                raise TargetLost(
                    f"{self.describe()} did not serve again within {timeout:g} s; "
                    "the fuzzer cannot restart a target given by --target"
                )
            time.sleep(BACK_POLL_S)

    def looked_too_soon(self) -> None:
        """A silence its looks took for a stop was not one (it was slow): look longer."""

    def output(self) -> list[str]:
        """The last lines the target printed (only a target the fuzzer started has any)."""
        return []

    def output_mark(self) -> int:
        """Where what it prints from now on begins (see :meth:`panic_since`)."""
        return 0

    def panic_since(self, mark: int, settle: bool = True) -> tuple[int, panics.Panic | None]:
        """The first panic it printed from ``mark`` on (:mod:`conformance.panics`), and the
        mark after what was read; only a target the fuzzer started has an output to read."""
        return mark, None

    def rss_bytes(self) -> int | None:
        return None

    def alive(self, timeout: float) -> bool:
        """True if it accepts a new connection."""
        return harness.accepts(self.host, self.port, timeout)

    def describe(self) -> str:
        return self.address

    def close(self) -> None:
        pass


class External(Target):
    @classmethod
    def parse(cls, text: str) -> External:
        return cls(*parse_target(text))


class Embedded(Target):
    restartable = True

    def __init__(
        self, protocol: str, quirks: list[str], log_path: Path, serve_args: tuple[str, ...] = ()
    ) -> None:
        self.protocol, self.quirks, self.log_path = protocol, quirks, log_path
        self.serve_args = serve_args
        """Further ``serve`` options (the protocol's, shared with ``fuzz``)."""
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        super().__init__("127.0.0.1", 0)
        self._start()

    def _start(self) -> None:
        proc, address = spawn_broker(self.protocol, self.quirks, self.log_path, *self.serve_args)
        self.proc = proc
        self.starts += 1
        self.host, self.port = parse_target(address)

    def rss_bytes(self) -> int | None:
        if self.proc is None:
            return None
        try:
            status = Path(f"/proc/{self.proc.pid}/status").read_text()
        except OSError:
            return None
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return None

    def alive(self, timeout: float) -> bool:
        return self.proc is not None and self.proc.poll() is None and super().alive(timeout)

    def describe(self) -> str:
        quirks = "".join(f" --quirk {q}" for q in self.quirks)
        return f"embedded {self.protocol} broker{quirks} on {self.address}"

    def close(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
            self.proc = None
