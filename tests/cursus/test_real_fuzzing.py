"""Cursus revision real for the fuzzer: its scapy layers (real_layers.py) against the codec, its
mutators, a clean campaign against a live real broker, and a fault quirk found."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings

from conformance import fuzz
from conformance.fuzz.target import External
from conformance.protocols.cursus import real_codec, real_fuzzing, real_layers, real_strategies
from conformance.protocols.cursus.messages import Batch
from conformance.protocols.cursus.real_messages import REAL_HEADER, REAL_MESSAGE
from tests.support import broker, fuzz_runs


def _names(fields: list[object]) -> list[str]:
    return [f.name.removesuffix("_") for f in fields]  # type: ignore[attr-defined]


def test_the_layers_have_the_real_layouts_fields_in_order() -> None:
    header = [n for n in _names(real_layers.RealBatchHeader.fields_desc) if not n.endswith("_len")]
    want = [n for n, _ in REAL_HEADER if n != "message_count"] + ["messages_count", "messages"]
    assert [n for n in header if n != "messages_count"] == [
        w for w in want if w != "messages_count"
    ]
    message = [n for n in _names(real_layers.RealMessage.fields_desc) if not n.endswith("_len")]
    assert message == [n for n, _ in REAL_MESSAGE]


@settings(max_examples=100, deadline=None)
@given(real_strategies.batches())
def test_a_layer_builds_the_codecs_bytes(b: Batch) -> None:
    assert bytes(real_layers.batch_layer(b)) == real_codec.encode_batch(b)


def test_a_length_set_on_the_layer_goes_to_the_wire_as_it_is() -> None:
    layer = real_layers.batch_layer(Batch("t", "0", "1", messages=()))
    layer.acks_len = 9
    payload = bytes(layer)
    assert payload[2 + 2 + 1 + 4] == 9
    assert isinstance(real_codec.classify(payload), real_codec.RealRefusal)


@pytest.mark.parametrize("name", sorted(real_fuzzing.STRUCTURE_MUTATORS))
def test_each_mutator_is_deterministic_and_stays_in_the_real_layouts(name: str) -> None:
    pool = real_fuzzing.RealFuzzing().pool(3)
    mutate = real_fuzzing.STRUCTURE_MUTATORS[name]
    first = [mutate(random.Random(i), pool) for i in range(60)]
    assert first == [mutate(random.Random(i), pool) for i in range(60)]
    batches = [p for p in first if p[:2] == b"\xba\x7c"]
    assert name == "text-token" or batches


def test_the_pool_holds_batches_commands_and_a_stream() -> None:
    pool = real_fuzzing.RealFuzzing().pool(0)
    kinds = {type(real_codec.classify(p)).__name__ for p in pool.payloads}
    assert kinds >= {"Batch", "RealCommand"}
    assert not real_fuzzing.RealFuzzing().owes_reply(pool.payloads[-1])  # the STREAM


@pytest.fixture(scope="module")
def real() -> Iterator[broker.Broker]:
    with broker.running("--revision", "real") as b:
        yield b


def test_a_short_campaign_finds_nothing(real: broker.Broker) -> None:
    proto = fuzz.protocol("cursus", {}, "real")
    fuzz_runs.finds_nothing(proto, External(real.host, real.port), 600)


def test_a_fault_quirk_is_found_in_revision_real(tmp_path: Path) -> None:
    path, repro, _ = fuzz_runs.quirk_found(
        tmp_path, "cursus", "hang-on-empty-frame", "HANG:", 400, "--revision", "real"
    )
    assert repro["revision"] == "real"
    assert repro["size"]["writes"] == 1
    fuzz_runs.replays(tmp_path, path, "cursus")
