"""Deliberate misbehaviour of the mini-Kafka reference broker, switched on by ``--quirk NAME``.

``spec`` quirks break exactly the MUST requirements they name (in revision ``doc``, the
default, where every one of them applies), and nothing else; ``fault`` quirks crash the
broker or stop it serving everyone, as the real server does (FACTS.md 4.3), for the fuzzer
to find (they stay out of that exactness check).  The front-end asks a :class:`Quirks` at
each point a quirk bends a rule; with none active every answer is the conformant one.
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.plugin import QuirkSpec, checked_quirks

CRASH_EXIT_CODE = 70
"""The exit status of the process a crash quirk ends (EX_SOFTWARE)."""
_spec, _fault = QuirkSpec.spec, QuirkSpec.fault


QUIRKS: dict[str, QuirkSpec] = {
    q.name: q
    for q in (
        _spec(
            "batch-size-ignored",
            "consume",
            "MK-CONS-3",
            "CONSUME returns every message from its offset to the end of the log, whatever "
            "its batch size",
        ),
        _spec(
            "next-offset-of-last",
            "consume",
            "MK-CONS-5",
            "a CONSUME that returns messages answers the offset of the last one as its next "
            "offset, not that offset plus 1",
        ),
        _spec(
            "unknown-topic-error",
            "consume",
            "MK-CONS-6",
            "CONSUME of a topic never produced to is answered with the error path "
            "('unknown topic') instead of an empty success",
        ),
        _spec(
            "flush-without-success-byte",
            "flush",
            "MK-FRAME-4,MK-FLUSH-1",
            "FLUSH is answered with the bare type byte, 00000005 06, without its success byte",
        ),
        _fault(
            "crash-on-negative-batch",
            "CONSUME with a negative batch size ends the broker process, as allocating an "
            "array of that size would in the Java original (NegativeArraySizeException)",
        ),
        _fault(
            "stop-on-unknown-type",
            "a request with an unknown type byte stops the broker serving: from then on no "
            "connection, open or new, is answered, while its port still accepts (the real "
            "phase-2 server, FACTS.md 4.3)",
        ),
    )
}


@dataclass(frozen=True)
class Quirks:
    """The quirks a broker runs with; each method is one point where a quirk bends a rule."""

    names: frozenset[str] = frozenset()

    @classmethod
    def of(cls, names: tuple[str, ...] | list[str]) -> Quirks:
        return cls(checked_quirks("minikafka", QUIRKS, names))

    def __contains__(self, name: str) -> bool:
        return name in self.names

    @property
    def active(self) -> bool:
        return bool(self.names)
