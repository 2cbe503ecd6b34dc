"""V1 line structure mutators: text mutations that know the envelope.

A request is ``V1|<correlation_id>|<command>|<args>``, args separated by spaces, each
named by :mod:`commands`.  The structure mutators take one of the pool's requests (its
:class:`~.commands.Request`), write it as :class:`Parts` and change one thing, saying
where (the generic code adds the ``\\n``):

* ``envelope`` -- the version, the correlation id or the command set to an odd value,
  or the ``|`` separators (three sections, five, a doubled or a missing one);
* ``number`` -- one integer arg (or the correlation id): negated, an int64 or int32
  edge or just past it, huge, leading zeros, a ``+``, padded, a float, hex, non-ASCII
  digits, no digits at all;
* ``arg`` -- one arg by its kind: a name empty, long, with a space, ``|`` or ``:``; a
  ``key:value`` with an empty key or value, no ``:``, several; a role or option value
  out of its choices; a number as ``number`` does;
* ``arity`` -- an arg dropped, doubled, two swapped, one added, the args emptied;
* ``separator`` -- the space between args doubled or made a tab, a vertical tab, a
  no-break space, ``|`` or ``,``; the ``:`` of ``key:value`` or the ``=`` of an
  option changed; whitespace around the args;
* ``case`` -- the case of the command, the option key or value, or the role changed
  (``doc`` matches exactly, ``real`` in any case);
* ``line-ending`` -- ``\\r`` before the newline (``\\r\\n``), a ``\\r`` inside, trailing
  whitespace or a NUL;
* ``encoding`` -- bytes that are not UTF-8 (or odd UTF-8: a BOM, NEL, a zero-width or
  ideographic space) put into one field;
* ``pipeline`` -- several requests in one write: pool lines, mutated ones and empty
  lines, joined by ``\\n`` or ``\\r\\n``;
* ``long-field`` -- one field made long (1 KiB to 32 KiB), the line under the limit.

Frame mutators are in :mod:`.fuzz_frames`.

Guards, so that the campaign's shape holds whatever a mutator draws: no mutator writes
an ``acks=all`` that reads as one (its reply may come no sooner than the deadline:
:mod:`.fuzzing`), though it writes ``ACKS=1``, ``acks=al`` and the like; no mutator names
the sink topic (what the pool produces to, never read back) anywhere but in a PRODUCE,
so no CONSUME's reply grows with the campaign; no field that the broker stores (a
PRODUCE's topic or message, a group's names) is made longer than :data:`STORED_MAX`;
no long field is echoed back (the correlation id stays short near the limit).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace

from conformance.fuzz.case import Pool, StructureMutator
from conformance.protocols.v1line import codec
from conformance.protocols.v1line.commands import COMMANDS, Request

LIMIT = codec.LINE_LIMIT
STORED_MAX = 4096
"""The longest a field the broker keeps (a topic, a message, a group's names) is made."""
READ_TOPIC = "fuzz-read"
SINK_TOPIC = "fuzz-sink"
GROUP = "fuzz-group"


@dataclass(frozen=True)
class Parts:
    """A request line in its pieces, as bytes (so any byte can be put anywhere)."""

    version: bytes
    cid: bytes
    command: bytes
    args: tuple[bytes, ...]
    names: tuple[str, ...]
    """The name of each arg (the option's key for the option)."""
    sep: bytes = b" "

    @classmethod
    def of(cls, request: Request) -> Parts:
        spec = request.spec
        args: list[bytes] = []
        names: list[str] = []
        for name, value in zip(spec.arg_names, request.args, strict=True):
            if value is None:
                continue
            opt = spec.option is not None and name == spec.option.key
            args.append(f"{name}={value}".encode() if opt else str(value).encode())
            names.append(name)
        return cls(
            b"V1", request.correlation_id.encode(), request.command.encode(), (*args,), (*names,)
        )

    def line(self) -> bytes:
        return b"|".join((self.version, self.cid, self.command, self.sep.join(self.args)))

    def with_arg(self, at: int, value: bytes) -> Parts:
        args = list(self.args)
        args[at] = value
        return replace(self, args=(*args,))

    def kind(self, at: int) -> str:
        """The kind of arg ``at``: name, int, message, choice or option."""
        spec = COMMANDS.get(self.command.decode(errors="replace"))
        name = self.names[at]
        if spec is None:
            return "name"
        if spec.option is not None and name == spec.option.key:
            return "option"
        return next((f.kind for f in spec.fields if f.name == name), "name")

    @property
    def stored(self) -> bool:
        """Whether the broker keeps what this request names (its fields stay short)."""
        return self.command in (b"PRODUCE", b"JOIN", b"COMMIT", b"SET_PARTITION_ROLE")


_PARTS: dict[int, tuple[Pool, list[Parts]]] = {}
"""The pool's requests as parts, by pool (a pool is drawn once per seed and kept)."""


def _parts(pool: Pool) -> list[Parts]:
    held = _PARTS.get(id(pool))
    if held is None or held[0] is not pool:
        if len(_PARTS) > 16:
            _PARTS.clear()
        held = pool, [Parts.of(r) for r in pool.requests if isinstance(r, Request)]
        _PARTS[id(pool)] = held
    return held[1]


def _pick(rng: random.Random, pool: Pool, want: Callable[[Parts], bool] = bool) -> Parts:
    """One of the pool's requests as parts (one that ``want`` takes, if there is one)."""
    parts = _parts(pool)
    fit = [p for p in parts if want(p)]
    return rng.choice(fit or parts)


# ----------------------------------------------------------------- values


def _numbers(current: bytes) -> dict[str, list[bytes]]:
    neg = current[1:] if current.startswith(b"-") else b"-" + (current.lstrip(b"+") or b"1")
    return {
        "negative": [neg, b"-1", b"-2", b"-9223372036854775808", b"-0000000001"],
        "edge": [
            b"0", b"9223372036854775807", b"9223372036854775808", b"-9223372036854775809",
            b"2147483647", b"2147483648", b"4294967296", b"18446744073709551616",
            b"1" * 40, b"9" * 19,
        ],
        "format": [
            b"-0", b"+0", b"+" + current, b"00" + current, b"0" * 30 + current, current + b"0",
        ],
        "malformed": [
            b"1.5", b"1.0", b"1e3", b"0x10", b"1_000", b"\xd9\xa1\xd9\xa2", b"\xef\xbc\x91",
            b"+", b"-", b"--1", b"+-1", b"NaN", b"inf", b"one", b"1,2", b"1:2",
        ],
    }  # fmt: skip


def number_value(rng: random.Random, current: bytes) -> bytes:
    """An odd value for an integer field now holding ``current``."""
    table = _numbers(current)
    return rng.choice(table[rng.choice(list(table))])


NAMES = (b"a", b"-", b"0", b"..", b"\xc3\xa9t\xc3\xa9", b"a:b", b"a=b", b"*", b"%s", b"$(x)")
"""Odd names that are still one token (a space or ``|`` in one is its own case)."""


def name_value(rng: random.Random, current: bytes, stored: bool) -> bytes:
    longest = STORED_MAX if stored else 8192
    pick = rng.randrange(6)
    if pick == 0:
        return rng.choice(NAMES)
    if pick == 1:
        return current + rng.choice((b" x", b"|x", b"\t", b"\x00"))
    if pick == 2:
        return current.upper() if current != current.upper() else current.lower()
    if pick == 3:
        return b"n" * rng.choice((255, 256, 1024, longest))
    if pick == 4:
        return current[: rng.randrange(len(current))] if current else b""
    return current * 2


MESSAGES = (
    b":", b":v", b"k:", b"::", b"k::v", b"k:v:w", b"kv", b"k", b":=", b"k:acks=all",
    b"=:v", b"k\\:v", b"k:\xc3\xa9",
)  # fmt: skip


def message_value(rng: random.Random, current: bytes) -> bytes:
    key, _, value = current.partition(b":")
    pick = rng.randrange(4)
    if pick == 0:
        return rng.choice(MESSAGES)
    if pick == 1:  # the key emptied, or the value, or both
        return rng.choice((b":" + value, key + b":", b":"))
    if pick == 2:
        return key + value  # no ':'
    return key + b":" + value + b":" + value


ROLES = (b"LEADER", b"Follower", b"observer", b"lead", b"leaders", b"0", b"1", b"leader,follower")
OPTIONS = {
    "acks": (
        b"acks=2", b"acks=", b"acks", b"ack=1", b"acks=-1", b"acks=01", b"acks==1", b"acks=1 ",
        b"=1", b"Acks=0", b"ACKS=1", b"acks=al", b"acks=all,1", b"acks:1",
    ),
    "assignor": (
        b"assignor=RANGE", b"assignor=sticky", b"assignor=", b"assignor", b"strategy=range",
        b"assignor=round-robin", b"assignor=roundrobin", b"=range", b"ASSIGNOR=range",
    ),
}  # fmt: skip


def arg_value(rng: random.Random, parts: Parts, at: int) -> bytes:
    """An odd value for arg ``at`` of ``parts``, by its kind."""
    current = parts.args[at]
    kind = parts.kind(at)
    if kind == "int":
        return number_value(rng, current)
    if kind == "message":
        return message_value(rng, current)
    if kind == "choice":
        return rng.choice(ROLES)
    if kind == "option":
        return rng.choice(OPTIONS.get(parts.names[at], (b"x=y",)))
    return name_value(rng, current, parts.stored)


def _no_sink(parts: Parts) -> Parts:
    """No CONSUME reads the sink topic (its reply would grow with the campaign)."""
    if parts.command.strip().upper() != b"CONSUME" or SINK_TOPIC.encode() not in parts.line():
        return parts
    swap = SINK_TOPIC.encode(), READ_TOPIC.encode()
    return replace(
        parts,
        cid=parts.cid.replace(*swap),
        args=tuple(a.replace(*swap) for a in parts.args),
    )


def _line(parts: Parts) -> bytes:
    return _no_sink(parts).line()


# ----------------------------------------------------------------- structure


VERSIONS = (b"", b"V", b"v1", b"V2", b"V0", b"V01", b"V1 ", b" V1", b"V1\x00", b"\xef\xbb\xbfV1")
CIDS = (b"", b"0", b"-1", b" 7 ", b"a b", b"\t", b"\xc3\xa9", b"0x1", b"7" * 512, b"\x00")
COMMAND_NAMES = (b"", b"FETCH", b"PRODUCEX", b"PRODUC", b"PING PING", b"PI NG", b"P", b"_", b"\x00")


def envelope(rng: random.Random, pool: Pool) -> bytes:
    parts = _pick(rng, pool)
    op = rng.randrange(5)
    if op == 0:
        return _line(replace(parts, version=rng.choice(VERSIONS)))
    if op == 1:
        return _line(replace(parts, cid=rng.choice(CIDS)))
    if op == 2:
        command = rng.choice(
            (*COMMAND_NAMES, parts.command + b" ", b" " + parts.command, parts.command + b"S")
        )
        return _line(replace(parts, command=command))
    line = _line(parts)
    bars = [i for i, b in enumerate(line) if b == 0x7C]
    if op == 3:  # a section too few or too many
        return rng.choice((line[: bars[-1]], line + b"|", line + b"|x", b"|" + line))
    at = rng.choice(bars)  # one separator doubled, dropped or changed
    return line[:at] + rng.choice((b"||", b"", b" ", b":", b"\\|", b"\xc7\x80")) + line[at + 1 :]


def _with_ints(parts: Parts) -> bool:
    return any(parts.kind(i) == "int" for i in range(len(parts.args)))


def number(rng: random.Random, pool: Pool) -> bytes:
    parts = _pick(rng, pool, _with_ints)
    ints = [i for i in range(len(parts.args)) if parts.kind(i) == "int"]
    if not ints or rng.random() < 0.1:
        return _line(replace(parts, cid=number_value(rng, parts.cid)))
    at = rng.choice(ints)
    return _line(parts.with_arg(at, number_value(rng, parts.args[at])))


def arg(rng: random.Random, pool: Pool) -> bytes:
    parts = _pick(rng, pool, lambda p: bool(p.args))
    if not parts.args:
        return _line(replace(parts, args=(rng.choice(NAMES),)))
    at = rng.randrange(len(parts.args))
    return _line(parts.with_arg(at, arg_value(rng, parts, at)))


def arity(rng: random.Random, pool: Pool) -> bytes:
    parts = _pick(rng, pool, lambda p: bool(p.args))
    args = list(parts.args)
    op = rng.randrange(5)
    at = rng.randrange(len(args)) if args else 0
    if op == 0 and args:
        del args[at]
    elif op == 1 and args:
        args.insert(at, args[at])
    elif op == 2 and len(args) > 1 and len(set(args)) > 1:
        other = rng.choice([i for i, a in enumerate(args) if a != args[at]])
        args[at], args[other] = args[other], args[at]
    elif op == 3:
        args.insert(rng.randint(0, len(args)), rng.choice((b"x", b"0", b"acks=1", b"k:v")))
    else:
        args = []
    return _line(replace(parts, args=(*args,)))


SEPARATORS = (b"  ", b"\t", b" \t ", b"\x0b", b"\x0c", b"\xc2\xa0", b"\xe3\x80\x80", b"|", b",")


def separator(rng: random.Random, pool: Pool) -> bytes:
    parts = _pick(rng, pool, lambda p: len(p.args) > 1)
    op = rng.randrange(4)
    if op == 0 and len(parts.args) > 1:  # between args: all of them, or one
        sep = rng.choice(SEPARATORS)
        if rng.random() < 0.5:
            return _line(replace(parts, sep=sep))
        at = rng.randrange(1, len(parts.args))
        joined = parts.args[at - 1] + sep + parts.args[at]
        args = (*parts.args[: at - 1], joined, *parts.args[at + 1 :])
        return _line(replace(parts, args=args))
    kinds = [parts.kind(i) for i in range(len(parts.args))]
    if op == 1 and "message" in kinds:  # the ':' of key:value
        at = kinds.index("message")
        key, _, value = parts.args[at].partition(b":")
        mid = rng.choice((b"=", b"::", b": ", b" :", b"", b";", b"\xef\xbc\x9a"))
        return _line(parts.with_arg(at, key + mid + value))
    if op == 2 and "option" in kinds:  # the '=' of an option
        at = kinds.index("option")
        key, _, value = parts.args[at].partition(b"=")
        mid = rng.choice((b":", b"==", b" = ", b" =", b"= ", b"", b"=\t"))
        return _line(parts.with_arg(at, key + mid + value))
    lead, trail = rng.choice(((b" ", b""), (b"", b" "), (b"\t", b"\t"), (b"  ", b"  ")))
    line = _line(parts)  # whitespace around the args section
    at = line.rindex(b"|") + 1
    return line[:at] + lead + line[at:] + trail


def _recase(rng: random.Random, text: bytes) -> bytes:
    """``text`` in another case: lower, upper, title, swapped or mixed (never the same,
    if it has a letter)."""
    mixed = bytes(c ^ 0x20 if chr(c).isalpha() and rng.random() < 0.5 else c for c in text)
    ways = (text.lower(), text.upper(), text.title(), text.swapcase(), mixed)
    changed = [w for w in ways if w != text]
    return rng.choice(changed) if changed else text


def case(rng: random.Random, pool: Pool) -> bytes:
    parts = _pick(rng, pool)
    cased = [i for i in range(len(parts.args)) if parts.kind(i) in ("option", "choice")]
    if cased and rng.random() < 0.5:
        at = rng.choice(cased)
        return _line(parts.with_arg(at, _recase(rng, parts.args[at])))
    return _line(replace(parts, command=_recase(rng, parts.command)))


def line_ending(rng: random.Random, pool: Pool) -> bytes:
    line = _line(_pick(rng, pool))
    op = rng.randrange(4)
    if op == 0:
        return line + rng.choice((b"\r", b"\r\r", b"\r "))
    if op == 1:
        return line + rng.choice((b" ", b"\t", b"\x00", b" \r", b"\x0c"))
    at = rng.randrange(len(line) + 1)
    if op == 2:
        return line[:at] + b"\r" + line[at:]
    return b"\r" + line


ODD_BYTES = (
    b"\xff", b"\xfe", b"\xc3\x28", b"\xed\xa0\x80", b"\xc0\x80", b"\x80", b"\xf5\x80\x80\x80",
    b"\xe2\x82", b"\x00", b"\xef\xbb\xbf", b"\xc2\x85", b"\xe2\x80\x8b", b"\xe3\x80\x80",
)  # fmt: skip


def encoding(rng: random.Random, pool: Pool) -> bytes:
    parts = _pick(rng, pool)
    odd = rng.choice(ODD_BYTES)
    where = rng.randrange(4 + len(parts.args))
    if where == 0:
        return odd + _line(parts)  # a BOM, a NUL before the version
    if where == 1:
        return _line(replace(parts, cid=_insert(rng, parts.cid, odd)))
    if where == 2:
        return _line(replace(parts, command=_insert(rng, parts.command, odd)))
    if where == 3 or not parts.args:
        return _line(parts) + odd
    at = where - 4
    return _line(parts.with_arg(at, _insert(rng, parts.args[at], odd)))


def _insert(rng: random.Random, text: bytes, odd: bytes) -> bytes:
    at = rng.randint(0, len(text))
    return text[:at] + odd + text[at:]


SINGLE: dict[str, StructureMutator] = {
    "envelope": envelope,
    "number": number,
    "arg": arg,
    "arity": arity,
    "separator": separator,
    "case": case,
    "line-ending": line_ending,
    "encoding": encoding,
}


def pipeline(rng: random.Random, pool: Pool) -> bytes:
    lines = []
    for _ in range(rng.randint(2, 8)):
        pick = rng.random()
        if pick < 0.15:
            lines.append(rng.choice((b"", b"\r", b" ")))
        elif pick < 0.6:
            lines.append(_line(_pick(rng, pool)))
        else:
            lines.append(SINGLE[rng.choice(sorted(SINGLE))](rng, pool))
    return rng.choice((b"\n", b"\r\n")).join(lines)


def long_field(rng: random.Random, pool: Pool) -> bytes:
    parts = _pick(rng, pool)
    size = rng.choice((1024, 8192, 32768))
    where = rng.randrange(3)
    if where == 0 or not parts.args:  # the correlation id: echoed, so 32 KiB at most
        return _line(replace(parts, cid=b"7" * size))
    at = rng.randrange(len(parts.args))
    kind = parts.kind(at)
    if kind == "int":  # leading zeros: still the same number
        return _line(parts.with_arg(at, b"0" * size + parts.args[at].lstrip(b"+-")))
    if parts.stored:
        size = min(size, STORED_MAX)
    if where == 1:  # many args
        return _line(replace(parts, args=(*parts.args, *(b"x",) * (size // 2))))
    return _line(parts.with_arg(at, parts.args[at][:1] + b"n" * size))


STRUCTURE_MUTATORS: dict[str, StructureMutator] = {
    **SINGLE,
    "pipeline": pipeline,
    "long-field": long_field,
}
