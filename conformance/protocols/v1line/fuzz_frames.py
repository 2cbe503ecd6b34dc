"""V1 line frame mutators: a V1 frame is one ``\\n``-terminated line of at most 64 KiB.

There is no length prefix to lie with, so the generic ``length-lie`` is left out;
``truncate`` is a line cut before its newline, ``garbage``, ``split``, ``drip`` and
``burst`` keep their meaning.  Beside them:

* ``overlong`` -- a line just under the limit, exactly at it, just over it, or far over
  it, with or without its newline, after a valid line or before one;
* ``no-newline`` -- whole requests, the last without its newline;
* ``blank-lines`` -- empty lines (``\\n``, ``\\r\\n``, spaces) alone or between requests.
"""

from __future__ import annotations

import random

from conformance.fuzz.case import FrameMutator, FuzzProtocol, Pool
from conformance.fuzz.mutators import FRAME_MUTATORS
from conformance.protocols.v1line.fuzz_mutators import READ_TOPIC

Writes = tuple[tuple[bytes, ...], float]


def padded(rng: random.Random, size: int) -> bytes:
    """A line of exactly ``size`` bytes (without its newline) that reads as a request
    whose reply is short and that the broker stores nothing of."""
    cid = b"%d" % rng.randrange(1000)
    heads = {
        "consume": b"V1|" + cid + b"|CONSUME|" + READ_TOPIC.encode() + b" 0 ",  # leading zeros
        "ping": b"V1|" + cid + b"|PING|",  # spaces: doc, an arg count; real trims them
        "unknown": b"V1|" + cid + b"|",  # a long unknown command, no arg
    }
    how = rng.choice(sorted(heads))
    head = heads[how]
    if how == "consume":
        return head + b"0" * (size - len(head) - 1) + b"1"
    if how == "ping":
        return head + b" " * (size - len(head))
    return head + b"X" * (size - len(head) - 1) + b"|"


def overlong(rng: random.Random, proto: FuzzProtocol, pool: Pool) -> Writes:
    limit = proto.frame_limit
    size = rng.choice(
        (limit - 1, limit, limit + 1, limit + rng.randint(2, 4096), 2 * limit, 4 * limit)
    )
    line = padded(rng, size)
    newline = rng.random() < 0.8
    data = line + b"\n" if newline else line
    before = rng.random()
    if before < 0.3:  # answered first, then the long line
        data = proto.frame(rng.choice(pool.payloads)) + data
    elif before < 0.5 and newline:  # never answered if the long one is over the limit
        data += proto.frame(rng.choice(pool.payloads))
    return (data,), 0.0


def no_newline(rng: random.Random, proto: FuzzProtocol, pool: Pool) -> Writes:
    lines = [rng.choice(pool.payloads) for _ in range(rng.randint(1, 4))]
    return (b"".join(proto.frame(p) for p in lines[:-1]) + lines[-1],), 0.0


def blank_lines(rng: random.Random, proto: FuzzProtocol, pool: Pool) -> Writes:
    blank = rng.choice((b"\n", b"\r\n", b" \n", b"\t\n"))
    out = blank * rng.randint(1, 64)
    if rng.random() < 0.5:
        a, b = proto.frame(rng.choice(pool.payloads)), proto.frame(rng.choice(pool.payloads))
        out = a + out + b
    return (out,), 0.0


LINE_FRAMES = ("truncate", "garbage", "split", "drip", "burst")
"""The generic frame mutators that mean something for lines (not ``length-lie``)."""

FRAME_MUTATORS_V1: dict[str, FrameMutator] = {
    **{n: FRAME_MUTATORS[n] for n in LINE_FRAMES},
    "overlong": overlong,
    "no-newline": no_newline,
    "blank-lines": blank_lines,
}
