"""Mutators: every fuzz case is a pure function of (campaign seed, case index).

Each case gets its own ``random.Random`` seeded from the string ``"SEED:INDEX"`` (string
seeds are hashed with SHA-512, so the stream is the same in every process, whatever
``PYTHONHASHSEED``).  Nothing here reads the module-level ``random`` or Hypothesis's
``example()``; the pool of valid payloads comes from :meth:`FuzzProtocol.pool`, itself
a function of the seed.

Two modes:

* **structure** -- the framing is valid (the length prefix is computed) and the payload
  is mutated: the protocol's own layer mutators (scapy fields, scapy ``fuzz()``), plus
  bit flips, byte havoc and splices here;
* **frame** -- the framing itself is broken: a length prefix that lies (0, 1, exact-1,
  exact+1, the limit, the limit+1, 2^31, 2^32-1), a truncated frame, garbage, one frame
  split over many writes, a slow drip, a pipelined burst, connections opened with a
  partial frame and abandoned.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import replace

from conformance.fuzz.case import FrameMutator, FuzzCase, FuzzProtocol, Pool

DRIP_GAP_S = 0.0002
DRIP_MAX_WRITES = 8
BURST_MAX = 32
SPLIT_MAX = 16
ABANDON_MAX = 8


def length_lies(limit: int, exact: int) -> list[int]:
    """The prefix values a ``length-lie`` case picks from, for a payload of ``exact`` bytes."""
    return [0, 1, max(exact - 1, 0), exact + 1, limit, limit + 1, 2**31, 2**32 - 1]


def _payload(rng: random.Random, pool: Pool) -> bytes:
    return rng.choice(pool.payloads)


# ----------------------------------------------------------------- frame-breaking


def length_lie(
    rng: random.Random, proto: FuzzProtocol, pool: Pool
) -> tuple[tuple[bytes, ...], float]:
    payload = _payload(rng, pool)
    lie = rng.choice(length_lies(proto.frame_limit, len(payload)))
    return (proto.frame(payload, length=lie),), 0.0


def truncate(
    rng: random.Random, proto: FuzzProtocol, pool: Pool
) -> tuple[tuple[bytes, ...], float]:
    whole = proto.frame(_payload(rng, pool))
    return (whole[: rng.randrange(1, len(whole))],), 0.0


def garbage(rng: random.Random, proto: FuzzProtocol, pool: Pool) -> tuple[tuple[bytes, ...], float]:
    return (rng.randbytes(rng.randint(1, 64)),), 0.0


def split(rng: random.Random, proto: FuzzProtocol, pool: Pool) -> tuple[tuple[bytes, ...], float]:
    whole = proto.frame(_payload(rng, pool))
    pieces = rng.randint(2, min(SPLIT_MAX, len(whole)))
    cuts = sorted(rng.sample(range(1, len(whole)), pieces - 1))
    bounds = [0, *cuts, len(whole)]
    return tuple(whole[a:b] for a, b in itertools.pairwise(bounds)), 0.0


def drip(rng: random.Random, proto: FuzzProtocol, pool: Pool) -> tuple[tuple[bytes, ...], float]:
    whole = proto.frame(min((_payload(rng, pool) for _ in range(4)), key=len))
    head = [whole[i : i + 1] for i in range(min(DRIP_MAX_WRITES - 1, len(whole)))]
    rest = whole[len(head) :]
    return (*head, rest) if rest else tuple(head), DRIP_GAP_S


def burst(rng: random.Random, proto: FuzzProtocol, pool: Pool) -> tuple[tuple[bytes, ...], float]:
    count = rng.randint(2, BURST_MAX)
    return (b"".join(proto.frame(_payload(rng, pool)) for _ in range(count)),), 0.0


FRAME_MUTATORS: dict[str, FrameMutator] = {
    "length-lie": length_lie,
    "truncate": truncate,
    "garbage": garbage,
    "split": split,
    "drip": drip,
    "burst": burst,
}


def _abandoned(rng: random.Random, proto: FuzzProtocol, pool: Pool) -> tuple[bytes, ...]:
    out = []
    for _ in range(rng.randint(1, ABANDON_MAX)):
        whole = proto.frame(_payload(rng, pool))
        out.append(whole[: rng.randrange(1, len(whole))])
    return tuple(out)


# ------------------------------------------------------------ structure (generic)


def valid(rng: random.Random, pool: Pool) -> bytes:
    return _payload(rng, pool)


def bitflip(rng: random.Random, pool: Pool) -> bytes:
    data = bytearray(_payload(rng, pool))
    if not data:
        return b"\x00"
    for _ in range(rng.randint(1, 4)):
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return bytes(data)


INTERESTING_BYTES = (0x00, 0x01, 0x7F, 0x80, 0xFF, 0x20, 0x0A, 0xBA, 0x7C)


def havoc(rng: random.Random, pool: Pool) -> bytes:
    """A few byte-level edits: overwrite, insert or delete, with interesting bytes."""
    data = bytearray(_payload(rng, pool))
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(3)
        at = rng.randrange(len(data) + 1)
        value = rng.choice(INTERESTING_BYTES) if rng.random() < 0.5 else rng.randrange(256)
        if op == 0 and at < len(data):
            data[at] = value
        elif op == 1:
            data[at:at] = bytes([value]) * rng.randint(1, 8)
        elif data:
            del data[at : at + rng.randint(1, 8)]
    return bytes(data)


def splice(rng: random.Random, pool: Pool) -> bytes:
    a, b = _payload(rng, pool), _payload(rng, pool)
    return a[: rng.randint(0, len(a))] + b[rng.randint(0, len(b)) :]


GENERIC_STRUCTURE = {"valid": valid, "bitflip": bitflip, "havoc": havoc, "splice": splice}

ABANDON = "abandon"


def mutator_names(proto: FuzzProtocol) -> list[str]:
    """Every mutator, in the order a case's index is mapped onto them (stable)."""
    return [*GENERIC_STRUCTURE, *proto.structure_mutators, *proto.frame_mutators, ABANDON]


def case_rng(seed: int, index: int) -> random.Random:
    return random.Random(f"{seed}:{index}")


def generate(proto: FuzzProtocol, pool: Pool, seed: int, index: int) -> FuzzCase:
    """Case ``index`` of the campaign with ``seed`` (``pool`` is ``proto.pool(seed)``)."""
    rng = case_rng(seed, index)
    structure = {**GENERIC_STRUCTURE, **proto.structure_mutators}
    if rng.random() < 0.5:
        name = rng.choice(list(structure))
        case = FuzzCase(index, name, "structure", (proto.frame(structure[name](rng, pool)),))
    else:
        name = rng.choice([*proto.frame_mutators, ABANDON])
        if name == ABANDON:
            abandon = _abandoned(rng, proto, pool)
            case = FuzzCase(index, name, "frame", (proto.frame(_payload(rng, pool)),), 0, abandon)
        else:
            writes, gap = proto.frame_mutators[name](rng, proto, pool)
            case = FuzzCase(index, name, "frame", writes, gap)
    if proto.session_choice:  # drawn last: the cases of other protocols are unchanged
        case = replace(case, session=rng.random() < 0.5)
    return _spare_canary(proto, case)


def _spare_canary(proto: FuzzProtocol, case: FuzzCase) -> FuzzCase:
    """Fuzz cases never name the canary's reserved topic (its last byte is changed)."""
    name = proto.canary_topic.encode()
    if not any(name in w for w in (*case.writes, *case.abandon)):
        return case
    other = name[:-1] + (b"X" if name[-1:] != b"X" else b"Y")
    return replace(
        case,
        writes=tuple(w.replace(name, other) for w in case.writes),
        abandon=tuple(a.replace(name, other) for a in case.abandon),
    )


def cases(proto: FuzzProtocol, seed: int, start: int, stop: int) -> list[FuzzCase]:
    pool = proto.pool(seed)
    return [generate(proto, pool, seed, i) for i in range(start, stop)]
