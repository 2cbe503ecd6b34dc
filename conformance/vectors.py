"""Golden vectors: load ``vectors/<protocol>/*.yaml`` and check their schema.

A vector ties the bytes of one whole frame (its framing included) to the message the
codec decodes from it, or to the error code it refuses it with, and optionally to the
reply a broker gives.  This loader knows no protocol: it checks the keys every vector
has and the framing (through the protocol's deframer), and asks the protocol's
:class:`~conformance.plugin.VectorSchema` to check the rest.  Anything wrong raises
:class:`VectorError` naming the file, the vector id and the offending key.

Keys of a vector (``*`` = required), besides the schema's own extra keys::

    id*            unique, hierarchical, starts with "<protocol>/"
    requirements*  list of requirement IDs (e.g. CUR-FRAME-1)
    direction*     request | reply
    description*   one line
    hex*           the whole frame in hex; whitespace is ignored
    decoded        the decoded message, as plain data (the schema says what it holds)
    error          instead of ``decoded``: the error code the deframer or codec raises
    encode_exact   default true; false: encoding ``decoded`` need not give these bytes,
                   only bytes that decode to the same message
    truncated      true: ``hex`` is not a whole frame (a length prefix without its
                   payload); the deframer must wait for more (no ``decoded``), or refuse
                   it (``error``)
    setup          request vectors: steps sent to a broker first, each a text command or
                   ``{hex: FRAME}``
    reply          request vectors: the expected reply, compared on the keys given
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

import conformance
from conformance import protocols
from conformance.errors import ProtocolError
from conformance.plugin import Plugin, SchemaError, VectorSchema

VECTOR_ROOT = Path(conformance.__file__).resolve().parent.parent / "vectors"
"""``vectors/`` at the repository root (the package is installed editable)."""

REQUIRED_KEYS = ("id", "requirements", "direction", "description", "hex")
OPTIONAL_KEYS = ("decoded", "error", "encode_exact", "truncated", "setup", "reply")
DIRECTIONS = ("request", "reply")

_ID_RE = re.compile(r"[a-z0-9]+(/[a-z0-9._-]+)+")
_REQ_RE = re.compile(r"[A-Z][A-Z0-9]*-[A-Z0-9]+-[0-9]+")
_CODE_RE = re.compile(r"[A-Z][A-Z0-9_]*")
_HEX_RE = re.compile(r"([0-9a-fA-F]{2})*")


class VectorError(ValueError):
    """A vector file that does not follow the schema."""


@dataclass(frozen=True)
class Vector:
    id: str
    file: str
    protocol: str
    requirements: tuple[str, ...]
    direction: str
    description: str
    frame: bytes
    payload: bytes
    """The frame without its framing (empty for a truncated vector)."""
    decoded: Mapping[str, Any] | None = None
    error: str | None = None
    encode_exact: bool = True
    truncated: bool = False
    setup: tuple[str | bytes, ...] = ()
    reply: Mapping[str, Any] | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)
    """The keys the protocol's schema adds (Cursus: ``compression``)."""

    @property
    def message(self) -> Any:
        """``decoded`` as a message object (only for vectors with ``decoded``)."""
        if self.decoded is None:
            raise ValueError(f"vector {self.id} has no decoded message")
        return protocols.get(self.protocol).vectors().to_message(self.decoded)


def one_of(raw: Mapping[str, Any], key: str, known: Sequence[str]) -> str | None:
    """A vector's optional extra key ``key`` (a schema's ``revision``): None when absent,
    else one of ``known``; SchemaError naming the key otherwise."""
    value = raw.get(key)
    if value is not None and value not in known:
        raise SchemaError(key, f"{value!r} is not one of {', '.join(known)}")
    return value


def reply_command(raw: Mapping[str, Any], direction: str, known: Sequence[str]) -> str | None:
    """A reply vector's ``command`` (what it answers, for a protocol whose reply does not
    say): None when absent; SchemaError on a request vector or an unknown command."""
    command = raw.get("command")
    if command is None:
        return None
    if direction != "reply":
        raise SchemaError("command", "only reply vectors name a command (a request does)")
    if command not in known:
        raise SchemaError("command", f"unknown command {command!r}")
    return str(command)


def text_or_hex(v: Any, what: str) -> bytes:
    """A vector's bytes spelled ``{text: ...}`` (UTF-8) or ``{hex: ...}``; ValueError otherwise."""
    if isinstance(v, Mapping) and len(v) == 1:
        if isinstance(v.get("text"), str):
            return str(v["text"]).encode("utf-8")
        if isinstance(v.get("hex"), str):
            return parse_hex(v["hex"])
    raise ValueError(f"{what} must be {{text: ...}} or {{hex: ...}}, got {v!r}")


def plain_bytes(b: bytes) -> dict[str, str]:
    """``{text}`` for printable UTF-8 (the empty string included), ``{hex}`` otherwise."""
    try:
        text = b.decode("utf-8")
    except UnicodeDecodeError:
        return {"hex": b.hex()}
    return {"text": text} if text.isprintable() else {"hex": b.hex()}


def parse_hex(text: str) -> bytes:
    """Hex digits with any whitespace between them; ValueError if not whole bytes of hex."""
    digits = "".join(text.split())
    if not _HEX_RE.fullmatch(digits):
        bad = next((c for c in digits if c not in "0123456789abcdefABCDEF"), None)
        why = f"character {bad!r} is not hex" if bad else f"odd number of digits ({len(digits)})"
        raise ValueError(why)
    return bytes.fromhex(digits)


def mismatches(expected: Any, actual: Any, path: str, subset: Sequence[str] = ()) -> list[str]:
    """Where ``actual`` differs from ``expected``: mappings are compared on expected's
    keys, lists item by item, except the keys in ``subset``, whose expected items need
    only be among the actual ones."""
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return [f"{path}: expected a mapping, got {actual!r}"]
        out = []
        for key, want in expected.items():
            if key not in actual:
                out.append(f"{path}.{key}: missing")
            elif key in subset and isinstance(want, list):
                out += [
                    f"{path}.{key}: {t!r} not in {actual[key]!r}"
                    for t in want
                    if t not in actual[key]
                ]
            else:
                out += mismatches(want, actual[key], f"{path}.{key}", subset)
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{path}: expected {len(expected)} item(s), got {actual!r}"]
        return [
            m
            for i, (e, a) in enumerate(zip(expected, actual, strict=True))
            for m in mismatches(e, a, f"{path}[{i}]", subset)
        ]
    return [] if expected == actual else [f"{path}: expected {expected!r}, got {actual!r}"]


# ----------------------------------------------------------------------- loading


def _deframe(plugin: Plugin, frame: bytes, direction: str) -> tuple[bytes | None, str | None]:
    """(the payload of ``frame`` if it is exactly one whole frame, why not otherwise)."""
    deframer = plugin.framing.deframer(direction)
    try:
        frames = deframer.feed(frame)
    except ProtocolError as exc:
        return None, f"the framing refuses it ({exc})"
    if len(frames) == 1 and plugin.framing.frame(frames[0], direction) == frame:
        return frames[0], None
    if not frames:
        return None, "it is not a whole frame"
    return (
        None,
        f"it holds {len(frames)} frame(s) and {len(frame) - sum(map(len, frames))} more bytes",
    )


def _check(raw: Any, file: str, index: int, plugin: Plugin, schema: VectorSchema) -> Vector:
    protocol = plugin.name
    if not isinstance(raw, Mapping):
        raise VectorError(f"{file}: entry {index} is not a mapping")
    vid = raw.get("id")
    where = f"{file}: vector {vid!r}" if isinstance(vid, str) else f"{file}: entry {index}"

    def bad(key: str, why: str) -> VectorError:
        return VectorError(f"{where}: key {key!r}: {why}")

    allowed = REQUIRED_KEYS + OPTIONAL_KEYS + tuple(schema.extra_keys)
    for key in raw:
        if key not in allowed:
            raise bad(key, f"unknown key (allowed: {', '.join(allowed)})")
    for key in REQUIRED_KEYS:
        if key not in raw:
            raise bad(key, "missing")
    if not isinstance(vid, str) or not _ID_RE.fullmatch(vid) or not vid.startswith(protocol + "/"):
        raise bad("id", f"must look like {protocol}/<area>/<name> in lower case")
    reqs = raw["requirements"]
    if not isinstance(reqs, list) or not reqs or not all(isinstance(r, str) for r in reqs):
        raise bad("requirements", "must be a non-empty list of requirement IDs")
    for r in reqs:
        if not _REQ_RE.fullmatch(r):
            raise bad("requirements", f"{r!r} is not a requirement ID like CUR-FRAME-1")
    direction = raw["direction"]
    if direction not in DIRECTIONS:
        raise bad("direction", f"{direction!r} is not one of {', '.join(DIRECTIONS)}")
    if not isinstance(raw["description"], str) or not raw["description"].strip():
        raise bad("description", "must be a non-empty string")
    if not isinstance(raw["hex"], str):
        raise bad("hex", "must be a string of hex digits")
    try:
        frame = parse_hex(raw["hex"])
    except ValueError as exc:
        raise bad("hex", str(exc)) from None
    truncated = raw.get("truncated", False)
    if not isinstance(truncated, bool):
        raise bad("truncated", "must be true or false")
    payload, not_whole = _deframe(plugin, frame, direction)
    if truncated and payload is not None:
        raise bad("hex", "a truncated vector must not be a whole frame")
    if not truncated and payload is None:
        raise bad(
            "hex",
            f"the length prefix does not match the payload: {not_whole} (or set truncated: true)",
        )
    decoded, error = raw.get("decoded"), raw.get("error")
    if decoded is not None and error is not None:
        raise bad("error", "give decoded or error, not both")
    if decoded is None and error is None and not truncated:
        raise bad("decoded", "missing (give decoded or error)")
    if truncated and decoded is not None:
        raise bad("decoded", "a truncated vector has no decoded message")
    if error is not None and (not isinstance(error, str) or not _CODE_RE.fullmatch(error)):
        raise bad("error", f"{error!r} is not an upper-case error code")
    exact = raw.get("encode_exact", True)
    if not isinstance(exact, bool):
        raise bad("encode_exact", "must be true or false")
    setup = _setup(raw.get("setup", []), direction, bad)
    if raw.get("reply") is not None and direction != "request":
        raise bad("reply", "only request vectors have an expected reply")
    try:
        extras = schema.check(raw, direction)
    except SchemaError as exc:
        raise bad(exc.key, exc.why) from None
    return Vector(
        id=vid,
        file=file,
        protocol=protocol,
        requirements=tuple(reqs),
        direction=direction,
        description=raw["description"],
        frame=frame,
        payload=payload or b"",
        decoded=decoded,
        error=error,
        encode_exact=exact,
        truncated=truncated,
        setup=setup,
        reply=raw.get("reply"),
        extras=extras,
    )


def _setup(steps: Any, direction: str, bad: Any) -> tuple[str | bytes, ...]:
    if not isinstance(steps, list):
        raise bad("setup", "must be a list")
    if steps and direction != "request":
        raise bad("setup", "only request vectors have setup steps")
    out: list[str | bytes] = []
    for step in steps:
        if isinstance(step, str) and step:
            out.append(step)
        elif isinstance(step, Mapping) and list(step) == ["hex"] and isinstance(step["hex"], str):
            try:
                out.append(parse_hex(step["hex"]))
            except ValueError as exc:
                raise bad("setup", str(exc)) from None
        else:
            raise bad("setup", f"step {step!r} is neither a text command nor {{hex: FRAME}}")
    return tuple(out)


def load_file(path: Path, protocol: str) -> list[Vector]:
    """The vectors of one YAML file, checked."""
    plugin = protocols.get(protocol)
    schema = plugin.vectors()
    name = path.name
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise VectorError(f"{name}: not valid YAML: {exc}") from None
    if not isinstance(raw, list):
        raise VectorError(f"{name}: the file must hold a list of vectors")
    return [_check(item, name, i, plugin, schema) for i, item in enumerate(raw)]


def folder(protocol: str, root: Path | None = None) -> Path:
    """Where the vectors of ``protocol`` are: ``root/<protocol>`` if a root is given, else
    the plug-in's own folder, else ``vectors/<protocol>`` at the repository root."""
    if root is not None:
        return root / protocol
    return protocols.get(protocol).vector_dir or VECTOR_ROOT / protocol


def load(protocol: str, root: Path | None = None) -> list[Vector]:
    """Every vector of ``protocol``, file by file (sorted by name), in file order."""
    where = folder(protocol, root)
    files = sorted(where.glob("*.yaml"))
    if not files:
        raise VectorError(f"no vector files in {where}")
    vectors: list[Vector] = []
    seen: dict[str, str] = {}
    for path in files:
        for v in load_file(path, protocol):
            if v.id in seen:
                raise VectorError(
                    f"{v.file}: vector {v.id!r}: key 'id': duplicate (first in {seen[v.id]})"
                )
            seen[v.id] = v.file
            vectors.append(v)
    return vectors
