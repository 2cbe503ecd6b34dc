"""Deliberate misbehaviour of the V1 line reference broker, switched on by ``--quirk NAME``.

``spec`` quirks break exactly the MUST requirements they name (in revision ``doc``, the
default, where every one of them applies but ``answers-ping``, which is ``real``'s), and
nothing else; ``fault`` quirks crash the
broker or stop it serving everyone, for the fuzzer to find (they stay out of that
exactness check).  The front-end asks a :class:`Quirks` at each point a quirk bends a
rule; with none active every answer is the conformant one.
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.plugin import QuirkSpec, UnknownQuirk
from conformance.protocols.v1line.codec import integer

CRASH_EXIT_CODE = 70
"""The exit status of the process a crash quirk ends (EX_SOFTWARE)."""


def _spec(name: str, area: str, breaks: str, text: str) -> QuirkSpec:
    """``breaks``: the requirement IDs it breaks, comma-separated."""
    return QuirkSpec(name, "spec", area, tuple(breaks.split(",")), text)


def _fault(name: str, text: str) -> QuirkSpec:
    return QuirkSpec(name, "fault", "fault", (), text)


QUIRKS: dict[str, QuirkSpec] = {
    q.name: q
    for q in (
        _spec(
            "parse-error-echoes-cid",
            "envelope",
            "V1L-ENV-6,V1L-ENV-11",
            "answers a line with a version other than V1 with the line's correlation id "
            "instead of 0",
        ),
        _spec(
            "answers-ping",
            "ping",
            "V1L-PING-3",
            "in revision real, answers PING with V1|<cid>|OK as the document shows, though the "
            "real broker has no PING (a no-op in doc, where PING is answered so anyway)",
        ),
        _spec(
            "unknown-command-bad-request",
            "envelope",
            "V1L-ENV-14",
            "answers a command it does not have with BAD_REQUEST instead of UNKNOWN_COMMAND",
        ),
        _spec(
            "acks-all-no-wait",
            "replication",
            "V1L-REPL-8,V1L-REPL-9",
            "answers PRODUCE acks=all at once, as acks=1, whatever the followers did: while "
            "fewer than min ISR replicas are in sync (no REPLICATION_TIMEOUT), and with the hw "
            "of that moment, below the record's offset while an in-sync follower lags",
        ),
        _spec(
            "consume-past-hw",
            "consume",
            "V1L-CONS-2",
            "CONSUME returns every record the leader has, past the high watermark",
        ),
        _spec(
            "follower-accepts-produce",
            "replication",
            "V1L-REPL-4",
            "a partition in follower role still appends what PRODUCE sends",
        ),
        _spec(
            "commit-any-partition",
            "offsets",
            "V1L-OFF-3",
            "COMMIT checks the member's generation but not that it owns the partition",
        ),
        _spec(
            "range-deals-round-robin",
            "groups",
            "V1L-GRP-6",
            "assignor=range is accepted but deals the partitions round robin",
        ),
        _spec(
            "isr-never-shrinks",
            "replication",
            "V1L-REPL-9,V1L-REPL-11",
            "a follower that stops reporting never leaves the ISR, so it holds the hw down "
            "and PRODUCE acks=all waits for it even when the other followers make min ISR",
        ),
        _fault(
            "crash-on-negative-offset",
            "CONSUME with a negative offset ends the broker process, as the real broker's "
            "negative slice index would (FACTS.md, CONSUME)",
        ),
        _fault(
            "stop-on-empty-key",
            "PRODUCE of a message whose key is empty (':value') stops the broker serving: "
            "from then on no connection, open or new, is answered, while its port still "
            "accepts (a stuck event loop as a peer sees it)",
        ),
    )
}

NEVER_MS = 10**15
"""A replica lag timeout no follower outlives (``isr-never-shrinks``)."""


@dataclass(frozen=True)
class Quirks:
    """The quirks a broker runs with; each method is one point where a quirk bends a rule."""

    names: frozenset[str] = frozenset()

    @classmethod
    def of(cls, names: tuple[str, ...] | list[str]) -> Quirks:
        unknown = [n for n in names if n not in QUIRKS]
        if unknown:
            raise UnknownQuirk(f"unknown quirk {unknown[0]!r} of v1line")
        return cls(frozenset(names))

    def __contains__(self, name: str) -> bool:
        return name in self.names

    @property
    def active(self) -> bool:
        return bool(self.names)

    def crashes_on(self, line: bytes) -> bool:
        """``crash-on-negative-offset``: the line is a CONSUME whose offset is negative."""
        if "crash-on-negative-offset" not in self.names:
            return False
        sections = line.decode("utf-8", "replace").strip().split("|", 3)
        if len(sections) != 4 or sections[2].strip().upper() != "CONSUME":
            return False
        args = sections[3].split()
        offset = integer(args[2]) if len(args) == 3 else None
        return offset is not None and offset < 0

    def lag_timeout_ms(self, configured: int) -> int:
        return NEVER_MS if "isr-never-shrinks" in self.names else configured

    def assignor(self, asked: str | None) -> str | None:
        if asked == "range" and "range-deals-round-robin" in self.names:
            return "round_robin"
        return asked
