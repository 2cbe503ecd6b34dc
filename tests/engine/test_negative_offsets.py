"""A commit below offset 0: refused unless the policy stores it (Kafka's)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from conformance.engine import DEFAULT_GROUP_POLICY, Engine, EngineError

STORES = dataclasses.replace(DEFAULT_GROUP_POLICY, negative_offsets=True)


def test_a_negative_offset_is_refused_by_default() -> None:
    with Engine() as e:
        e.create_topic("t", 1)
        with pytest.raises(EngineError) as info:
            e.commit("g", "t", 0, -5)
        assert info.value.code == "OFFSET_OUT_OF_RANGE"
        assert e.committed("g", "t", 0) is None


def test_a_policy_that_stores_it_keeps_it_across_a_restart(tmp_path: Path) -> None:
    with Engine(str(tmp_path)) as e:
        e.create_topic("t", 1)
        e.commit("g", "t", 0, -5, policy=STORES)
        assert e.committed("g", "t", 0) == -5
    with Engine(str(tmp_path)) as e:
        assert e.committed("g", "t", 0) == -5


def test_the_partition_must_still_exist() -> None:
    with Engine() as e:
        e.create_topic("t", 1)
        with pytest.raises(EngineError) as info:
            e.commit("g", "t", 3, -5, policy=STORES)
        assert info.value.code == "UNKNOWN_PARTITION"
