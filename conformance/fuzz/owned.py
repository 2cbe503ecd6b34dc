"""A target the fuzzer owns: the user's broker, started from ``--target-cmd``.

The process itself (the command split without a shell, ``{port}``, the start timeout, the
output kept and logged, the process group stopped) is :mod:`conformance.supervisor`'s,
shared with ``conformance run``; this module makes it a fuzz :class:`Target`, whose start
is done when the protocol's probe (:func:`harness.probe`) is answered.

The fuzzer restarts the target after a CRASH or a STOPPED, so that it can minimize the
finding and go on with the campaign; what it printed before it went down goes into the
reproducer.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

from conformance import panics
from conformance.fuzz import harness
from conformance.fuzz.case import FuzzProtocol
from conformance.fuzz.target import Target, TargetLost
from conformance.supervisor import Supervisor, TargetFailed, free_port, split

LOOK_SAMPLES = 3
LOOK_FACTOR = 20.0
LOOK_FLOOR_S = 0.1


class Owned(Target):
    restartable = True
    reads_output = True

    def __init__(
        self,
        command: str,
        proto: FuzzProtocol,
        start_timeout: float,
        deadline: float,
        log_path: Path | None = None,
        patterns: Sequence[re.Pattern[str]] = (),
        spare: bool = False,
    ) -> None:
        super().__init__("127.0.0.1", 0)
        self.patterns = tuple(patterns)

        def serving(host: str, port: int, timeout: float) -> bool:
            return harness.probe(proto, host, port, timeout) == harness.SERVING

        self.proto, self.deadline = proto, deadline
        self.floor = LOOK_FLOOR_S
        """The shortest look; doubled each time a look took a slow target for stopped."""
        self.supervisor = Supervisor(
            command, serving, start_timeout, deadline, log_path, spare=spare
        )
        self.words = self.supervisor.words
        self.supervisor.start()
        self._started()

    def restart(self) -> None:
        """Stop it and start it again: its warm spare if it has one that serves."""
        self.supervisor.restart()
        self._started()

    def _started(self) -> None:
        self.port = self.supervisor.port
        self.looks = harness.Looks(0, self._look_timeout(), harness.SILENT_LOOKS)

    def looked_too_soon(self) -> None:
        """A look was silent, but no replay stops a fresh start: the target was slow (a
        loaded machine).  Its looks wait twice as long from now on, this start and the next
        ones, up to the deadline."""
        self.floor = min(self.deadline, max(self.floor, self.looks.timeout or 0.0) * 2)
        self.looks = harness.Looks(0, self.floor, harness.SILENT_LOOKS)

    def _look_timeout(self) -> float:
        """How long one look waits for this start's answer: :data:`LOOK_FACTOR` times the
        median of :data:`LOOK_SAMPLES` probe round trips (the first answers of a JVM are
        slow), at least :data:`LOOK_FLOOR_S` (more once a look took a slow target for
        stopped: :meth:`looked_too_soon`)
        and at most the deadline.  A stop is then judged in one short look on
        :data:`~conformance.fuzz.harness.SILENT_LOOKS` fresh connections at once, every one
        of them silent, not in three deadlines: a target that stalls one connection at
        random is not taken for stopped, and a stop charged by mistake costs a restart,
        never a finding (a finding is shown again alone before it is filed)."""
        took = []
        for _ in range(LOOK_SAMPLES):
            began = time.monotonic()
            if harness.probe(self.proto, self.host, self.port, self.deadline) != harness.SERVING:
                return self.deadline
            took.append(time.monotonic() - began)
        return min(self.deadline, max(self.floor, LOOK_FACTOR * statistics.median(took)))

    @property
    def starts(self) -> int:
        return self.supervisor.starts

    def close(self) -> None:
        self.supervisor.close()

    def output(self) -> list[str]:
        return self.supervisor.output()

    def output_mark(self) -> int:
        return self.supervisor.mark()

    def panic_since(self, mark: int, settle: bool = True) -> tuple[int, panics.Panic | None]:
        # only this start's lines: a dead start's panic is its CRASH's, read before restart
        mark = max(mark, self.supervisor.first_of_start)
        end, timed = self.supervisor.window(mark, settle)
        return end, panics.find([line for _, line in timed], self.patterns)

    def exit_code(self) -> int | None:
        return self.supervisor.exit_code()

    def alive(self, timeout: float) -> bool:
        return self.supervisor.running() and super().alive(timeout)

    def describe(self) -> str:
        return self.supervisor.describe()


__all__ = ["Owned", "TargetFailed", "TargetLost", "free_port", "split"]
