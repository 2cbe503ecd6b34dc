"""What a campaign fuzzes: a ``HOST:PORT``, or the embedded reference broker.

The embedded broker runs as a subprocess (``conformance serve --port 0``) so that a crash
it is made to have cannot take the fuzzer down; it can be restarted after a CRASH (or a
CORRUPTION, to continue from a clean state) and its resident memory read for the LEAK
check.  Its stderr goes to ``broker.log`` in the campaign's output folder.  A target
given by address can do neither: a campaign against it stops at its first crash.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from conformance.fuzz import harness
from conformance.runner import parse_target, spawn_broker, stop_process


class Target:
    restartable = False

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def restart(self) -> None:
        raise RuntimeError(f"{self.address} cannot be restarted by the fuzzer")

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

    def restart(self) -> None:
        self.close()
        self._start()

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
