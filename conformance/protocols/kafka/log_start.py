"""Each partition's log start offset, as DeleteRecords moves it (Kafka's low watermark).

The engine keeps every record it was given; a Kafka front-end that serves DeleteRecords
keeps, beside it, the first offset still readable per partition: ListOffsets earliest
answers it, Fetch reports it as ``log_start_offset`` and refuses to read below it
(OFFSET_OUT_OF_RANGE), as Apache Kafka's ``UnifiedLog.checkLogStartOffset`` does.  It
lives in the engine's metadata store (key ``kafka.log-start/<topic>/<partition>``), so
it survives a restart with ``--data-dir``; a copy is kept in memory per engine so the
Fetch path does not scan the store.

A topic deleted and made again starts from 0: :func:`forget_topic` removes a topic's
offsets (called where Kafka deletes a topic), and an offset past the partition's high
watermark, which only a log made again can show, is read as 0.

Rules: no I/O of its own; the engine journals what :func:`advance` writes.
"""

from __future__ import annotations

import weakref

from conformance.engine import Engine

PREFIX = "kafka.log-start/"

_CACHE: weakref.WeakKeyDictionary[Engine, dict[tuple[str, int], int]] = weakref.WeakKeyDictionary()


def _key(topic: str, partition: int) -> str:
    return f"{PREFIX}{topic}/{partition}"


def _offsets(engine: Engine) -> dict[tuple[str, int], int]:
    known = _CACHE.get(engine)
    if known is None:
        known = {}
        for key, raw in engine.meta(PREFIX).items():
            topic, _, partition = key[len(PREFIX) :].rpartition("/")
            try:
                known[(topic, int(partition))] = int(raw)
            except ValueError:
                continue  # not ours: a key another version wrote differently
        _CACHE[engine] = known
    return known


def log_start_offset(engine: Engine, topic: str, partition: int) -> int:
    """The partition's first readable offset (0 until DeleteRecords moves it).  The
    partition is not checked: ask only of one that exists."""
    start = _offsets(engine).get((topic, partition), 0)
    if start and start > engine.high_watermark(topic, partition):
        return 0  # the topic was made again since
    return start


def advance(engine: Engine, topic: str, partition: int, offset: int) -> int:
    """Move the log start offset to ``offset`` if that is past it; the new log start
    offset.  The caller checks ``offset`` against the high watermark."""
    start = log_start_offset(engine, topic, partition)
    if offset > start:
        engine.put_meta(_key(topic, partition), str(offset).encode())
        _offsets(engine)[(topic, partition)] = offset
        start = offset
    return start


def forget_topic(engine: Engine, topic: str) -> None:
    """Drop the log start offsets of ``topic`` (deleted: a new one starts from 0)."""
    for key in engine.meta(f"{PREFIX}{topic}/"):
        engine.put_meta(key, None)
    known = _offsets(engine)
    for gone in [k for k in known if k[0] == topic]:
        del known[gone]
