"""The V1 line broker's durable group and offset files (V1L-DUR-1 to -6), without sockets.

:class:`GroupFiles` keeps two JSON files directly under the broker's data directory
(V1L-DUR-3): ``groups.json`` (V1L-DUR-2) and ``offsets.json`` (V1L-DUR-1).

Layout, as the real broker writes it (FACTS.md, "Offsets and durability", O and G; V1L-DUR-6):

* ``offsets.json``: group -> topic -> partition (a decimal string key) -> offset, e.g.
  ``{"g": {"orders": {"0": 5, "1": 2}}}``.  In memory the partition is an ``int``.
* ``groups.json``: group -> ``{"topic", "generation", "assignor", "member_order",
  "assignments", "members"}`` where ``member_order`` is the consumer ids in order,
  ``assignments`` maps consumer id -> list of partitions and ``members`` is a list of
  ``{"consumer_id", "last_heartbeat_unix_ms"}``.

Where it differs from the real broker: atomicity (V1L-DUR-4, -5; the real broker keeps only
V1L-DUR-7). The real broker truncates each file in place and then encodes into it, with no
fsync, so a kill between the two leaves an empty or partial file. Here every save writes a
temporary file in the same directory, fsyncs it, ``os.replace``-s it over the target and fsyncs
the directory (as the engine journal's ``rewrite`` does, conformance/engine/store.py). A reader
therefore sees either the previous complete file or the new one, and once ``save_*`` returns
the new one survives kill -9 and power loss. A kill mid-save can leave a stray
``.groups.json.*.tmp`` / ``.offsets.json.*.tmp``; :meth:`GroupFiles.load` ignores them. One
writer per data directory (the broker) is assumed.

Loading: a missing file is empty state.  A damaged file (not UTF-8, not JSON, or the wrong
shape) raises :class:`DurableStateError`, whose message is one line naming the file and what is
wrong, so the broker can refuse to start with that line instead of a traceback (the real broker
silently starts empty, which loses committed offsets: V1L-DUR-1).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

GROUPS_FILE = "groups.json"
OFFSETS_FILE = "offsets.json"
ASSIGNORS = ("round_robin", "range")


class DurableStateError(Exception):
    """A damaged ``groups.json`` or ``offsets.json``: ``path`` and ``reason`` say which and why."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


@dataclass
class Member:
    """One group member as persisted (``members[]`` of groups.json)."""

    consumer_id: str
    last_heartbeat_unix_ms: int


@dataclass
class Group:
    """One consumer group as persisted (V1L-DUR-2: topic, generation, assignor, members and
    assignments; ``member_order`` as the real broker keeps it)."""

    topic: str
    generation: int
    assignor: str
    member_order: list[str] = field(default_factory=list)
    assignments: dict[str, list[int]] = field(default_factory=dict)
    members: list[Member] = field(default_factory=list)


Groups = dict[str, Group]
"""Group name -> its state."""

Offsets = dict[str, dict[str, dict[int, int]]]
"""Group -> topic -> partition -> committed offset."""


class GroupFiles:
    """``groups.json`` and ``offsets.json`` under ``data_dir``, each saved atomically."""

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.data_dir = os.fspath(data_dir)
        self.groups_path = os.path.join(self.data_dir, GROUPS_FILE)
        self.offsets_path = os.path.join(self.data_dir, OFFSETS_FILE)

    def load(self) -> tuple[Groups, Offsets]:
        """Both files' state; a missing file is empty.  Raises :class:`DurableStateError`."""
        groups_doc = _read_json(self.groups_path)
        offsets_doc = _read_json(self.offsets_path)
        groups = {} if groups_doc is None else _parse_groups(self.groups_path, groups_doc)
        offsets = {} if offsets_doc is None else _parse_offsets(self.offsets_path, offsets_doc)
        return groups, offsets

    def save_groups(self, groups: Groups) -> None:
        """Replace ``groups.json`` atomically and durably with ``groups``."""
        doc = {name: _group_doc(g) for name, g in groups.items()}
        self._write(self.groups_path, doc)

    def save_offsets(self, offsets: Offsets) -> None:
        """Replace ``offsets.json`` atomically and durably with ``offsets``."""
        doc = {
            group: {
                topic: {str(p): off for p, off in parts.items()} for topic, parts in topics.items()
            }
            for group, topics in offsets.items()
        }
        self._write(self.offsets_path, doc)

    def _write(self, path: str, doc: object) -> None:
        data = (json.dumps(doc, separators=(",", ":")) + "\n").encode()
        os.makedirs(self.data_dir, exist_ok=True)
        name = os.path.basename(path)
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=self.data_dir)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self._sync_dir()

    def _sync_dir(self) -> None:
        dir_fd = os.open(self.data_dir, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _group_doc(g: Group) -> dict[str, Any]:
    return {
        "topic": g.topic,
        "generation": g.generation,
        "assignor": g.assignor,
        "member_order": list(g.member_order),
        "assignments": {cid: list(parts) for cid, parts in g.assignments.items()},
        "members": [
            {"consumer_id": m.consumer_id, "last_heartbeat_unix_ms": m.last_heartbeat_unix_ms}
            for m in g.members
        ],
    }


def _read_json(path: str) -> Any:
    """The file's JSON value, or None when it does not exist."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise DurableStateError(path, f"cannot read: {e.strerror or e}") from None
    if not raw.strip():
        raise DurableStateError(path, "empty file (torn write?)")
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise DurableStateError(path, f"not UTF-8 (byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise DurableStateError(
            path, f"not JSON: {e.msg} at line {e.lineno} column {e.colno}"
        ) from None


def _kind(v: object) -> str:
    return "null" if v is None else type(v).__name__


def _obj(path: str, where: str, v: object) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise DurableStateError(path, f"{where}: expected an object, got {_kind(v)}")
    return v


def _int(path: str, where: str, v: object) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise DurableStateError(path, f"{where}: expected an integer, got {_kind(v)}")
    return v


def _str(path: str, where: str, v: object) -> str:
    if not isinstance(v, str):
        raise DurableStateError(path, f"{where}: expected a string, got {_kind(v)}")
    return v


def _list(path: str, where: str, v: object) -> list[Any]:
    if not isinstance(v, list):
        raise DurableStateError(path, f"{where}: expected a list, got {_kind(v)}")
    return v


def _opt(g: dict[str, Any], key: str, empty: object) -> object:
    """``g[key]``, or ``empty`` when absent or null (Go writes an empty slice or map as null)."""
    v = g.get(key)
    return empty if v is None else v


def _parse_groups(path: str, doc: object) -> Groups:
    groups: Groups = {}
    for name, raw in _obj(path, "top level", doc).items():
        w = f"group {name!r}"
        g = _obj(path, w, raw)
        missing = [k for k in ("topic", "generation", "assignor") if k not in g]
        if missing:
            raise DurableStateError(path, f"{w}: missing {', '.join(missing)}")
        assignor = _str(path, f"{w} assignor", g["assignor"])
        if assignor not in ASSIGNORS:
            raise DurableStateError(path, f"{w} assignor: {assignor!r} is not round_robin|range")
        order = [
            _str(path, f"{w} member_order[{i}]", c)
            for i, c in enumerate(_list(path, f"{w} member_order", _opt(g, "member_order", [])))
        ]
        assignments: dict[str, list[int]] = {}
        for cid, parts in _obj(path, f"{w} assignments", _opt(g, "assignments", {})).items():
            aw = f"{w} assignments[{cid!r}]"
            assignments[cid] = [
                _int(path, f"{aw}[{i}]", p) for i, p in enumerate(_list(path, aw, parts))
            ]
        members = []
        for i, m in enumerate(_list(path, f"{w} members", _opt(g, "members", []))):
            mw = f"{w} members[{i}]"
            mo = _obj(path, mw, m)
            members.append(
                Member(
                    consumer_id=_str(path, f"{mw} consumer_id", mo.get("consumer_id")),
                    last_heartbeat_unix_ms=_int(
                        path, f"{mw} last_heartbeat_unix_ms", mo.get("last_heartbeat_unix_ms", 0)
                    ),
                )
            )
        groups[name] = Group(
            topic=_str(path, f"{w} topic", g["topic"]),
            generation=_int(path, f"{w} generation", g["generation"]),
            assignor=assignor,
            member_order=order,
            assignments=assignments,
            members=members,
        )
    return groups


def _parse_offsets(path: str, doc: object) -> Offsets:
    offsets: Offsets = {}
    for group, topics in _obj(path, "top level", doc).items():
        per_topic: dict[str, dict[int, int]] = {}
        for topic, parts in _obj(path, f"group {group!r}", topics).items():
            w = f"group {group!r} topic {topic!r}"
            per_part: dict[int, int] = {}
            for key, off in _obj(path, w, parts).items():
                try:
                    p = int(key)
                except ValueError:
                    p = None
                if p is None or str(p) != key:
                    raise DurableStateError(path, f"{w}: partition key {key!r} is not an integer")
                per_part[p] = _int(path, f"{w} partition {key}", off)
            per_topic[topic] = per_part
        offsets[group] = per_topic
    return offsets
