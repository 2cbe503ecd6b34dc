"""The Cursus broker refuses only what SPEC.md refuses (refusals.py), and nothing else.

* the table: every row rests on a requirement of revision ``doc``; a convention (MAY) it
  rests on says in its own text what it refuses;
* complete, read from the source: every code literal the codec and handler refuse with,
  every code of a framing error, every engine error code is a row or an internal code;
* complete, seen from outside: a few thousand fuzz-like requests through the front-end
  (in process: CursusFrontend over an Engine, no sockets) get no refusal that is not a row:
  its code, the way it is sent, and a description holding the row's ``says`` (so a new
  kind of refusal that reuses a code is caught too);
* every row's trigger gets exactly its code, sent its way, described its way, from a fresh
  front-end;
* requests the document allows, with every number drawn over the whole int64 range, are
  served, or refused only where a row says so (a partition or generation that does not
  exist, an offset below 0, a partition count outside 1..10000, a topic that exists);
  an idempotent batch with a gap, a lower epoch, any acks, offsets past the end are served.
"""

from __future__ import annotations

import ast
import random
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance import spec
from conformance.engine import Engine, errors
from conformance.errors import ProtocolError
from conformance.protocols.cursus import codec, handler, refusals
from conformance.protocols.cursus import strategies as cs
from conformance.protocols.cursus.codec import CursusError
from conformance.protocols.cursus.handler import ENGINE_CODES, CursusConfig, CursusFrontend
from conformance.protocols.cursus.messages import (
    GEN_MISMATCH,
    Batch,
    BatchAck,
    Command,
    ErrorReply,
    Message,
    OkReply,
    Reply,
    SpecialReply,
)
from conformance.protocols.cursus.refusals import (
    INTERNAL,
    REFUSALS,
    Refusal,
    SentAs,
    Trigger,
    Wire,
    rows_for,
)
from conformance.server import Outcome

REQS = spec.requirements("cursus")
Refused = tuple[str, SentAs, str]
"""(code, how it was sent, description) of a refusal the broker sent."""
SETUP = (
    Command("CREATE", ("t", 3)),
    Command("CREATE", ("u", 1)),
    Command("JOIN_GROUP", ("t", "g", "a")),  # member a-1 at generation 1
)

# ------------------------------------------------------------------ plumbing


def front(compression: str = "none", frame_limit: int = codec.FRAME_LIMIT) -> CursusFrontend:
    return CursusFrontend(Engine(), CursusConfig(compression=compression, frame_limit=frame_limit))


def payload(trigger: Trigger) -> bytes:
    if isinstance(trigger, bytes):
        return trigger
    assert not isinstance(trigger, Wire)
    return codec.encode_request(trigger)


def handle(f: CursusFrontend, trigger: Trigger) -> Outcome:
    if not isinstance(trigger, Wire):
        return f.new_session("test").handle(payload(trigger))
    try:
        frames = f.new_deframer().feed(trigger.data)
    except ProtocolError as exc:
        return f.framing_error(exc)
    assert len(frames) == 1, frames
    return f.new_session("test").handle(frames[0])


def replies(outcome: Outcome) -> list[Reply]:
    d = codec.new_deframer()
    return [codec.decode_reply(p) for raw in outcome.replies for p in d.feed(raw)]


def refusal_of(reply: Reply, closed: bool = False) -> Refused | None:
    """(code, how it was sent, description) when ``reply`` refuses, None when it does not."""
    if isinstance(reply, ErrorReply):
        return reply.code, "close" if closed else "error", reply.text
    if isinstance(reply, BatchAck) and reply.status == "ERROR":
        return reply.error.split(" ", 1)[0], "ack", reply.error
    if isinstance(reply, SpecialReply) and reply.kind == GEN_MISMATCH:
        return GEN_MISMATCH, "special", reply.text
    return None


def assert_a_row_names(got: Refused, sent: object) -> None:
    assert rows_for(*got), (
        f"{sent!r} got {got[0]} ({got[1]}) described {got[2]!r}: no row of refusals.py "
        f"has that code, sent so, saying so"
    )


def request(f: CursusFrontend, trigger: Trigger) -> Reply:
    (reply,) = replies(handle(f, trigger))
    return reply


def ready(r: Refusal | None = None, setup: tuple[Command, ...] = SETUP) -> CursusFrontend:
    f = front(r.compression, r.frame_limit) if r else front()
    for step in r.setup if r else setup:
        got = request(f, step)
        assert refusal_of(got) is None, f"setup {step} refused: {got}"
    return f


# ------------------------------------------------------------------- the table


def test_every_row_rests_on_a_requirement_of_the_doc_revision() -> None:
    for r in REFUSALS:
        assert r.says.strip() and r.when.strip(), r
        req = REQS.get(r.rests_on)
        assert req is not None, f"{r.code} ({r.when}) rests on unknown {r.rests_on}"
        assert "doc" in req.revisions, f"{r.rests_on} is not a requirement of revision doc"
        if req.level == "MAY":  # a convention: it must say itself what it refuses
            assert req.area == "conventions", r.rests_on
            assert "refused" in req.text, f"{r.rests_on} does not say that it refuses {r.when}"


def test_rows_name_their_engine_code_the_way_the_handler_maps_it() -> None:
    for r in REFUSALS:
        if r.engine is not None:
            assert r.engine in engine_codes(), r
            assert ENGINE_CODES.get(r.engine, r.engine) == r.code, r
    assert not {r.code for r in REFUSALS} & set(INTERNAL), "a code is both sent and internal"
    assert set(ENGINE_CODES.values()) <= refusals.codes()


def engine_codes() -> set[str]:
    return {v for k, v in vars(errors).items() if k.isupper() and isinstance(v, str)}


def literal_codes(source: Path, callees: set[str]) -> set[str]:
    """First arguments of calls to ``callees`` that are string literals."""
    found = set()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and node.args:
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            first = node.args[0]
            if name in callees and isinstance(first, ast.Constant):
                found.add(first.value)
    return found


def test_every_code_in_the_source_is_in_the_table() -> None:
    callees = {"CursusError", "error_reply", "_error_ack"}
    found = literal_codes(Path(codec.__file__), callees)
    found |= literal_codes(Path(handler.__file__), callees)
    assert {"MALFORMED_BATCH", "BAD_PARTITION", "UNKNOWN_MEMBER", "BAD_ACK"} <= found  # sanity
    framing = next(
        n
        for n in ast.walk(ast.parse(Path(handler.__file__).read_text(encoding="utf-8")))
        if isinstance(n, ast.FunctionDef) and n.name == "framing_error"
    )
    found |= {
        n.value
        for n in ast.walk(framing)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.isupper()
    }
    assert {"FRAME_TOO_LARGE", "BAD_FRAME"} <= found
    assert found - refusals.codes() == set()
    behind = {r.engine for r in REFUSALS}
    assert engine_codes() - behind - set(INTERNAL) == set(), "an engine code is not listed"


# --------------------------------------------------------- one row, one trigger


@pytest.mark.parametrize("r", REFUSALS, ids=lambda r: f"{r.code}-{r.rests_on}")
def test_the_trigger_of_each_row_gets_exactly_its_code(r: Refusal) -> None:
    outcome = handle(ready(r), r.trigger)
    (reply,) = replies(outcome)
    got = refusal_of(reply, outcome.close)
    assert got is not None and got[:2] == (r.code, r.sent_as), reply
    assert r in rows_for(*got), f"{r.when}: {got[2]!r} does not say {r.says!r}"
    assert outcome.close == (r.sent_as == "close")  # CUR-ERR-4: other errors keep it open


# ----------------------------------------------------- fuzz-like: nothing else


@st.composite
def aimed_commands(draw: st.DrawFn) -> bytes:
    """A drawn command with some arguments pointed at the setup's topic, group and member."""
    cmd = draw(cs.commands())
    known: dict[str, list[str | int]] = {
        "topic": ["t", "u"],
        "group": ["g"],
        "consumerId": ["a"],
        "memberId": ["a-1"],
        "partition": [0, 2, 3],
        "generation": [0, 1, 2],
        "offset": [0, 5],
    }
    args = [
        draw(st.sampled_from([*known[a.name], v])) if a.name in known else v
        for a, v in zip(cmd.spec.args, cmd.args, strict=True)
    ]
    return codec.encode_command(Command(cmd.name, tuple(args)))


@st.composite
def aimed_batches(draw: st.DrawFn) -> bytes:
    batch = draw(cs.batches(max_messages=2))
    topic, partition = draw(st.sampled_from(["t", "u"])), draw(st.sampled_from(["0", "2", "3"]))
    return codec.encode_batch(replace(batch, topic=topic, partition=partition))


VALID = st.one_of(
    aimed_commands(),
    aimed_batches(),
    cs.batches(max_messages=2).map(codec.encode_batch),
    cs.batches(max_messages=2).map(lambda b: codec.encode_request(b, compression="gzip")),
)
FUZZ = st.one_of(
    VALID,
    cs.mutated(VALID),
    cs.invalid_commands().map(lambda c: c[0]),
    cs.invalid_batches().map(lambda c: c[0]),
    st.binary(max_size=64),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["none", "gzip"]), st.lists(FUZZ, min_size=1, max_size=8))
def test_every_code_the_broker_sends_is_in_the_table(compression: str, sent: list[bytes]) -> None:
    f = ready()
    f.config.compression = compression
    for p in sent:
        for reply in replies(f.new_session("fuzz").handle(p)):
            got = refusal_of(reply)
            if got is not None:
                assert_a_row_names(got, p[:60])


def test_byte_mutations_get_only_codes_of_the_table() -> None:
    """A seeded run of 2000 requests: valid ones with bytes set, cut or inserted."""
    rng = random.Random(7)
    bases = [codec.encode_request(r) for r in [*SETUP, *(refusal_triggers())]]
    bases += [codec.encode_batch(Batch("t", "1", "1", True, 0, 1, two())), b"CONSUME t 0 0"]
    seen = set()
    f = ready()
    for _ in range(2000):
        data = bytearray(rng.choice(bases))
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(data) + 1)
            if rng.random() < 0.5 and i < len(data):
                data[i] = rng.randrange(256)
            else:
                data[i:i] = bytes([rng.randrange(256)])
        for reply in replies(f.new_session("fuzz").handle(bytes(data))):
            got = refusal_of(reply)
            if got is not None:
                assert_a_row_names(got, bytes(data)[:60])
                seen.add(got[0])
    assert len(seen) >= 6, f"the mutations reached only {seen}: the run proves little"


def refusal_triggers() -> list[Command | Batch]:
    return [r.trigger for r in REFUSALS if isinstance(r.trigger, Command | Batch)]


def two(producer: str = "p", epoch: int = 1, seq: int = 0) -> tuple[Message, ...]:
    return tuple(
        Message(seq_num=seq + i, producer_id=producer, epoch=epoch, payload=b"m%d" % (seq + i))
        for i in range(2)
    )


# ------------------------------------- legal requests: served, or refused by a row

SPECIAL_WORDS = ("NOT_LEADER", "REBALANCE_REQUIRED", GEN_MISMATCH)
"""A name holding one of these makes an OK reply read as a special reply ("Contains ...")."""
I64 = st.integers(-(2**63), 2**63 - 1)
PARTITIONS = 3  # of topic t in SETUP; member a-1 of group g is at generation 1


def _partition_problem(p: int) -> set[str]:
    return set() if 0 <= p < PARTITIONS else {"UNKNOWN_PARTITION"}  # below 0 too


def _offset_problem(o: int) -> set[str]:
    return {"OFFSET_OUT_OF_RANGE"} if o < 0 else set()  # past the end is served


@st.composite
def legal_requests(draw: st.DrawFn) -> tuple[Command | Batch, frozenset[str]]:
    """A request the document allows, against the setup's state, every number drawn over
    the whole int64 range; and the codes the broker may refuse it with (any of them, so
    the order of the broker's checks does not matter), empty when it must be served."""
    name = draw(cs.tokens().filter(lambda n: not any(w in n for w in SPECIAL_WORDS)))
    fresh = name if name not in ("t", "u") else "x" + name
    partition = draw(st.one_of(st.integers(0, PARTITIONS - 1), I64), label="partition")
    offset = draw(st.one_of(st.integers(0, 9), I64), label="offset")
    generation = draw(st.one_of(st.just(1), st.just(1), st.just(0), I64), label="generation")
    count = draw(st.one_of(st.integers(1, 5), st.integers(9_998, 10_002), I64), label="count")
    topic = draw(st.sampled_from([fresh, fresh, "t", "u"]), label="CREATE topic")
    offsets = draw(
        st.dictionaries(
            st.one_of(st.integers(0, PARTITIONS - 1), I64),
            st.one_of(st.integers(0, 9), I64),
            min_size=1,
            max_size=3,
        ),
        label="offsetsPayload",
    )
    zeros = "0" * draw(st.integers(0, 3))
    digits = f"-{zeros}{-partition}" if partition < 0 else f"{zeros}{partition}"
    place = _partition_problem(partition) | _offset_problem(offset)
    stale = {"GEN_MISMATCH"} if generation != 1 else set()
    created = set() if 1 <= count <= 10_000 else {"BAD_ARGUMENT"}  # CUR-CONV-11
    exists = {"TOPIC_EXISTS"} if topic in ("t", "u") else set()  # CUR-CONV-12
    each = [_partition_problem(p) | _offset_problem(o) for p, o in offsets.items()]
    choices: list[tuple[Command | Batch, set[str]]] = [
        (Command("LIST"), set()),
        (Command("CREATE", (topic, count)), exists | created),
        (Command("DELETE", ("u",)), set()),
        (Command("CONSUME", ("t", partition, offset)), place),
        (Command("STREAM", ("t", partition, offset)), place),
        (Command("SUBSCRIBE", ("t", name)), set()),
        (Command("JOIN_GROUP", ("t", name, name)), set()),
        (Command("LEAVE_GROUP", ("t", "g", "a")), set()),
        (Command("COMMIT", ("t", name, partition, offset)), place),
        # generation 0 is out of date (REBALANCE_REQUIRED, not a refusal); below 0 or
        # ahead of the group's, no group has it (CUR-ERR-6)
        (
            Command("HEARTBEAT", ("t", "g", "a", "a-1", generation)),
            stale if generation != 0 else set(),
        ),
        (Command("SYNC_GROUP", ("t", "g", "a-1", generation)), stale),
        (
            Command("BATCH_COMMIT", ("t", "g", "a-1", generation, tuple(offsets.items()))),
            stale.union(*each),
        ),
        (Command("FETCH_OFFSET", ("t", name, partition)), _partition_problem(partition)),
        (
            replace(draw(cs.batches(max_messages=3)), topic="t", partition=digits),
            _partition_problem(partition),
        ),
    ]
    req, problems = draw(st.sampled_from(choices))
    return req, frozenset(problems)


@settings(max_examples=400, deadline=None)
@given(legal_requests())
def test_a_request_the_document_allows_is_served_or_refused_by_a_row(
    case: tuple[Command | Batch, frozenset[str]],
) -> None:
    req, may = case
    outcome = handle(ready(), req)
    got = [refusal_of(reply, outcome.close) for reply in replies(outcome)]
    refused = [g for g in got if g is not None]
    for g in refused:
        assert_a_row_names(g, req)
    if not may:
        assert not refused, f"{req} was refused: {refused}"
        for reply in replies(outcome):
            assert not isinstance(reply, BatchAck) or reply.status == "OK", reply
        assert outcome.replies or (isinstance(req, Command) and req.name == "STREAM")
    else:
        assert len(refused) == 1 and refused[0][0] in may, f"{req}: {got}, expected {set(may)}"
        assert outcome.stream is None and not outcome.close


def test_a_refused_create_leaves_the_topic_as_it_is() -> None:
    """CUR-CONV-12: CREATE of an existing topic neither empties it nor resizes it."""
    f = ready()
    ack(f, Batch("t", "2", "1", messages=two()))
    for count in (1, 3, 5, 0, -1, 10_001):
        got = request(f, Command("CREATE", ("t", count)))
        assert refusal_of(got) == ("TOPIC_EXISTS", "error", "TOPIC_EXISTS topic 't' already exists")
    assert f.engine.topic("t").partitions == 3
    assert consumed(f, partition=2) == [b"m0", b"m1"]


# ----------------------------------------------------------- the acceptance


def consumed(f: CursusFrontend, topic: str = "t", partition: int = 0) -> list[bytes]:
    got = request(f, Command("CONSUME", (topic, partition, 0)))
    assert isinstance(got, Batch), got
    return [m.payload for m in got.messages]


def ack(f: CursusFrontend, batch: Batch) -> BatchAck:
    got = request(f, batch)
    assert isinstance(got, BatchAck) and got.status == "OK", got
    return got


def test_an_idempotent_batch_with_a_gap_is_stored_and_a_resend_is_not() -> None:
    f = ready()
    first = ack(f, Batch("t", "0", "1", True, 0, 1, two()))
    gap = Batch("t", "0", "1", True, 10, 11, two(seq=10))  # 2..9 never sent
    assert (ack(f, gap).last_offset, first.last_offset) == (3, 1)
    assert consumed(f) == [b"m0", b"m1", b"m10", b"m11"]
    again = ack(f, gap)
    assert (again.last_offset, again.seq_start, again.seq_end) == (3, 10, 11)
    assert ack(f, Batch("t", "0", "1", True, 0, 1, two())).last_offset == 1
    assert consumed(f) == [b"m0", b"m1", b"m10", b"m11"]  # nothing stored twice


def test_overlaps_lower_epochs_and_loose_ranges_are_stored_under_cursus() -> None:
    f = ready()
    assert ack(f, Batch("t", "0", "1", True, 0, 1, two(epoch=5))).producer_epoch == 5
    lower = ack(f, Batch("t", "0", "1", True, 2, 3, two(epoch=3, seq=2)))
    assert (lower.last_offset, lower.producer_epoch) == (3, 5)  # the epoch the broker tracks
    overlap = ack(f, Batch("t", "0", "1", True, 1, 2, two(epoch=5, seq=1)))
    loose = ack(f, Batch("t", "0", "1", True, 40, 99, two(epoch=5, seq=40)))
    assert (overlap.last_offset, loose.last_offset) == (5, 7)
    assert len(consumed(f)) == 8


def test_other_requests_the_document_allows() -> None:
    f = ready()
    ack(f, Batch("t", "02", "all", messages=two()))  # acks of any text; "02" is partition 2
    assert consumed(f, partition=2) == [b"m0", b"m1"]
    assert request(f, b"COMMIT t g 0 0099") == OkReply()  # past the end, leading zeros
    assert request(f, Command("FETCH_OFFSET", ("t", "g", 0))) == OkReply((("offset", "99"),))
    past = request(f, Command("CONSUME", ("t", 2, 50)))
    assert isinstance(past, Batch) and past.messages == ()
    for name in ("a/b", "ümlaut", "x" * 300, "tab\there"):
        assert request(f, Command("CREATE", (name, 1))) == OkReply(
            (("topic", name), ("partitions", "1"))
        )


def test_a_stream_past_the_end_pushes_from_its_offset_once_it_exists() -> None:
    f = ready()
    outcome = handle(f, Command("STREAM", ("t", 0, 3)))
    assert outcome.replies == [] and outcome.stream is not None and not outcome.close
    ack(f, Batch("t", "0", "1", messages=two()))
    assert outcome.stream.poll() == []
    ack(f, Batch("t", "0", "1", messages=two()))
    (push,) = outcome.stream.poll()
    (got,) = replies(Outcome([push]))
    assert isinstance(got, Batch) and [m.offset for m in got.messages] == [3]


def test_a_text_number_past_int64_is_still_refused() -> None:
    with pytest.raises(CursusError) as info:
        codec.parse_command(b"CONSUME t 0 " + b"9" * 5000)  # past int()'s digit limit too
    assert info.value.code == "BAD_ARGUMENT" and "int64" in str(info.value)
    assert codec.partition_number(Batch("t", "9" * 5000)) > 2**63 - 1
