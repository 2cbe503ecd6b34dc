"""Property: any sequence of appends (idempotent ones under STRICT or DEDUPE_ONLY, with or
without a sequence gap), re-sends and commits, with reopens in between, leaves the engine
equal to a plain in-memory model of what was acknowledged."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field

from hypothesis import given
from hypothesis import strategies as st

from conformance.engine import DEDUPE_ONLY, STRICT, Engine, EngineError, NewRecord, ProducerBatch

TOPICS = {"a": 2, "b": 1}


@dataclass
class Model:
    logs: dict[tuple[str, int], list[tuple[bytes, bytes]]] = field(
        default_factory=lambda: {(t, p): [] for t, n in TOPICS.items() for p in range(n)}
    )
    commits: dict[tuple[str, str, int], int] = field(default_factory=dict)
    next_seq: dict[tuple[str, int], int] = field(default_factory=dict)
    last_batch: dict[tuple[str, int], tuple[int, int, int]] = field(default_factory=dict)


Where = tuple[str, int]
Payloads = list[tuple[bytes, bytes]]


@dataclass(frozen=True)
class Produce:
    where: Where
    values: Payloads
    idempotent: bool
    gap: int  # how far seq_start skips past the next sequence
    dedupe_only: bool  # the policy: DEDUPE_ONLY, else STRICT


@dataclass(frozen=True)
class Resend:
    where: Where


@dataclass(frozen=True)
class CommitStep:
    group: str
    where: Where
    offset: int


@dataclass(frozen=True)
class Reopen:
    pass


Step = Produce | Resend | CommitStep | Reopen

wheres = st.sampled_from([(t, p) for t, n in TOPICS.items() for p in range(n)])
payloads = st.lists(
    st.tuples(st.binary(max_size=8), st.binary(max_size=24)), min_size=1, max_size=4
)
steps = st.lists(
    st.one_of(
        st.builds(
            Produce, wheres, payloads, st.booleans(), st.sampled_from([0, 0, 3]), st.booleans()
        ),
        st.builds(Resend, wheres),
        st.builds(CommitStep, st.sampled_from(["g1", "g2"]), wheres, st.integers(-2, 12)),
        st.just(Reopen()),
    ),
    max_size=30,
)


def check(engine: Engine, model: Model) -> None:
    for (topic, partition), stored in model.logs.items():
        got = engine.read(topic, partition, 0, 1000)
        assert [(r.key, r.value) for r in got] == stored
        assert [r.offset for r in got] == list(range(len(stored)))
        assert engine.high_watermark(topic, partition) == len(stored)
        for group in ("g1", "g2"):
            expected = model.commits.get((group, topic, partition))
            assert engine.committed(group, topic, partition) == expected


@given(steps)
def test_reopened_engine_equals_the_model(plan: list[Step]) -> None:
    model = Model()
    with tempfile.TemporaryDirectory() as data_dir:
        engine = Engine(data_dir)
        try:
            for name, count in TOPICS.items():
                engine.create_topic(name, count)
            for step in plan:
                engine = apply(engine, model, data_dir, step)
            engine.close()
            engine = Engine(data_dir)
            check(engine, model)
        finally:
            engine.close()


def apply(engine: Engine, model: Model, data_dir: str, step: Step) -> Engine:
    if isinstance(step, Reopen):
        engine.close()
        engine = Engine(data_dir)
        check(engine, model)
        return engine
    topic, partition = step.where
    log = model.logs[step.where]
    if isinstance(step, CommitStep):
        try:
            engine.commit(step.group, topic, partition, step.offset)
        except EngineError as exc:  # any offset >= 0 may be committed, even past the end
            assert exc.code == "OFFSET_OUT_OF_RANGE" and step.offset < 0
        else:
            assert step.offset >= 0
            model.commits[(step.group, topic, partition)] = step.offset
    elif isinstance(step, Resend):
        if step.where in model.last_batch:
            start, end, base = model.last_batch[step.where]
            records = [NewRecord(k, v) for k, v in log[base : base + end - start + 1]]
            batch = ProducerBatch("p", 1, start, end)
            result = engine.append(topic, partition, records, batch, policy=STRICT)
            assert (result.duplicate, result.base_offset) == (True, base)
    else:
        records = [NewRecord(k, v) for k, v in step.values]
        producer = None
        policy = DEDUPE_ONLY if step.dedupe_only else STRICT
        if step.idempotent:
            start = model.next_seq.get(step.where, 0) + step.gap
            producer = ProducerBatch("p", 1, start, start + len(records) - 1)
        # STRICT refuses a gap once the producer has a sequence; DEDUPE_ONLY stores it
        refused = bool(producer and policy is STRICT and step.gap and step.where in model.next_seq)
        try:
            result = engine.append(topic, partition, records, producer, policy=policy)
        except EngineError as exc:
            assert (exc.code, refused) == ("OUT_OF_ORDER_SEQUENCE", True), exc
            return engine
        assert not refused
        assert (result.base_offset, result.duplicate) == (len(log), False)
        if producer is not None:
            model.next_seq[step.where] = producer.seq_end + 1
            model.last_batch[step.where] = (producer.seq_start, producer.seq_end, len(log))
        log.extend(step.values)
    return engine
