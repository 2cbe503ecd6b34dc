"""The V1 line protocol for the fuzzer: the valid pool, mutators, the canary, requirements.

ORACLE (the harness's, :mod:`conformance.fuzz.harness`, on ``\n``-terminated lines):
every whole request line is answered by exactly one reply line within the deadline; the
connection may close only after a line over 64 KiB (V1L-ENV-13; any other close with a
line unanswered is the finding DROPPED, :meth:`V1Fuzzing.may_close`); the broker keeps
accepting and serving new connections; what the canary wrote is read back.  V1 has no
silent request: every line owes its reply, a PRODUCE ``acks=all`` included -- but that one
comes when followers catch up or at the target's acks=all timeout (2 s by default, the
fuzzer's default deadline), and a case may hold several (a burst, a pipeline), each
waiting in turn; so the pool and the mutators write no ``acks=all`` unless the fuzz options
give an ``--ack-timeout-ms`` of at most :data:`ACKS_ALL_MAX_MS` (the embedded broker of
``fuzz`` runs with 20 ms).  The suite covers acks=all (V1L-REPL-8, -9).

The pool is drawn from :mod:`.strategies` per command and revision (a ``real`` line may
carry what only ``real`` reads: any case, runs of whitespace, a ``|`` in a value) with
:func:`conformance.fuzz.draw.draw` seeded from the campaign seed, the command and the
draw's number: a pure function of (revision, seed).  Most draws (:data:`PINNED`) are
aimed at what :meth:`V1Fuzzing.setup_payloads` makes:

* PRODUCE writes to ``fuzz-sink``, which nothing reads back (CONSUME returns every record
  from its offset in one line: a partition that grows with the campaign would make its
  replies grow past the 64 KiB line limit and every read cost more than the last);
* CONSUME, the group commands and OFFSET name ``fuzz-read`` (nine records written by the
  set-up, partitions 0-2, small offsets) and group ``fuzz-group``; REPLICA_FETCH and
  SET_PARTITION_ROLE name ``fuzz-sink`` (replicas 1-2, both roles), so PRODUCE meets
  NOT_LEADER now and then.

The rest keep their drawn names, numbers and options (a CONSUME's drawn topic is never
one a pool PRODUCE writes to).  Nothing special is done for a fault: a negative number
is one of the ``number`` mutator's categories, an empty key one of ``arg``'s, and the
strategies draw empty keys as any other text.

Mutators: :mod:`.fuzz_mutators` (text mutations that know the envelope; frame mutators
for lines).  Canary: PRODUCE ``acks=1`` to ``__conformance_canary`` (which no case names:
the generic generator renames it) with the value written in hex (a value holds no
space), then CONSUME of the partition the reply names from the offset it names.  The
set-up sets that topic's partitions to leader, should a broker start with another role.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from conformance.fuzz.case import Blame, FrameMutator, Pool, StructureMutator
from conformance.fuzz.draw import draw
from conformance.protocols.v1line import codec, strategies
from conformance.protocols.v1line.commands import (
    KeyValue,
    OkReply,
    Request,
    Revision,
    commands_of,
)
from conformance.protocols.v1line.errors import BadReply, BadRequest, V1LineError
from conformance.protocols.v1line.fuzz_frames import FRAME_MUTATORS_V1
from conformance.protocols.v1line.fuzz_mutators import (
    GROUP,
    READ_TOPIC,
    SINK_TOPIC,
    STRUCTURE_MUTATORS,
)

CANARY = "__conformance_canary"
CANARY_KEY = "canary"
PARTITIONS = 3
"""The reference broker's partitions per topic (``serve --partitions``, default 3)."""
READ_RECORDS = 9
PINNED = 0.85
ACKS_ALL_MAX_MS = 100
"""The longest acks=all timeout the pool writes acks=all for (see the module doc): a burst
holds about ten acks=all lines at most, answered one after another within the 2 s deadline
(at 1000 ms two of them already took as long as the deadline: a false HANG)."""
DRAWS = {
    "PRODUCE": 24, "CONSUME": 16, "JOIN": 4, "SYNC": 4, "HEARTBEAT": 4, "LEAVE": 3,
    "COMMIT": 6, "OFFSET": 4, "REPLICA_FETCH": 6, "SET_PARTITION_ROLE": 4, "PING": 2,
}  # fmt: skip
"""Draws per command: produce and consume most, as clients do."""


WRITERS = ("PRODUCE", "REPLICA_FETCH", "SET_PARTITION_ROLE")
"""The commands aimed at the sink topic (the others read ``fuzz-read``)."""


def _aim(request: Request, rng: random.Random, n: int, acks_all: bool) -> Request:
    """``request`` pointed at the fuzz set-up (see the module doc)."""
    values = dict(zip(request.spec.arg_names, request.args, strict=True))
    command = request.command
    if "topic" in values:
        values["topic"] = SINK_TOPIC if command in WRITERS else READ_TOPIC
    if "group" in values:
        values["group"] = GROUP
    if "consumer_id" in values:
        values["consumer_id"] = f"c{n % 4}"
    if "partition" in values:
        values["partition"] = n % PARTITIONS
    if "offset" in values:
        values["offset"] = rng.randrange(READ_RECORDS + 3)
    if "generation" in values:
        values["generation"] = n % 4
    if "replica_id" in values:
        values["replica_id"] = 1 + n % 2
    if values.get("acks") == "all" and (n % 2 or not acks_all):
        values["acks"] = "1"  # acks=all in about 1 in 8, when its reply comes in time
    if "message" in values:
        message = values["message"]
        assert isinstance(message, KeyValue)
        values["message"] = KeyValue(message.key, message.value[:16])
    return replace(request, args=tuple(values.values()))


def _drawn(
    revision: Revision, seed: int, command: str, n: int, acks_all: bool
) -> tuple[bytes, Request]:
    key = f"v1line-pool:{revision}:{seed}:{command}:{n}"
    rng = random.Random(key)
    request = draw(key, strategies.requests(command))
    if rng.random() < PINNED:
        request = _aim(request, rng, n, acks_all)
    elif request.command == "PRODUCE" and request.arg("acks") == "all" and not acks_all:
        request = replace(request, args=(*request.args[:2], "1"))
    line, parsed = draw(f"{key}:line", strategies.written(request, revision))
    return line, parsed


@functools.lru_cache(maxsize=8)
def pool(revision: Revision, seed: int, acks_all: bool = False) -> Pool:
    """The pool of ``revision`` for the campaign ``seed`` (see the module doc);
    ``acks_all``: some PRODUCEs ask acks=all."""
    drawn = [
        _drawn(revision, seed, c, n, acks_all)
        for c in commands_of(revision)  # (real: no PING, the real broker has none)
        for n in range(DRAWS.get(c, 2))
    ]
    written = {r.arg("topic") for _, r in drawn if r.command == "PRODUCE"}
    kept = [
        (line, r)
        for line, r in drawn
        if CANARY.encode() not in line
        and not (r.command == "CONSUME" and r.arg("topic") in written)
    ]
    return Pool([line for line, _ in kept], [r for _, r in kept])


# ------------------------------------------------------------------ requirements

COMMAND_REQUIREMENTS = {
    "PRODUCE": "V1L-PROD-1", "CONSUME": "V1L-CONS-1", "JOIN": "V1L-GRP-1",
    "SYNC": "V1L-GRP-9", "HEARTBEAT": "V1L-GRP-10", "LEAVE": "V1L-GRP-12",
    "COMMIT": "V1L-OFF-1", "OFFSET": "V1L-OFF-5", "REPLICA_FETCH": "V1L-REPL-6",
    "SET_PARTITION_ROLE": "V1L-REPL-1", "PING": "V1L-PING-1",
}  # fmt: skip
"""The requirement of each command whose request, parsed, was left unanswered."""
ENVELOPE_REQUIREMENTS = {
    "unsupported version": "V1L-ENV-6",
    "correlation id required": "V1L-ENV-7",
    "command required": "V1L-ENV-8",
}
"""The requirement of a parse error left unanswered, by the real broker's text."""


def unanswered(revision: Revision) -> Callable[[bytes], str]:
    """The requirement a whole request line left without a reply breaks."""

    def blame(line: bytes) -> str:
        try:
            request = codec.parse_request(line, revision=revision)
        except ValueError:  # the codec's int() past 4300 digits (leading zeros): its bug
            return "V1L-ENV-16"
        except BadRequest as exc:
            if exc.stage == "args":
                return "V1L-ENV-16" if exc.message.startswith("invalid ") else "V1L-ENV-15"
            if exc.message == codec.ENVELOPE_ERROR and revision == "doc" and line.count(b"|") > 3:
                return "V1L-ENV-10"
            return ENVELOPE_REQUIREMENTS.get(exc.message, "V1L-ENV-5")
        except V1LineError:
            return "V1L-ENV-14"
        return COMMAND_REQUIREMENTS[request.command]

    return blame


def _negative_read(line: bytes) -> bool:
    """A CONSUME whose partition or offset is a negative integer, in any revision."""
    sections = line.decode("utf-8", "replace").strip().split("|", 3)
    if len(sections) != 4 or sections[2].strip().upper() != "CONSUME":
        return False
    return any(_negative(t) for t in sections[3].split()[1:3])


def _negative(token: str) -> bool:
    """A negative integer (``codec.integer`` raises ValueError past 4300 digits)."""
    try:
        value = codec.integer(token)
    except ValueError:
        return False
    return value is not None and value < 0


def serving_of(revision: Revision) -> Callable[[Sequence[bytes]], str]:
    """The requirement of a broker that stopped serving after ``lines``: V1L-CONS-5 when
    one reads a negative partition or offset, else that a parse error or any request
    keeps the broker serving (``real``: V1L-ENV-12; ``doc``: V1L-ENV-1)."""
    default = "V1L-ENV-12" if revision == "real" else "V1L-ENV-1"

    def blame(lines: Sequence[bytes]) -> str:
        return "V1L-CONS-5" if any(_negative_read(line) for line in lines) else default

    return blame


def blame(revision: Revision) -> Blame:
    return Blame(
        corruption="V1L-CONS-4",  # the value read at an offset is the value produced there
        serving="V1L-ENV-12" if revision == "real" else "V1L-ENV-1",
        bad_reply="V1L-ENV-1",  # one reply line per request (over 64 KiB it is not one)
        oversize="V1L-ENV-13",  # a line over 64 KiB closes the connection
        partial="V1L-ENV-1",  # a request is a line ended by \n: a cut one is never served
        unanswered=unanswered(revision),
        serving_of=serving_of(revision),
    )


# ------------------------------------------------------------------ the part


def _unhex(text: str) -> bytes:
    """A canary value as written (hex), or the text itself if it is not hex."""
    try:
        return bytes.fromhex(text)
    except ValueError:
        return text.encode()


class V1Fuzzing:
    """The fuzzing part (:class:`conformance.fuzz.case.Fuzzing`) of the V1 line protocol
    at one revision, with the ``fuzz`` option values (``ack_timeout_ms``, if the plug-in
    ever gives ``fuzz`` that option: see the module doc)."""

    canary_topic = CANARY
    structure_mutators: Mapping[str, StructureMutator] = STRUCTURE_MUTATORS
    frame_mutators: Mapping[str, FrameMutator] = FRAME_MUTATORS_V1

    def __init__(self, options: Mapping[str, Any] | None = None, revision: str = "doc") -> None:
        self.revision: Revision = "real" if revision == "real" else "doc"
        timeout = (options or {}).get("ack_timeout_ms")
        self.acks_all = timeout is not None and int(timeout) <= ACKS_ALL_MAX_MS
        """Whether the pool writes acks=all (see the module doc)."""
        self.blame = blame(self.revision)
        self._sent = 0
        self._partition = 0
        self._read_from = 0

    def pool(self, seed: int) -> Pool:
        return pool(self.revision, seed, self.acks_all)

    def owes_reply(self, payload: bytes) -> bool:
        return True  # every line is answered (V1L-ENV-1), an acks=all too

    def may_close(self, sent: bytes) -> bool:
        """Whether the connection may close before every line of ``sent`` is answered (a
        close that leaves a line unanswered otherwise breaks V1L-ENV-1: the finding
        DROPPED).  A line of 64 KiB or more may close it (V1L-ENV-13; the real broker's Go
        scanner needs room for the newline too, so it closes on exactly 65536 bytes); in
        ``doc`` a parse error may too (keeping the connection is ``real``'s V1L-ENV-12)."""
        *lines, tail = sent.split(b"\n")
        if any(len(line) >= codec.LINE_LIMIT for line in (*lines, tail)):
            return True
        if self.revision == "doc":
            for line in lines:
                try:
                    codec.parse_request(line, revision="doc")
                except BadRequest as exc:
                    if exc.stage == "envelope":
                        return True
                except V1LineError:
                    pass
        return False

    def setup_payloads(self) -> Sequence[bytes]:
        out = [
            codec.encode_request(f"s{i}", "PRODUCE", f"{READ_TOPIC} k{i}:v{i} acks=1")[:-1]
            for i in range(READ_RECORDS)
        ]
        for p in range(PARTITIONS):  # the canary writes to a leader (the topic is made)
            out.append(
                codec.encode_request(f"r{p}", "SET_PARTITION_ROLE", f"{CANARY} {p} leader")[:-1]
            )
        return out

    # ---------------------------------------------------------------- the canary

    def _cid(self) -> str:
        self._sent += 1
        return f"canary{self._sent}"

    def canary_produce(self, values: Sequence[bytes]) -> bytes:
        """A PRODUCE of the last of ``values`` (a V1 PRODUCE carries one message), in hex."""
        value = (values[-1] if values else b"").hex()
        args = f"{CANARY} {CANARY_KEY}:{value} acks=1"
        return codec.encode_request(self._cid(), "PRODUCE", args)[:-1]

    def canary_acked(self, reply: bytes) -> int | None:
        try:
            got = codec.parse_reply(reply)
            if not isinstance(got, OkReply) or got.payload is None:
                return None
            values = codec.decode_payload("PRODUCE", got.payload)
        except (BadReply, ValueError):  # ValueError: int() past 4300 digits
            return None
        partition, offset = values["partition"], values["offset"]
        if not isinstance(partition, int) or not isinstance(offset, int):
            return None
        self._partition = partition
        return offset

    def canary_consume(self, offset: int) -> bytes:
        self._read_from = offset
        args = f"{CANARY} {self._partition} {offset}"
        return codec.encode_request(self._cid(), "CONSUME", args)[:-1]

    def canary_values(self, reply: bytes) -> list[bytes]:
        """The values from the offset asked, by offset (a missing one reads b"")."""
        try:
            got = codec.parse_reply(reply)
            if not isinstance(got, OkReply) or got.payload is None:
                return []
            messages = codec.decode_payload("CONSUME", got.payload)["messages"]
        except (BadReply, ValueError):  # ValueError: int() past 4300 digits
            return []
        by_offset: dict[int, bytes] = {}
        for item in messages if isinstance(messages, tuple) else ():
            if isinstance(item, tuple):
                offset, text = item
                by_offset[int(offset)] = _unhex(str(text))
        later = [o for o in by_offset if o >= self._read_from]
        if not later:
            return []
        return [by_offset.get(o, b"") for o in range(self._read_from, max(later) + 1)]
