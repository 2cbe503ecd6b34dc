"""Deliberate misbehaviour of the Cursus reference broker, switched on by ``--quirk NAME``.

Two kinds:

* ``spec`` quirks break named MUST requirements of SPEC.md and nothing else; the
  project's tests run the suite against each and check that exactly the declared
  requirements fail.  They prove that the cases can fail.
* ``fault`` quirks (crash, hang, data loss) are for the fuzzer to find and are not
  part of that exactness check.  Each description names the finding class a fuzzer
  should report: CRASH (the process dies), HANG (a connection stops being served
  without being closed) or CORRUPTION (acknowledged data is not there to consume).

The handler asks a :class:`Quirks` object at each point where a quirk bends a rule;
with no quirk active every hook returns the conformant behaviour, and the fault
checks are not even evaluated.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from conformance.plugin import QuirkSpec, UnknownQuirk
from conformance.protocols.cursus.annotate import has_negative_payload_len
from conformance.protocols.cursus.messages import (
    Batch,
    BatchAck,
    ErrorReply,
    Reply,
    TextReply,
)
from conformance.protocols.cursus.real_messages import Keepalive

QUIRKS: dict[str, QuirkSpec] = {
    q.name: q
    for q in (
        QuirkSpec(
            "frame-limit-off-by-one",
            "spec",
            "framing",
            ("CUR-FRAME-2",),
            "refuses a frame of exactly 64 MiB (the limit is treated as exclusive)",
        ),
        QuirkSpec(
            "magic-first-byte-only",
            "spec",
            "text",
            ("CUR-TEXT-2",),
            "takes any payload whose first byte is 0xBA for a batch",
        ),
        QuirkSpec(
            "ack-last-offset-off-by-one",
            "spec",
            "ack",
            ("CUR-ACK-4",),
            "reports the next offset instead of the highest assigned one in last_offset",
        ),
        QuirkSpec(
            "ack-seq-from-messages",
            "spec",
            "ack",
            ("CUR-ACK-6",),
            "echoes the first and last message seqNum instead of the header's seqStart/seqEnd",
        ),
        QuirkSpec(
            "error-prefix-lowercase",
            "spec",
            "errors",
            ("CUR-ERR-1",),
            "error replies start with 'error:' instead of 'ERROR:'",
        ),
        QuirkSpec(
            "create-single-partition",
            "spec",
            "text",
            ("CUR-TEXT-3",),
            "CREATE makes one partition whatever count is asked for",
        ),
        QuirkSpec(
            "consume-from-zero",
            "spec",
            "text",
            ("CUR-TEXT-4",),
            "CONSUME ignores the offset and starts at 0",
        ),
        QuirkSpec(
            "leave-without-rebalance",
            "spec",
            "groups",
            ("CUR-GROUP-3",),
            "LEAVE_GROUP answers OK but keeps the member, so no rebalance happens",
        ),
        QuirkSpec(
            "heartbeat-hides-rebalance",
            "spec",
            "groups",
            ("CUR-GROUP-4",),
            "HEARTBEAT answers OK even when the group has moved to a newer generation",
        ),
        QuirkSpec(
            "gzip-unsupported",
            "spec",
            "compression",
            ("CUR-COMP-1",),
            "does not inflate gzip bodies even when started with --compression gzip",
        ),
        QuirkSpec(
            "real-ack-keeps-empty-fields",
            "spec",
            "rack",
            ("CUR-RACK-2",),
            'revision real: the JSON ack carries "leader":"" and "error":"" instead of '
            "leaving empty fields out",
        ),
        QuirkSpec(
            "real-keepalive-text",
            "spec",
            "rstreaming",
            ("CUR-RSTREAM-3",),
            "revision real: a STREAM keepalive is the text frame KEEPALIVE, not an empty frame",
        ),
        QuirkSpec(
            "real-consume-ignores-commit",
            "spec",
            "rtext",
            ("CUR-RTEXT-8",),
            "revision real: CONSUME and STREAM start at the asked offset even when the group "
            "committed one",
        ),
        QuirkSpec(
            "crash-on-negative-payload-len",
            "fault",
            "fault",
            (),
            "CRASH: the broker process exits (code 70) on a batch in which a message's "
            "payloadLen is negative, instead of answering an error ack",
        ),
        QuirkSpec(
            "hang-on-empty-frame",
            "fault",
            "fault",
            (),
            "HANG: after an empty frame (length 0) the connection is neither answered, "
            "read nor closed, instead of getting an error reply",
        ),
        QuirkSpec(
            "burst-loses-acked",
            "fault",
            "fault",
            (),
            "CORRUPTION: once one read brings 16 or more whole frames, every later batch "
            "is acknowledged OK but not stored",
        ),
    )
}

BURST_FRAMES = 16
"""Whole frames in one read that trip ``burst-loses-acked``."""

CRASH_EXIT_CODE = 70
"""Exit code of the process when ``crash-on-negative-payload-len`` fires."""


@dataclass(frozen=True)
class Quirks:
    """The active quirks, and the hooks the handler calls."""

    active: frozenset[str] = frozenset()

    @classmethod
    def of(cls, names: list[str] | tuple[str, ...]) -> Quirks:
        unknown = [n for n in names if n not in QUIRKS]
        if unknown:
            raise UnknownQuirk(
                f"unknown quirk {unknown[0]!r}; known quirks: {', '.join(sorted(QUIRKS))}"
            )
        return cls(frozenset(names))

    def __contains__(self, name: str) -> bool:
        return name in self.active

    def frame_limit(self, limit: int) -> int:
        return limit - 1 if "frame-limit-off-by-one" in self else limit

    def is_batch_prefix(self, payload: bytes) -> bool:
        """True when this broker takes ``payload`` for a batch although it is not one."""
        return (
            "magic-first-byte-only" in self
            and payload[:1] == b"\xba"
            and payload[:2] != b"\xba\x7c"
        )

    def compression(self, configured: str) -> str | None:
        if configured == "none" or "gzip-unsupported" in self:
            return None
        return configured

    def ack(self, ack: BatchAck, batch: Batch) -> BatchAck:
        if "ack-last-offset-off-by-one" in self and ack.last_offset >= 0:
            ack = dataclasses.replace(ack, last_offset=ack.last_offset + 1)
        if "ack-seq-from-messages" in self and batch.messages:
            ack = dataclasses.replace(
                ack, seq_start=batch.messages[0].seq_num, seq_end=batch.messages[-1].seq_num
            )
        return ack

    def reply_payload(self, reply: Reply | Keepalive, payload: bytes) -> bytes:
        if "error-prefix-lowercase" in self and isinstance(reply, ErrorReply):
            return b"error:" + payload[len(b"ERROR:") :]
        return payload

    def partitions(self, asked: int) -> int:
        return 1 if "create-single-partition" in self else asked

    def consume_offset(self, offset: int) -> int:
        return 0 if "consume-from-zero" in self else offset

    def leave_keeps_members(self) -> bool:
        return "leave-without-rebalance" in self

    def hide_rebalance(self) -> bool:
        return "heartbeat-hides-rebalance" in self

    # ---------------------------------------------------------- revision real

    def keeps_empty_ack_fields(self) -> bool:
        return "real-ack-keeps-empty-fields" in self

    def keepalive(self, reply: Keepalive) -> Keepalive | TextReply:
        return TextReply("KEEPALIVE") if "real-keepalive-text" in self else reply

    def consume_ignores_commit(self) -> bool:
        return "real-consume-ignores-commit" in self

    # ------------------------------------------------------------------ faults

    def crashes_on(self, frame: bytes) -> bool:
        """True when ``crash-on-negative-payload-len`` is active and ``frame`` triggers it."""
        return "crash-on-negative-payload-len" in self and has_negative_payload_len(frame)

    def hangs_on(self, frame: bytes) -> bool:
        return "hang-on-empty-frame" in self and not frame

    def trips_burst(self, frames: int) -> bool:
        return "burst-loses-acked" in self and frames >= BURST_FRAMES
