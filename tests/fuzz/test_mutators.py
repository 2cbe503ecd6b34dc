"""Mutators: a case is a pure function of (seed, index); each mode does what it says."""

from __future__ import annotations

import contextlib
import io
import random
import subprocess
import sys
from collections import Counter

import pytest

from conformance import fuzz
from conformance.fuzz import harness, mutators
from conformance.fuzz.case import FuzzCase
from conformance.protocols.cursus import codec
from conformance.protocols.cursus.fuzzing import CANARY_TOPIC

PROTO = fuzz.protocol("cursus")
N = 1500


@pytest.fixture(scope="module")
def cases() -> list[FuzzCase]:
    return mutators.cases(PROTO, 11, 0, N)


def test_same_seed_same_cases_even_with_global_random_disturbed(cases: list[FuzzCase]) -> None:
    random.seed(12345)  # scapy's fuzz() draws from here: the cases must not depend on it
    assert mutators.cases(PROTO, 11, 0, N) == cases
    # a range regenerated on its own equals the same slice of the whole campaign
    assert mutators.cases(PROTO, 11, 700, 760) == cases[700:760]


def test_other_seed_other_cases(cases: list[FuzzCase]) -> None:
    other = mutators.cases(PROTO, 12, 0, 200)
    assert sum(a.sent != b.sent for a, b in zip(other, cases, strict=False)) > 150


DIGEST = (
    "from conformance.fuzz import mutators;"
    "from conformance import fuzz;"
    "import hashlib;"
    "cs = mutators.cases(fuzz.protocol('cursus'), 7, 0, 300);"
    "print(hashlib.sha256(b''.join(c.sent for c in cs)).hexdigest())"
)


def test_cases_do_not_depend_on_the_process() -> None:
    # A bare interpreter has imported far less than this pytest process; Hypothesis
    # must not let that change the pool (it once did, through its "local constants").
    here: dict[str, str] = {}
    with contextlib.redirect_stdout(io.StringIO()) as out:
        exec(DIGEST, here)
    elsewhere = {
        subprocess.run(
            [sys.executable, "-c", DIGEST],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
        ).stdout.strip()
        for seed in ("1", "2")
    }
    assert elsewhere == {out.getvalue().strip()}


def test_every_mutator_is_used(cases: list[FuzzCase]) -> None:
    used = Counter(c.mutator for c in cases)
    assert set(used) == set(mutators.mutator_names(PROTO))
    assert min(used.values()) > N // 40


def test_structure_cases_are_well_framed(cases: list[FuzzCase]) -> None:
    for case in (c for c in cases if c.mode == "structure"):
        assert len(case.writes) == 1
        deframer = PROTO.new_deframer()
        assert len(deframer.feed(case.sent)) == 1, case
        assert deframer.buffered == 0


def test_structure_cases_mutate_batches_and_commands(cases: list[FuzzCase]) -> None:
    structure = [c for c in cases if c.mode == "structure" and c.mutator != "valid"]
    batches = [c for c in structure if codec.is_batch(c.sent[4:])]
    refused = 0
    for c in batches:
        try:
            codec.decode_batch(c.sent[4:])
        except codec.CursusError:
            refused += 1
    assert len(batches) > 50
    assert refused > len(batches) // 5  # many mutated batches are not valid any more


def test_length_lies_cover_the_list(cases: list[FuzzCase]) -> None:
    seen = set()
    for case in (c for c in cases if c.mutator == "length-lie"):
        prefix = int.from_bytes(case.sent[:4], "big")
        exact = len(case.sent) - 4
        lies = mutators.length_lies(PROTO.frame_limit, exact)
        assert prefix in lies
        seen.add(lies.index(prefix))
    assert seen == set(range(8))


def test_frame_breaking_shapes(cases: list[FuzzCase]) -> None:
    by = {m: [c for c in cases if c.mutator == m] for m in ("split", "drip", "burst", "abandon")}
    assert all(len(c.writes) >= 2 for c in by["split"])
    assert all(c.gap_s > 0 and len(c.writes) >= 2 for c in by["drip"])
    assert all(len(PROTO.new_deframer().feed(c.sent)) >= 2 for c in by["burst"])
    assert any(len(PROTO.new_deframer().feed(c.sent)) >= 16 for c in by["burst"])
    assert all(c.abandon for c in by["abandon"])
    for case in by["abandon"]:  # each abandoned connection carries a partial frame only
        for partial in case.abandon:
            assert PROTO.new_deframer().feed(partial) == []


def test_no_case_names_the_canary_topic(cases: list[FuzzCase]) -> None:
    name = CANARY_TOPIC.encode()
    assert not any(name in w for c in cases for w in (*c.writes, *c.abandon))


def test_yaml_round_trip_of_a_case(cases: list[FuzzCase]) -> None:
    for case in cases[:50]:
        assert FuzzCase.from_dict(case.as_dict()) == case


def test_expectation_of_shapes() -> None:
    whole = PROTO.frame(b"LIST")
    assert harness.expectation(PROTO, whole * 3) == harness.Expectation(3, False)
    assert harness.expectation(PROTO, whole + whole[:5]) == harness.Expectation(1, True)
    assert harness.expectation(PROTO, PROTO.frame(b"STREAM t 0 0") + whole).must_close
    # a malformed STREAM is not silent by design: it owes its error reply
    assert harness.expectation(PROTO, PROTO.frame(b"STREAM t x 0")) == harness.Expectation(1, False)
    over = (PROTO.frame_limit + 1).to_bytes(4, "big")
    assert harness.expectation(PROTO, over) == harness.Expectation(0, True)
