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
from conformance.protocols.iggy.errors import (
    INVALID_COMMAND,
    INVALID_IDENTIFIER,
    NO_PARTITIONS,
    TOO_BIG_MESSAGE_PAYLOAD,
    TOO_BIG_USER_HEADERS,
    TOPIC_ID_NOT_FOUND,
)


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
        _spec(
            "send-index-unchecked",
            "send",
            "IGG-SEND-9",
            "SEND_MESSAGES stores a batch whose index entries carry a non-zero offset or"
            " timestamp, or whose messages are followed by bytes no header counts",
        ),
        _spec(
            "send-limits-3",
            "send",
            "IGG-SEND-10",
            "a message over the payload (64,000,000 bytes) or user-header (100,000 bytes)"
            " limit is answered 3 (InvalidCommand) instead of 4022 or 4017",
        ),
        _spec(
            "send-identifier-3",
            "send",
            "IGG-SEND-11",
            "a bad Identifier inside SEND_MESSAGES is answered 3 (InvalidCommand), as in the"
            " other commands, instead of 6 (InvalidIdentifier)",
        ),
        _spec(
            "poll-count-zero-unlimited",
            "poll",
            "IGG-POLL-10",
            "POLL_MESSAGES with count 0 returns every message from the start (and commits)",
        ),
        _spec(
            "group-poll-any-partition",
            "groups",
            "IGG-GROUP-11",
            "a member polling as the group reads any partition it names, its own or not",
        ),
        _spec(
            "group-offset-as-consumer",
            "groups",
            "IGG-GROUP-12",
            "Next and auto-commit through a group use the offset of the consumer (kind 1)"
            " with the group's id, not the group's own",
        ),
        _spec(
            "group-offsets-outlive-group",
            "groups",
            "IGG-GROUP-13",
            "DELETE_CONSUMER_GROUP keeps the group's stored offsets: a group made later with"
            " its id finds them",
        ),
        _spec(
            "groups-not-redealt",
            "partitions",
            "IGG-PART-4",
            "CREATE_PARTITIONS and DELETE_PARTITIONS leave the members' lists as they were"
            " until the group's next join or leave",
        ),
        _spec(
            "zero-partitions-3008",
            "topics",
            "IGG-TOPIC-9",
            "a balanced SEND_MESSAGES to a topic of 0 partitions is answered 3008"
            " (NoPartitions) instead of 2010",
        ),
        _spec(
            "failed-relogin-logs-out",
            "login",
            "IGG-LOGIN-8",
            "LOGIN_USER on a logged-in connection logs it out before checking the new"
            " credentials, so a refused one leaves it logged out",
        ),
        _spec(
            "partition-send-new-client",
            "system",
            "IGG-SYS-6",
            "after a SEND_MESSAGES to a partition id the connection goes on as a new client"
            " (another client id, no groups) and its memberships are never left",
        ),
        _spec(
            "offset-store-empty-partition",
            "offsets",
            "IGG-OFF-3",
            "STORE_CONSUMER_OFFSET of offset 0 on a partition that never held a message is"
            " stored instead of answered 4100",
        ),
        _spec(
            "delete-partitions-capped",
            "partitions",
            "IGG-PART-2",
            "DELETE_PARTITIONS of more than 1000 is answered 2015 (TooManyPartitions), as"
            " CREATE_PARTITIONS is, instead of 2019 for a topic with fewer",
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

    def send_index_unchecked(self) -> bool:
        return "send-index-unchecked" in self

    def send_status(self, status: int) -> int:
        """The status a SEND_MESSAGES refused by the batch checks is answered with."""
        if "send-identifier-3" in self and status == INVALID_IDENTIFIER:
            return INVALID_COMMAND
        if "send-limits-3" in self and status in (TOO_BIG_USER_HEADERS, TOO_BIG_MESSAGE_PAYLOAD):
            return INVALID_COMMAND
        return status

    def poll_count(self, count: int, stored: int) -> int:
        """How many messages a poll of ``count`` may return (``stored``: all there are)."""
        return stored if count == 0 and "poll-count-zero-unlimited" in self else count

    def polls_any_partition(self) -> bool:
        return "group-poll-any-partition" in self

    def group_offset_kind(self) -> int:
        """The consumer kind a group's Next and auto-commit keep their offset under."""
        return 1 if "group-offset-as-consumer" in self else 2

    def group_offsets_deleted(self) -> bool:
        return "group-offsets-outlive-group" not in self

    def redeals_groups(self) -> bool:
        return "groups-not-redealt" not in self

    def balanced_without_partitions(self) -> int:
        return NO_PARTITIONS if "zero-partitions-3008" in self else TOPIC_ID_NOT_FOUND

    def relogin_logs_out_first(self) -> bool:
        return "failed-relogin-logs-out" in self

    def partition_send_new_client(self) -> bool:
        return "partition-send-new-client" in self

    def refuses_empty_partition_offsets(self) -> bool:
        return "offset-store-empty-partition" not in self

    def caps_partition_deletes(self) -> bool:
        return "delete-partitions-capped" in self

    # ------------------------------------------------------------------ faults

    def crashes_on_short_identifier(self) -> bool:
        return "crash-on-short-identifier" in self

    def stalls_on_unknown(self) -> bool:
        return "stall-on-unknown-code" in self
