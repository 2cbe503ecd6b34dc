"""The field rules and the shared knowledge of Iggy's client checks (sans-IO).

:class:`Knowledge` is what the broker told every client, across connections (each
topic's partitions count as the replies described it) and the requests that keep
failing; :func:`check_fields` judges a decoded request body against the field rules of
SPEC.md's client requirements: Identifiers (IGG-CLI-5), names (IGG-CLI-6), SEND_MESSAGES'
messages and Partitioning (IGG-CLI-8), user-header blocks (IGG-CLI-9), POLL_MESSAGES'
strategy and count (IGG-CLI-10, IGG-CLI-11).  :mod:`.validation_checks` runs them.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from conformance.validate.contract import Violation

FAILURES_KEPT = 4096
"""Failing requests remembered at most (the oldest are forgotten first)."""
MAX_PAYLOAD = 64_000_000
MAX_USER_HEADERS = 100_000
HEADER_KINDS = range(1, 16)
STRATEGY_KINDS = range(1, 6)
VALUELESS_STRATEGIES = (3, 4, 5)
"""first, last, next: their value is 0."""
IDENTIFIER_KEYS = ("stream", "topic", "group")
NAME_KEYS = ("name", "username", "password")
_ENTRY_HEAD = struct.Struct("<BI")


Key = tuple[int, object]
"""A topic as a request names it: its stream's id and the topic's id or name."""


@dataclass
class Knowledge:
    """What the broker told the clients, across connections."""

    streams: dict[object, int] = field(default_factory=dict)
    """A stream's id and its name -> its id."""
    topics: dict[Key, list[int]] = field(default_factory=dict)
    """A topic, by its id and by its name (the two keys share one cell) -> [partitions
    count]."""
    failures: dict[bytes, tuple[int, int]] = field(default_factory=dict)
    """A request (``code + payload``) -> (the status it last got, how many times in a row)."""

    def stream_id(self, ident: Any) -> int | None:
        if not isinstance(ident, Mapping):
            return None
        return self.streams.get(ident.get("value"))

    def _cell(self, body: Mapping[str, Any]) -> list[int] | None:
        sid = self.stream_id(body.get("stream"))
        topic = body.get("topic")
        if sid is None or not isinstance(topic, Mapping):
            return None
        return self.topics.get((sid, topic.get("value")))

    def partitions_of(self, body: Mapping[str, Any]) -> int | None:
        cell = self._cell(body)
        return None if cell is None else cell[0]

    def learn_stream(self, record: Mapping[str, Any]) -> int:
        sid = int(record["id"])
        self.streams[sid] = sid
        self.streams[record["name"]] = sid
        for topic in record.get("topics", ()):
            self.learn_topic(sid, topic)
        return sid

    def learn_topic(self, sid: int, record: Mapping[str, Any]) -> None:
        cell = [int(record["partitions_count"])]
        self.topics[(sid, int(record["id"]))] = cell
        self.topics[(sid, record["name"])] = cell

    def forget(self, body: Mapping[str, Any], stream_too: bool = False) -> None:
        sid = self.stream_id(body.get("stream"))
        cell = self._cell(body)
        for key, value in list(self.topics.items()):
            if value is cell or (stream_too and key[0] == sid):
                self.topics.pop(key)

    def resize(self, body: Mapping[str, Any], by: int) -> None:
        cell = self._cell(body)
        if cell is not None:
            cell[0] = max(0, cell[0] + by)

    def failed(self, request: bytes, status: int) -> None:
        last = self.failures.pop(request, None)
        times = last[1] + 1 if last is not None and last[0] == status else 1
        if len(self.failures) >= FAILURES_KEPT:
            self.failures.pop(next(iter(self.failures)))
        self.failures[request] = (status, times)


def id_text(ident: Any) -> str:
    if isinstance(ident, Mapping):
        return str(ident.get("value"))
    return str(ident)


# ------------------------------------------------------------------ field rules


def check_fields(
    name: str, body: dict[str, Any], classic: bool, checked: list[str], found: list[Violation]
) -> None:
    for key in IDENTIFIER_KEYS:
        ident = body.get(key)
        if isinstance(ident, Mapping):
            checked.append("IGG-CLI-5")
            if ident.get("kind") == 2 and ident.get("value") == "":
                why = f"the {key} Identifier is a string of length 0 (1 to 255)"
                found.append(Violation("IGG-CLI-5", why, (f"{key}.value length",)))
    consumer = body.get("consumer")
    if isinstance(consumer, Mapping):
        checked.append("IGG-CLI-5")
        inner = consumer.get("value")
        if isinstance(inner, Mapping) and inner.get("kind") == 2 and inner.get("value") == "":
            why = "the consumer's Identifier is a string of length 0 (1 to 255)"
            found.append(Violation("IGG-CLI-5", why, ("consumer.value.value length",)))
    for key in NAME_KEYS:
        if key in body:
            checked.append("IGG-CLI-6")
            if body[key] == "":
                why = f"{name.upper()}: the {key} is empty (1 to 255 bytes)"
                found.append(Violation("IGG-CLI-6", why, (f"{key} length",)))
    if name == "send_messages":
        _send(body, classic, checked, found)
    elif name == "poll_messages":
        _poll(body, checked, found)


def _send(body: dict[str, Any], classic: bool, checked: list[str], found: list[Violation]) -> None:
    checked.append("IGG-CLI-8")
    messages = body.get("messages") or []
    if not messages:
        found.append(Violation("IGG-CLI-8", "SEND_MESSAGES carries no message", ("messages",)))
    partitioning = body.get("partitioning") or {}
    if partitioning.get("kind") == 3 and not partitioning.get("value"):
        why = "the messages-key Partitioning has an empty key (1 to 255 bytes)"
        found.append(Violation("IGG-CLI-8", why, ("partitioning.value size",)))
    for i, message in enumerate(messages):
        size = len(message.get("payload", b""))
        if not 1 <= size <= MAX_PAYLOAD:
            why = f"message {i} has a payload of {size} bytes (1 to {MAX_PAYLOAD})"
            found.append(Violation("IGG-CLI-8", why, (f"messages[{i}].payload length",)))
        headers = message.get("headers", b"")
        if not classic:
            continue
        if len(headers) > MAX_USER_HEADERS:
            why = f"message {i} has {len(headers)} bytes of user headers (at most 100000)"
            found.append(Violation("IGG-CLI-8", why, (f"messages[{i}].headers length",)))
        if headers:
            checked.append("IGG-CLI-9")
            wrong = user_headers_problem(headers)
            if wrong:
                why = f"message {i}'s user-header block: {wrong}"
                found.append(Violation("IGG-CLI-9", why, (f"messages[{i}].headers",)))


def user_headers_problem(block: bytes) -> str | None:
    """Why a user-header block is not a sequence of whole entries of kinds 1..15 with
    keys and values of 1..255 bytes (None: it is)."""
    pos, entry = 0, 0
    while pos < len(block):
        for part in ("key", "value"):
            if pos + _ENTRY_HEAD.size > len(block):
                return f"entry {entry}'s {part} kind and length run past the block"
            kind, length = _ENTRY_HEAD.unpack_from(block, pos)
            if kind not in HEADER_KINDS:
                return f"entry {entry}'s {part} kind is {kind} (1 to 15)"
            if not 1 <= length <= 255:
                return f"entry {entry}'s {part} is {length} bytes long (1 to 255)"
            pos += _ENTRY_HEAD.size + length
            if pos > len(block):
                return f"entry {entry}'s {part} runs past the block"
        entry += 1
    return None


def _poll(body: dict[str, Any], checked: list[str], found: list[Violation]) -> None:
    checked += ["IGG-CLI-10", "IGG-CLI-11"]
    strategy = body.get("strategy") or {}
    kind, value = strategy.get("kind"), strategy.get("value")
    if kind not in STRATEGY_KINDS:
        why = f"polling strategy kind {kind} (1 offset to 5 next)"
        found.append(Violation("IGG-CLI-10", why, ("strategy.kind",)))
    elif kind in VALUELESS_STRATEGIES and value:
        why = f"polling strategy {kind} (first, last or next) carries the value {value}, not 0"
        found.append(Violation("IGG-CLI-11", why, ("strategy.value",)))
    if body.get("count") == 0:
        found.append(Violation("IGG-CLI-11", "POLL_MESSAGES asks for 0 messages", ("count",)))


def partition_named(name: str, body: Mapping[str, Any], classic: bool) -> int | None:
    if name == "send_messages":
        partitioning = body.get("partitioning") or {}
        return int(partitioning["value"]) if partitioning.get("kind") == 2 else None
    if "partition_id" not in body:
        return None
    if classic:
        return int(body["partition_id"]) if body.get("partition_flag") == 1 else None
    consumer = body.get("consumer") or {}
    return int(body["partition_id"]) if consumer.get("kind") == 1 else None


def identity(name: str, body: dict[str, Any] | None, data: bytes) -> str:
    """The request's content, without what the client's clock puts in it (a message's
    origin timestamp): the same identity is the same request sent again."""
    digest = hashlib.sha1(usedforsecurity=False)
    if name == "send_messages" and body is not None:
        head = {k: v for k, v in body.items() if k != "messages"}
        digest.update(repr(sorted(head.items())).encode())
        for m in body.get("messages") or []:
            digest.update(repr((m.get("id"), m.get("payload"), m.get("headers"))).encode())
        count = len(body.get("messages") or [])
        return f"{count} message{'s' if count != 1 else ''} #{digest.hexdigest()[:8]}"
    digest.update(data)
    return f"#{digest.hexdigest()[:8]}"
