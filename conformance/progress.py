"""Progress of ``conformance run`` while pytest runs the cases (pytest prints nothing).

``conformance run`` turns pytest's own terminal output off, so what the user sees is the
tool's: on a terminal a live bar (cases done of all, and the FAIL/ERROR so far); in a CI
log, where a bar would be noise, a line every :data:`LOG_EVERY_S` seconds.  Under
pytest-xdist the controller receives every worker's reports, so the counts are the run's.
A case's verdict is the ``verdict`` property the conformance plugin put on its report.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

#: Seconds between progress lines when the output is not a terminal.
LOG_EVERY_S = 15.0


class RunProgress:
    """A pytest plugin object: counts verdicts as reports arrive and shows them."""

    def __init__(self, console: Console | None = None, *, quiet: bool = False) -> None:
        self.console = console or Console(stderr=True, highlight=False)
        self.quiet = quiet
        """Show no progress (errors loading the suite are still printed)."""
        self.total: int | None = None
        self.done = 0
        self.bad: dict[str, int] = {}
        self._bar: Progress | None = None
        self._task: Any = None
        self._last_line = time.monotonic()
        self._collection_errors: list[str] = []

    # -- collection: the number of cases, from this process or from the xdist workers
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if not getattr(session.config, "workerinput", None):
            self._start(len(session.items))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if self.total is None:
            self._start(len(ids))

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self._collection_errors.append(f"{report.nodeid}: {report.longreprtext.strip()}")

    def _start(self, total: int) -> None:
        self.total = total
        if self.console.is_terminal and total and not self.quiet:
            self._bar = Progress(
                TextColumn("cases"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.description}"),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task("", total=total)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        verdict = dict(report.user_properties).get("verdict")
        if not verdict or report.when == "teardown":
            return
        self.done += 1
        if verdict in ("FAIL", "ERROR", "WARN"):
            self.bad[verdict] = self.bad.get(verdict, 0) + 1
        so_far = ", ".join(f"{n} {v}" for v, n in sorted(self.bad.items()))
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, description=so_far)
        elif not self.quiet and time.monotonic() - self._last_line >= LOG_EVERY_S:
            self._last_line = time.monotonic()
            of = f" of {self.total}" if self.total else ""
            self.console.print(f"{self.done}{of} cases done{'; ' + so_far if so_far else ''}")

    def pytest_sessionfinish(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        for error in self._collection_errors:
            self.console.print(f"conformance run: cannot load the suite: {error}", markup=False)
