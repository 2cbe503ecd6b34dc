"""Deliberate misbehaviour of the Iggy reference broker, switched on by ``--quirk NAME``.

``spec`` quirks (revision classic) break exactly the MUST requirements they name, and
nothing else; ``fault`` quirks crash or stop the broker, for the fuzzer to find (they
stay out of that exactness check).  The handler asks a :class:`Quirks` at each point a
quirk bends a rule; with none active every hook gives the conformant behaviour.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import xxhash

from conformance.plugin import QuirkSpec, UnknownQuirk


def _spec(name: str, area: str, breaks: str, text: str) -> QuirkSpec:
    """``breaks``: the requirement IDs it breaks, comma-separated."""
    return QuirkSpec(name, "spec", area, tuple(breaks.split(",")), text)


def _fault(name: str, text: str) -> QuirkSpec:
    return QuirkSpec(name, "fault", "fault", (), text)


QUIRKS: dict[str, QuirkSpec] = {
    q.name: q
    for q in (
        _spec(
            "login-gate-open",
            "login",
            "IGG-LOGIN-2",
            "answers every command before LOGIN_USER as if the connection had logged in",
        ),
        _spec(
            "any-password",
            "login",
            "IGG-LOGIN-4",
            "LOGIN_USER accepts any password for a known user",
        ),
        _spec(
            "unknown-code-closes",
            "framing",
            "IGG-FRAME-7",
            "closes the connection, answering nothing, on an unknown command code",
        ),
        _spec(
            "error-with-payload",
            "framing",
            "IGG-FRAME-3",
            "error replies carry a text payload (and its length) instead of none",
        ),
        _spec(
            "names-not-resolved",
            "identifiers",
            "IGG-ID-1,IGG-ID-4",
            "never finds a stream, topic or group by a string Identifier",
        ),
        _spec(
            "key-partition-crc",
            "send",
            "IGG-SEND-4",
            "places a messages-key send by CRC-32 of the key instead of XXH32",
        ),
        _spec(
            "next-rereads-stored",
            "poll",
            "IGG-POLL-6",
            "strategy next starts AT the stored offset instead of after it",
        ),
        _spec(
            "checksum-zero",
            "send",
            "IGG-SEND-6",
            "polled messages carry checksum 0",
        ),
        _spec(
            "offset-store-unchecked",
            "offsets",
            "IGG-OFF-3",
            "STORE_CONSUMER_OFFSET accepts an offset past the partition's current offset",
        ),
        _spec(
            "group-all-partitions",
            "groups",
            "IGG-GROUP-4",
            "every member of a consumer group gets every partition of the topic",
        ),
        _fault(
            "crash-on-short-identifier",
            "CRASH: the broker process exits (code 70) on a request whose string Identifier's "
            "length byte runs past the payload, instead of answering 3",
        ),
        _fault(
            "stall-on-unknown-code",
            "HANG: after an unknown command code the broker stops serving every connection "
            "(reads nothing more, answers nothing, closes nothing); its port still accepts",
        ),
    )
}

CRASH_EXIT_CODE = 70
"""Exit code of the process when ``crash-on-short-identifier`` fires."""


@dataclass(frozen=True)
class Quirks:
    """The active quirks, and the hooks the handler calls."""

    active: frozenset[str] = frozenset()

    @classmethod
    def of(cls, names: list[str] | tuple[str, ...] | frozenset[str] = ()) -> Quirks:
        unknown = [n for n in names if n not in QUIRKS]
        if unknown:
            raise UnknownQuirk(
                f"unknown quirk {unknown[0]!r}; known quirks: {', '.join(sorted(QUIRKS))}"
            )
        return cls(frozenset(names))

    def __contains__(self, name: str) -> bool:
        return name in self.active

    def gate_open(self) -> bool:
        return "login-gate-open" in self

    def password_ok(self, given: str, expected: str) -> bool:
        return "any-password" in self or given == expected

    def closes_on_unknown(self) -> bool:
        return "unknown-code-closes" in self

    def error_payload(self, text: str) -> bytes:
        return text.encode() if "error-with-payload" in self else b""

    def resolves_names(self) -> bool:
        return "names-not-resolved" not in self

    def key_partition(self, key: bytes, partitions: int) -> int:
        if "key-partition-crc" in self:
            return zlib.crc32(key) % partitions
        return xxhash.xxh32_intdigest(key, 0) % partitions

    def next_start(self, stored: int) -> int:
        return stored if "next-rereads-stored" in self else stored + 1

    def checksum(self, value: int) -> int:
        return 0 if "checksum-zero" in self else value

    def checks_stored_offset(self) -> bool:
        return "offset-store-unchecked" not in self

    def every_partition(self) -> bool:
        return "group-all-partitions" in self

    # ------------------------------------------------------------------ faults

    def crashes_on_short_identifier(self) -> bool:
        return "crash-on-short-identifier" in self

    def stalls_on_unknown(self) -> bool:
        return "stall-on-unknown-code" in self
