"""The evidence of a verdict: the frames a check decided on and the fields it judged.

A check that finds a violation names its evidence itself; the reports show exactly that
and nothing guessed.  Evidence is a list of :class:`Judged` wire-log entries, in the
order they were judged: the request that provoked the verdict, then its reply (or the
event of the close, or of the deadline passing), each with the names of the fields the
check judged in it (the names the protocol's frame annotator gives them,
``responses[0].partition_responses[0].error_code``).  A check that compares two answers
names both exchanges.

Where evidence comes from:

* a connection hands out the evidence of what it just read
  (:meth:`conformance.client.Connection.exchange`): the reply's entry and the request
  sent before it on that connection (a protocol that matches replies to requests, such
  as Kafka by correlation id, names the request itself);
* a close or a deadline raised by the connection carries its event entry, and its
  evidence says how it ended (:attr:`Evidence.ending`), so that before a close or a
  silence becomes a FAIL the suite can make sure the target is still there;
* a decoded answer (:func:`decoded`) is a tree of :class:`Node` and :class:`NodeList`
  that knows where each of its values sits: ``p.at("error_code")`` is the evidence of
  the reply with that one field judged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Judged:
    """One wire-log entry of a case (its index in the case's log) and the fields judged."""

    entry: int
    fields: tuple[str, ...] = ()


@dataclass(frozen=True)
class Evidence:
    """What a verdict was decided on."""

    frames: tuple[Judged, ...] = ()
    ending: str | None = None
    """``"close"`` or ``"timeout"`` when the verdict is that the target closed the
    connection or said nothing: such a verdict stands only if the target is still there."""

    @classmethod
    def of(cls, request: int | None, reply: int | None, *, ending: str | None = None) -> Evidence:
        """The request entry (if any) and the reply or event entry (if any)."""
        frames = tuple(Judged(e) for e in (request, reply) if e is not None)
        return cls(frames, ending)

    def on(self, *fields: str) -> Evidence:
        """The same frames, with ``fields`` judged in the last one."""
        if not self.frames or not fields:
            return self
        last = self.frames[-1]
        judged = Judged(last.entry, last.fields + tuple(f for f in fields if f not in last.fields))
        return Evidence((*self.frames[:-1], judged), self.ending)

    def asked(self, *fields: str) -> Evidence:
        """The same frames, with ``fields`` judged in the first one: the request, when the
        evidence is a request and its reply (what was asked is part of the verdict)."""
        if len(self.frames) < 2 or not fields:
            return self
        first = self.frames[0]
        judged = Judged(
            first.entry, first.fields + tuple(f for f in fields if f not in first.fields)
        )
        return Evidence((judged, *self.frames[1:]), self.ending)

    def __add__(self, other: Evidence) -> Evidence:
        """Both: e.g. two answers a check compared (fields of a frame named twice merge)."""
        merged: dict[int, tuple[str, ...]] = {}
        for j in self.frames + other.frames:
            known = merged.get(j.entry, ())
            merged[j.entry] = known + tuple(f for f in j.fields if f not in known)
        frames = tuple(Judged(e, f) for e, f in merged.items())
        return Evidence(frames, self.ending or other.ending)

    def as_list(self) -> list[dict[str, Any]]:
        """The ``evidence`` of a case record in ``results.json``."""
        return [{"entry": j.entry, "fields": list(j.fields)} for j in self.frames]


def fields_named(name: str, listed: Sequence[str]) -> list[str]:
    """The fields of a frame (``listed``, the annotator's names) a judged ``name`` stands
    for: a name that is a field is itself; an array judged as a whole (``responses``) is its
    count (``responses count``); a struct judged as a whole (``responses[0]``) is every field
    under it; [] when it stands for none of them.  The reports and the checks use this one
    rule."""
    if name in listed:
        return [name]
    if f"{name} count" in listed:
        return [f"{name} count"]
    return [n for n in listed if n.startswith((f"{name}.", f"{name}["))]


NO_EVIDENCE = Evidence()
"""For a violation found before anything was sent (none should exist: tests check)."""


def field_name(path: str, key: str | int) -> str:
    """``responses[0]`` + ``error_code`` -> ``responses[0].error_code``; + 1 -> ``[1]``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


class Node(dict[str, Any]):
    """A decoded struct that knows the frame it came from and its place in it."""

    evidence: Evidence
    path: str

    def at(self, *keys: str | int) -> Evidence:
        """The evidence of this struct's frame with the field ``keys`` leads to judged
        (no keys: the struct itself, e.g. a partition whose content is wrong)."""
        name = self.path
        for key in keys:
            name = field_name(name, key)
        return self.evidence.on(name) if name else self.evidence


class NodeList(list[Any]):
    """A decoded array that knows the frame it came from and its place in it."""

    evidence: Evidence
    path: str

    def at(self, *keys: str | int) -> Evidence:
        name = self.path
        for key in keys:
            name = field_name(name, key)
        return self.evidence.on(name) if name else self.evidence


def decoded(value: Any, evidence: Evidence, path: str = "") -> Any:
    """``value`` (a decoded body: dicts, lists, leaves) as a tree of :class:`Node` and
    :class:`NodeList` whose ``at`` names fields by ``path`` (the frame annotator's names)."""
    if isinstance(value, Mapping):
        node = Node({k: decoded(v, evidence, field_name(path, k)) for k, v in value.items()})
        node.evidence, node.path = evidence, path
        return node
    if isinstance(value, list):
        items = NodeList(decoded(v, evidence, field_name(path, i)) for i, v in enumerate(value))
        items.evidence, items.path = evidence, path
        return items
    return value


def combined(parts: Iterable[Evidence]) -> Evidence:
    """All of ``parts``, in order."""
    out = NO_EVIDENCE
    for part in parts:
        out = out + part
    return out
