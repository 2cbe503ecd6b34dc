"""Spec quirks of incremental fetch sessions, KIP-227 (see :mod:`.quirks` for what a quirk
may do).  Each rewrites a Fetch (v7+) before it is served or its answer after; one of them
(``incremental-fetch-answers-unchanged``) remembers the partitions each new session was
answered with, at most :data:`REMEMBERED` sessions, so that it can put back what an
incremental answer rightly left out.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from conformance.plugin import QuirkSpec

if TYPE_CHECKING:
    from conformance.protocols.kafka.codec import Request

FETCH = 1
FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR = 70, 71, 106
REMEMBERED = 1000


def _spec(name: str, breaks: tuple[str, ...], text: str) -> QuirkSpec:
    return QuirkSpec(name, "spec", "fetch-sessions", breaks, text)


QUIRKS: dict[str, QuirkSpec] = {
    q.name: q
    for q in (
        _spec(
            "fetch-final-epoch-opens-session",
            ("KAF-FSESS-1",),
            "serves a Fetch with session id 0 and epoch -1 as if its epoch were 0: it opens a "
            "session and answers its id",
        ),
        _spec(
            "incremental-fetch-answers-unchanged",
            ("KAF-FSESS-4",),
            "answers every partition a session was created with in each incremental fetch, "
            "changed or not (records empty), as a broker that ignores what it cached would",
        ),
        _spec(
            "incremental-fetch-drops-new-records",
            ("KAF-FSESS-5", "KAF-FSESS-6"),
            "answers an incremental fetch with every partition's records left out",
        ),
        _spec(
            "fetch-session-unknown-id-as-bad-epoch",
            ("KAF-FSESS-8", "KAF-FSESS-11", "KAF-FSESS-12"),
            "answers an unknown fetch session id INVALID_FETCH_SESSION_EPOCH (71) instead of "
            "FETCH_SESSION_ID_NOT_FOUND (70)",
        ),
        _spec(
            "fetch-session-topic-id-switch-as-bad-epoch",
            ("KAF-FSESS-10",),
            "answers a session continued across Fetch v13 (names to topic ids, or back) "
            "INVALID_FETCH_SESSION_EPOCH (71) instead of FETCH_SESSION_TOPIC_ID_ERROR (106)",
        ),
        _spec(
            "fetch-final-epoch-keeps-session",
            ("KAF-FSESS-11",),
            "serves a full fetch at epoch -1 naming a session as if it named none: the session "
            "is not closed",
        ),
    )
}

_created: OrderedDict[int, list[tuple[dict[str, Any], dict[str, Any]]]] = OrderedDict()
"""incremental-fetch-answers-unchanged: each new session's answered partitions (its topic
fields, the partition without records), by session id."""


def _session(request: Request) -> tuple[int, int] | None:
    """A Fetch v7+'s session id and epoch (None: another request)."""
    if request.api_key != FETCH or request.api_version < 7:
        return None
    body = request.body
    return int(body.get("session_id", 0)), int(body.get("session_epoch", -1))


def before(quirks: tuple[str, ...], request: Request) -> Request | dict[str, Any]:
    """The request as these quirks make the broker see it, or the response instead."""
    session = _session(request)
    if session is None:
        return request
    sid, epoch = session
    if epoch == -1 and sid == 0 and "fetch-final-epoch-opens-session" in quirks:
        return dataclasses.replace(request, body={**request.body, "session_epoch": 0})
    if epoch == -1 and sid != 0 and "fetch-final-epoch-keeps-session" in quirks:
        return dataclasses.replace(request, body={**request.body, "session_id": 0})
    if epoch not in (0, -1) and "incremental-fetch-answers-unchanged" in quirks:
        _forget(request, sid)
    return request


def after(quirks: tuple[str, ...], request: Request, response: dict[str, Any]) -> dict[str, Any]:
    """The response as these quirks change it."""
    session = _session(request)
    if session is None:
        return response
    sid, epoch = session
    error = response.get("error_code", 0)
    if error == FETCH_SESSION_ID_NOT_FOUND and "fetch-session-unknown-id-as-bad-epoch" in quirks:
        response["error_code"] = INVALID_FETCH_SESSION_EPOCH
    if (
        error == FETCH_SESSION_TOPIC_ID_ERROR
        and "fetch-session-topic-id-switch-as-bad-epoch" in quirks
    ):
        response["error_code"] = INVALID_FETCH_SESSION_EPOCH
    incremental = epoch not in (0, -1) and error == 0
    if incremental and "incremental-fetch-drops-new-records" in quirks:
        for t in response.get("responses", []):
            for p in t.get("partitions", []):
                p["records"] = b""
    if "incremental-fetch-answers-unchanged" in quirks:
        if epoch == 0 and response.get("session_id", 0) > 0:
            _remember(request.api_version, response)
        elif incremental and sid in _created:
            _answer_unchanged(request.api_version, response, _created[sid])
    return response


def _topic_of(version: int, topic: dict[str, Any]) -> Any:
    return topic.get("topic_id") if version >= 13 else topic.get("topic")


def _remember(version: int, response: dict[str, Any]) -> None:
    parts = [
        ({k: v for k, v in t.items() if k != "partitions"}, {**p, "records": b""})
        for t in response.get("responses", [])
        for p in t.get("partitions", [])
    ]
    _created[int(response["session_id"])] = parts
    while len(_created) > REMEMBERED:
        _created.popitem(last=False)


def _forget(request: Request, sid: int) -> None:
    """Partitions an incremental fetch forgets are no longer answered unchanged."""
    if sid not in _created:
        return
    version = request.api_version
    gone = {
        (_topic_of(version, t), int(i))
        for t in request.body.get("forgotten_topics_data") or []
        for i in t.get("partitions") or []
    }
    _created[sid] = [
        (t, p)
        for t, p in _created[sid]
        if (_topic_of(version, t), p["partition_index"]) not in gone
    ]


def _answer_unchanged(
    version: int, response: dict[str, Any], known: list[tuple[dict[str, Any], dict[str, Any]]]
) -> None:
    topics = response.setdefault("responses", [])
    there = {
        (_topic_of(version, t), p.get("partition_index"))
        for t in topics
        for p in t.get("partitions", [])
    }
    for topic, part in known:
        if (_topic_of(version, topic), part["partition_index"]) not in there:
            topics.append({**topic, "partitions": [dict(part)]})
