"""The suite's Metadata wait (conformance/suite/kafka/metadata_steps.py): asked again until a
change shows, bounded, and saying how long it waited; a topic whose creation is under way
(UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE) is not settled."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest

from conformance.evidence import Evidence, decoded
from conformance.suite.kafka import metadata_steps
from conformance.suite.kafka.metadata_steps import Topics, metadata_until, settled


def _answers(seq: list[list[dict[str, Any]]]) -> Any:
    """A stand-in for :func:`metadata_steps.metadata` giving ``seq``'s answers in turn (the
    last one again once they run out)."""
    calls: list[int] = []

    def fake(ctx: Any, k: Any, topics: Any, **kw: Any) -> Topics:
        answer = seq[min(len(calls), len(seq) - 1)]
        calls.append(1)
        node = decoded({"topics": answer}, Evidence())
        found = Topics((str(t["name"]), t) for t in node["topics"])
        found.array = node["topics"]
        return found

    fake.calls = calls  # type: ignore[attr-defined]
    return fake


def _topic(error: int, partitions: int = 1, partition_error: int = 0) -> dict[str, Any]:
    return {
        "name": "t",
        "error_code": error,
        "partitions": [
            {"partition_index": p, "error_code": partition_error} for p in range(partitions)
        ],
    }


CTX = SimpleNamespace(timeout=0.3)


def test_asked_again_until_the_topic_is_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _answers([[_topic(3, 0)], [], [_topic(0)]])
    monkeypatch.setattr(metadata_steps, "metadata", fake)
    found = metadata_until(CTX, None, ["t"], lambda f: settled(f.get("t")))  # type: ignore[arg-type]
    assert found["t"]["error_code"] == 0
    assert found.tries == 3 and "after 3 answers" in found.waited_for()


def test_the_wait_is_bounded_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metadata_steps, "metadata", _answers([[_topic(3, 0)]]))
    monkeypatch.setattr(metadata_steps, "METADATA_WAIT_S", 0.3)
    start = time.monotonic()
    found = metadata_until(CTX, None, ["t"], lambda f: settled(f.get("t")))  # type: ignore[arg-type]
    took = time.monotonic() - start
    assert 0.25 <= took < 1.5
    assert found["t"]["error_code"] == 3 and found.tries > 1
    assert found.waited_for().startswith(f" (after {found.tries} answers over ")


def test_one_answer_that_settles_is_not_asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _answers([[_topic(17, 0)]])  # INVALID_TOPIC_EXCEPTION will stay
    monkeypatch.setattr(metadata_steps, "metadata", fake)
    found = metadata_until(CTX, None, ["t"], lambda f: settled(f.get("t")))  # type: ignore[arg-type]
    assert len(fake.calls) == 1 and found.waited_for() == ""


@pytest.mark.parametrize(
    ("topic", "done"),
    [
        (None, False),
        (_topic(3, 0), False),
        (_topic(5, 0), False),
        (_topic(0, 2, partition_error=5), False),
        (_topic(0, 2), True),
        (_topic(17, 0), True),
    ],
)
def test_what_counts_as_settled(topic: dict[str, Any] | None, done: bool) -> None:
    node = None if topic is None else decoded(topic, Evidence())
    assert settled(node) is done
