"""The target under test, as the cases see it.

:class:`Target` is shared by every case of a run: the address, the deadline, the
protocol's codec, and whether the target has been found unresponsive.  A target that
stops answering is detected once (a probe on a fresh connection gets nothing back); from
then on every case ends at once with :class:`TargetUnresponsive` instead of waiting out
its own deadline.  :meth:`Target.gone` is asked before a close or a silence becomes a
FAIL: a target that went away makes the case an ERROR, never a FAIL.

:class:`CaseContext` is what one case gets (the ``target`` fixture): connections that
write into the case's wire log, unique names so cases never share topics or groups,
and :meth:`CaseContext.silence`, the violation of a reply that did not come (which
stands only if :meth:`Target.gone` finds the target still there).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

from conformance.client import PARTIAL_REPLY, Connection, WireLog, probe
from conformance.evidence import Evidence
from conformance.plugin import Plugin
from conformance.suite.case import Violation

RETRY_PAUSE_S = 0.5
"""The pause before a target that failed a probe is probed a second time."""


class TargetUnresponsive(Exception):
    """The target stopped answering: the case could not run (verdict ERROR)."""


@dataclass
class Target:
    host: str
    port: int
    plugin: Plugin
    revision: str
    timeout: float
    options: Mapping[str, Any] = field(default_factory=dict)
    """The protocol's ``run`` options (credentials, what the target is configured for)."""
    dead: str | None = None
    probed: bool = False
    facts: dict[str, Any] = field(default_factory=dict)
    """What a suite learned about the target once per run (and worker), e.g. the API
    versions a Kafka broker advertises; cases read it instead of asking again."""
    probe_timeout: float = field(init=False)
    lost_at: float | None = None
    """Wall-clock time (``time.time()``) when the target was found gone."""
    unusable: bool = False
    """Gone because its replies cannot be framed, not because it went away."""

    def __post_init__(self) -> None:
        self.probe_timeout = min(self.timeout, 3.0)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def protocol(self) -> str:
        return self.plugin.name

    def gone(self) -> str | None:
        """Why the target is gone, or None when it is still there: known, or found by a
        probe on a fresh connection, tried twice (the second time with the run's whole
        deadline) before the target is declared lost; any answer counts as there."""
        if self.dead is not None:
            return self.dead
        why = self.probe_twice()
        if self.unusable:
            return self.dead
        if why is None:
            return None
        self.dead = why
        self.lost_at = time.time()
        return self.dead

    def probe_twice(self) -> str | None:
        """None if a probe on a fresh connection is answered, the first time or after a
        pause with the run's whole deadline; else why not (nothing is remembered).  An
        answer that begins but is still not whole the second time makes the target
        unusable (None is returned: it did not stop; :attr:`dead` says why): a target that
        drips its replies would otherwise cost every case its deadlines."""
        for attempt, timeout in enumerate((self.probe_timeout, self.timeout)):
            if attempt:
                time.sleep(RETRY_PAUSE_S)
            why = self._probe(timeout, lenient=True)
            if why is None:
                return None
        if why is not None and why.startswith(PARTIAL_REPLY):  # it answers, too slowly
            self.dead = f"target {self.address} is unusable: its replies come too slowly ({why})"
            self.unusable = True
            return None
        return f"target {self.address} is unresponsive: {why}"

    def found_unusable(self) -> None:
        """A reply of a case did not frame: if the probe's answer on a fresh connection does
        not frame either, the target is unusable and every later case ends at once, an ERROR
        saying so (a target that frames its other replies goes on)."""
        if self.dead is not None or self._probe(self.probe_timeout, lenient=True) is not None:
            return  # gone, not unusable (the plugin's probe of a close or a silence says so)
        probed = self._probe(self.probe_timeout)  # it answers: does the answer frame?
        if probed is None:
            return
        self.dead = (
            f"target {self.address} is unusable: its replies cannot be framed (the probe's: "
            f"{probed})"
        )
        self.unusable = True  # found gone by the next case (the one that found it ends first)

    def restarted(self, host: str, port: int) -> None:
        """The target was started afresh at ``host:port`` (``run --target-cmd``): nothing
        learned about the old start holds, and it is no longer gone."""
        self.host, self.port = host, port
        self.dead, self.lost_at, self.probed, self.unusable = None, None, False, False
        self.facts.clear()

    def _probe(self, timeout: float, *, lenient: bool = False) -> str | None:
        plugin = self.plugin
        return probe(
            self.host,
            self.port,
            plugin.framing.frame(plugin.probe_request, "request"),
            plugin.framing.deframer("reply"),
            timeout,
            plugin.open(self.options, self.revision),
            lenient=lenient,
        )

    def ensure_reachable(self) -> None:
        """Probe once per run (with the run's deadline), before the first case talks to
        the target; TargetUnresponsive when it is, or has since been found, gone."""
        if not self.probed:
            self.probed = True
            # any answer counts: a target whose replies do not frame is there, and its
            # cases judge its framing (a refused session was a usage error before the run)
            why = self._probe(self.timeout, lenient=True)
            if why is not None:
                self.dead = f"target {self.address} is unresponsive: {why}"
                self.lost_at = time.time()
        if self.dead is not None:
            raise TargetUnresponsive(self.dead)


@dataclass
class CaseContext:
    target: Target
    log: WireLog
    _conns: list[Connection] = field(default_factory=list)
    _tag: str = field(default_factory=lambda: uuid.uuid4().hex[:10])

    @property
    def timeout(self) -> float:
        return self.target.timeout

    @property
    def options(self) -> Mapping[str, Any]:
        """The protocol's ``run`` options, e.g. ``options["compression"]`` for Cursus."""
        return self.target.options

    def connect(self, *, open_session: bool = True) -> Connection:
        """A new connection to the target, its session opened first (a login) unless
        ``open_session`` is false (for cases about what comes before it)."""
        conn = Connection(
            self.target.host,
            self.target.port,
            deframer=self.target.plugin.framing.deframer("reply"),
            log=self.log,
            timeout=self.target.timeout,
        )
        self._conns.append(conn)
        if open_session:
            conn.open(self.target.plugin.open(self.target.options, self.target.revision))
        return conn

    def name(self, base: str) -> str:
        """A topic or group name no other case (nor an earlier run) uses."""
        return f"{base}-{self._tag}"

    def silence(
        self, requirement: str, what: str, evidence: Evidence, waited: float | None = None
    ) -> NoReturn:
        """A reply did not come within ``waited`` seconds (default: the run's deadline): a
        violation of ``requirement`` (decided on ``evidence``, which ends in the deadline),
        which stands only if the target is still there (the suite plugin probes it first)."""
        within = self.timeout if waited is None else waited
        raise Violation(
            requirement,
            f"{what}: no reply within {within:g}s",
            Evidence(evidence.frames, ending="timeout"),
        )

    def close(self) -> None:
        for conn in self._conns:
            if conn.sock.fileno() != -1:
                conn.close()
