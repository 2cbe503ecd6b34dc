"""The refusals of revision real (conformance/protocols/cursus/real_refusals.py): every row
rests on a requirement of revision real, every code the source writes is a row, each row's
request gets exactly that refusal, and every refusal a few thousand drawn and mutated requests
get is a row of the table."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from conformance.engine import Engine
from conformance.protocols.cursus import codec, real_codec, real_fuzzing, real_refusals
from conformance.protocols.cursus.handler import CursusConfig, CursusFrontend
from conformance.protocols.cursus.messages import Batch, ErrorReply
from conformance.protocols.cursus.real_messages import RealCommand
from conformance.protocols.cursus.real_refusals import REFUSALS, RealRefusal
from conformance.server import Outcome
from conformance.spec import requirements

SOURCES = ("real_codec.py", "real_handler.py", "real_groups.py")
MISSING = re.compile(r"missing_[a-z]+")


def _session(compression: str = "none") -> object:
    frontend = CursusFrontend(Engine(), CursusConfig(revision="real", compression=compression))
    frontend.set_address("127.0.0.1", 9000)
    return frontend.new_session("test")


def _payload(trigger: RealCommand | Batch | bytes) -> bytes:
    if isinstance(trigger, bytes):
        return trigger
    if isinstance(trigger, Batch):
        return real_codec.encode_batch(trigger)
    return real_codec.encode_command(trigger)


def _send(session: object, trigger: RealCommand | Batch | bytes) -> tuple[object, Outcome]:
    outcome: Outcome = session.handle(_payload(trigger))  # type: ignore[attr-defined]
    if not outcome.replies:
        return None, outcome
    (inner,) = codec.new_deframer().feed(outcome.replies[0])
    return real_codec.decode_reply(inner), outcome


def test_every_row_rests_on_a_requirement_of_revision_real() -> None:
    reqs = requirements("cursus")
    for r in REFUSALS:
        assert r.rests_on in reqs and "real" in reqs[r.rests_on].revisions, r


def test_every_code_the_source_writes_is_a_row() -> None:
    folder = Path(real_codec.__file__).parent
    written: set[str] = set()
    for name in SOURCES:
        text = (folder / name).read_text()
        written |= set(re.findall(r'error\(\s*"([A-Za-z_]+)"', text))
        written |= {f"missing_{k}" for k in ("topic", "group", "member", "generation")}
    assert written - real_refusals.codes() == set()


@pytest.mark.parametrize("row", REFUSALS, ids=lambda r: f"{r.code}-{r.says[:20]}")
def test_each_row_is_sent_for_its_trigger(row: RealRefusal) -> None:
    s = _session(row.compression)
    for step in row.setup:
        got, _ = _send(s, step)
        assert not isinstance(got, ErrorReply), f"setup {step.text()} failed: {got}"
    got, outcome = _send(s, row.trigger)
    assert isinstance(got, ErrorReply), got
    assert got.code == row.code and row.says in got.text, got.text
    assert outcome.close == (row.sent_as == "close")


def test_every_refusal_of_drawn_and_mutated_requests_is_a_row() -> None:
    fuzzing = real_fuzzing.RealFuzzing()
    s = _session("gzip")
    for setup in fuzzing.setup_payloads():
        _send(s, setup)
    unknown: dict[tuple[str, bool], str] = {}
    seen: set[str] = set()
    for seed in range(3):
        pool = fuzzing.pool(seed)
        payloads = list(pool.payloads)
        rng = random.Random(seed)
        for i in range(1500):
            mutate = list(fuzzing.structure_mutators.values())[i % 3]
            payloads.append(mutate(rng, pool))
        for payload in payloads:
            got, outcome = _send(s, payload)
            if not isinstance(got, ErrorReply):
                continue
            seen.add(got.code)
            sent_as = "close" if outcome.close else "error"
            if not real_refusals.rows_for(got.code, sent_as, got.text):
                unknown.setdefault((got.code, outcome.close), got.text)
    assert unknown == {}
    assert len(seen) >= 8, seen
