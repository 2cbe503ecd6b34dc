"""The durable journal: state survives a reopen, torn tails are cut, damage is reported."""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

import pytest

from conformance.engine import (
    DEDUPE_ONLY,
    STRICT,
    Creation,
    Engine,
    EngineError,
    GroupPolicy,
    JournalError,
    MemberIds,
    NewRecord,
    ProducerBatch,
    Reaping,
)
from conformance.engine.log import SeqRange
from conformance.engine.ops import (
    Append,
    Commit,
    CreateTopic,
    DeleteGroup,
    DeleteTopic,
    GroupState,
    Op,
    ProducerSnapshot,
    decode,
    encode,
)
from conformance.engine.records import Record
from conformance.engine.store import JOURNAL_FILE, MAGIC


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def journal(data_dir: Path) -> Path:
    return data_dir / JOURNAL_FILE


def test_every_kind_of_state_survives_a_reopen(tmp_path: Path) -> None:
    clock = FakeClock()
    with Engine(str(tmp_path), clock=clock) as e:
        e.create_topic("t", 2)
        e.create_topic("gone", 1)
        e.append("t", 0, [NewRecord(b"k\x00", b"\xff\x00v", (("h", b"\x01"),))])
        two = [NewRecord(b"", b"a"), NewRecord(b"", b"b")]
        e.append("t", 1, two, ProducerBatch("p", 2, 7, 8), policy=STRICT)
        e.commit("g", "t", 1, 2)
        a = e.join_group("g", "t", "a")
        b = e.join_group("g", "t", "b")
        e.leave_group("g", a.member_id)
        e.subscribe("h", "gone")
        before = e.read("t", 0, 0, 10) + e.read("t", 1, 0, 10)
    with Engine(str(tmp_path), clock=clock) as e:
        assert [(t.name, t.partitions) for t in e.list_topics()] == [("gone", 1), ("t", 2)]
        assert e.read("t", 0, 0, 10) + e.read("t", 1, 0, 10) == before
        assert e.committed("g", "t", 1) == 2
        assert e.group_generation("g") == 3
        assert e.members_of("g", "b") == [b.member_id]
        assert e.sync_group("g", b.member_id, 3) == {"t": [0, 1]}
        assert e.join_group("g", "t", "c").member_id == "c-3"  # the counter survived
        assert e.group_generation("h") == 0
        # producer state survived: a re-send is recognised, a gap is refused
        dup = e.append("t", 1, two, ProducerBatch("p", 2, 7, 8), policy=STRICT)
        assert (dup.duplicate, dup.base_offset, dup.last_offset) == (True, 0, 1)
        with pytest.raises(EngineError) as exc:
            e.append("t", 1, [NewRecord(b"", b"c")], ProducerBatch("p", 1, 0, 0), policy=STRICT)
        assert exc.value.code == "PRODUCER_FENCED"
        assert e.recovery is not None and e.recovery.truncated_bytes == 0


def test_sessions_restart_at_recovery(tmp_path: Path) -> None:
    clock = FakeClock()
    with Engine(str(tmp_path), clock=clock, session_timeout_s=10) as e:
        e.create_topic("t", 1)
        a = e.join_group("g", "t", "a")
    clock.now = 1000.0  # long after the session would have ended
    with Engine(str(tmp_path), clock=clock, session_timeout_s=10) as e:
        assert e.members_of("g", "a") == [a.member_id]
        clock.now += 11
        assert e.members_of("g", "a") == []
        assert e.group_generation("g") == 2
    with Engine(str(tmp_path), clock=clock) as e:  # the expiry itself was durable
        assert e.members_of("g", "a") == []
        assert e.group_generation("g") == 2


def test_writes_are_on_disk_when_the_call_returns(tmp_path: Path) -> None:
    """No close: the journal file already holds every acknowledged write (as after kill -9)."""
    e = Engine(str(tmp_path))
    e.create_topic("t", 1)
    for i in range(50):
        e.append("t", 0, [NewRecord(b"", b"%d" % i)])
    size = journal(tmp_path).stat().st_size
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / JOURNAL_FILE).write_bytes(journal(tmp_path).read_bytes())
    with Engine(str(copy)) as again:
        assert again.high_watermark("t", 0) == 50
    e.close()
    assert size > 50 * 8


@pytest.mark.parametrize("cut", [1, 5, 8, 9, 20])
def test_torn_tail_is_cut_and_everything_before_it_kept(tmp_path: Path, cut: int) -> None:
    with Engine(str(tmp_path)) as e:
        e.create_topic("t", 1)
        for i in range(10):
            e.append("t", 0, [NewRecord(b"", b"message-%d" % i)])
        good = journal(tmp_path).stat().st_size
        e.append("t", 0, [NewRecord(b"", b"the torn one, long enough to be cut anywhere")])
    with open(journal(tmp_path), "r+b") as f:
        f.truncate(good + cut)
    with Engine(str(tmp_path)) as e:
        assert [r.value for r in e.read("t", 0, 0, 100)] == [b"message-%d" % i for i in range(10)]
        assert e.recovery is not None and e.recovery.truncated_bytes == cut
        assert journal(tmp_path).stat().st_size == good
        e.append("t", 0, [NewRecord(b"", b"after")])  # appends go on after the cut
    with Engine(str(tmp_path)) as e:
        assert e.high_watermark("t", 0) == 11
        assert e.read("t", 0, 10, 1)[0].value == b"after"


def test_corrupt_record_and_everything_after_it_is_dropped(tmp_path: Path) -> None:
    with Engine(str(tmp_path)) as e:
        e.create_topic("t", 1)
        e.append("t", 0, [NewRecord(b"", b"kept")])
        mid = journal(tmp_path).stat().st_size
        e.append("t", 0, [NewRecord(b"", b"flipped")])
        e.append("t", 0, [NewRecord(b"", b"after")])
    data = bytearray(journal(tmp_path).read_bytes())
    data[mid + 12] ^= 0xFF  # a payload byte of the second append: its CRC no longer holds
    journal(tmp_path).write_bytes(bytes(data))
    with Engine(str(tmp_path)) as e:
        assert [r.value for r in e.read("t", 0, 0, 10)] == [b"kept"]


def test_zeroed_tail_is_cut(tmp_path: Path) -> None:
    with Engine(str(tmp_path)) as e:
        e.create_topic("t", 1)
    with open(journal(tmp_path), "ab") as f:
        f.write(bytes(64))
    with Engine(str(tmp_path)) as e:
        assert e.topic("t").partitions == 1
        assert e.recovery is not None and e.recovery.truncated_bytes == 64


def test_intact_but_unreadable_record_stops_the_open(tmp_path: Path) -> None:
    with Engine(str(tmp_path)) as e:
        e.create_topic("t", 1)
    payload = b"\x63junk"
    with open(journal(tmp_path), "ab") as f:
        f.write(struct.pack("<II", len(payload), zlib.crc32(payload)) + payload)
    with pytest.raises(JournalError, match="unknown operation type 99"):
        Engine(str(tmp_path))
    # a failed open leaves the directory usable once the damage is removed
    with open(journal(tmp_path), "r+b") as f:
        f.truncate(journal(tmp_path).stat().st_size - len(payload) - 8)
    with Engine(str(tmp_path)) as e:
        assert e.topic("t").partitions == 1


def test_not_a_journal_is_refused(tmp_path: Path) -> None:
    journal(tmp_path).write_bytes(b"hello, this is not a journal")
    with pytest.raises(JournalError, match="not a journal") as exc:
        Engine(str(tmp_path))
    assert isinstance(exc.value, OSError)


def test_magic_torn_at_creation_starts_afresh(tmp_path: Path) -> None:
    journal(tmp_path).write_bytes(MAGIC[:3])
    with Engine(str(tmp_path)) as e:
        e.create_topic("t", 1)
    with Engine(str(tmp_path)) as e:
        assert e.topic("t").partitions == 1


def test_one_engine_per_directory(tmp_path: Path) -> None:
    first = Engine(str(tmp_path))
    with pytest.raises(OSError, match="in use by another engine"):
        Engine(str(tmp_path))
    first.close()
    Engine(str(tmp_path)).close()


def test_data_dir_is_created(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b"
    with Engine(str(target)) as e:
        e.create_topic("t", 1)
    assert journal(target).read_bytes().startswith(MAGIC)


def test_fsync_mode_stores_the_same(tmp_path: Path) -> None:
    with Engine(str(tmp_path), fsync=True) as e:
        e.create_topic("t", 1)
        e.append("t", 0, [NewRecord(b"k", b"v")])
        e.commit("g", "t", 0, 1)
    with Engine(str(tmp_path), fsync=True) as e:
        assert e.read("t", 0, 0, 1)[0].value == b"v"
        assert e.committed("g", "t", 0) == 1


def test_deleted_topic_data_is_compacted_away(tmp_path: Path) -> None:
    with Engine(str(tmp_path)) as e:
        e.create_topic("big", 1)
        e.create_topic("t", 2)
        e.append("big", 0, [NewRecord(b"", bytes(10_000)) for _ in range(20)])
        for i in range(2500):  # more than one compaction chunk
            e.append(
                "t", 1, [NewRecord(b"", b"%d" % i)], ProducerBatch("p", 1, i, i), policy=STRICT
            )
        e.commit("g", "t", 1, 2500)
        e.commit("g", "big", 0, 3)
        a = e.join_group("g", "t", "a")
        e.delete_topic("big")
        before = e.read("t", 1, 0, 10_000)
    size_before = journal(tmp_path).stat().st_size
    with Engine(str(tmp_path)) as e:
        assert e.read("t", 1, 0, 10_000) == before
        assert e.members_of("g", "a") == [a.member_id]
        assert e.committed("g", "t", 1) == 2500
        assert e.committed("g", "big", 0) is None
        last = ProducerBatch("p", 1, 2499, 2499)
        dup = e.append("t", 1, [NewRecord(b"", b"2499")], last, policy=STRICT)
        assert (dup.duplicate, dup.base_offset) == (True, 2499)
    assert journal(tmp_path).stat().st_size < size_before - 150_000
    assert not os.path.exists(str(journal(tmp_path)) + ".compact")
    with Engine(str(tmp_path)) as e:  # the compacted journal reopens to the same state
        assert e.read("t", 1, 0, 10_000) == before
        after = ProducerBatch("p", 1, 2500, 2500)
        assert e.append("t", 1, [NewRecord(b"", b"n")], after, policy=STRICT).base_offset == 2500


def test_many_superseded_group_records_are_compacted(tmp_path: Path) -> None:
    with Engine(str(tmp_path)) as e:
        e.create_topic("t", 1)
        e.append("t", 0, [NewRecord(b"", b"x")])
        for i in range(10_050):
            e.commit("g", "t", 0, i % 2)
    size_before = journal(tmp_path).stat().st_size
    with Engine(str(tmp_path)) as e:
        assert e.committed("g", "t", 0) == 10_049 % 2
    assert journal(tmp_path).stat().st_size < size_before / 10


RECORD = Record(3, b"k", b"v\x00", (("h\udcff", b""), ("x", b"\xff")), 123, "p\u00e9", -2, 9)
OPS: list[Op] = [
    CreateTopic("t\u00fc", 10_000),
    DeleteTopic(""),
    Append("t", 4, 3, (RECORD, Record(4, b"", b"", (), 0)), ProducerBatch("p", 5, -1, 0)),
    Append("t", 0, 0, (), None),
    Commit("g", "t", ((0, 5), (9, 0))),
    GroupState("g", 7, 12, ("a", "b"), (("c-1", "c"), ("d-12", "d"))),
    GroupState("g", 2, 0, ("a",), (("7", "7"), ("8", "8")), "round_robin", ("8",)),
    DeleteGroup("g\u00fc"),
    ProducerSnapshot("t", 1, "p", 3, (SeqRange(0, 1, 5, 6, 3), SeqRange(2, 2, 9, 9, 1))),
]


@pytest.mark.parametrize("op", OPS, ids=lambda op: type(op).__name__)
def test_operations_round_trip(op: Op) -> None:
    assert decode(encode(op)) == op


@pytest.mark.parametrize("op", OPS, ids=lambda op: type(op).__name__)
def test_truncated_or_padded_operations_are_refused(op: Op) -> None:
    raw = encode(op)
    with pytest.raises(ValueError, match="early"):
        decode(raw[:-1])
    with pytest.raises(ValueError, match="left after"):
        decode(raw + b"\x00")


def test_a_producer_snapshot_of_the_older_form_still_loads() -> None:
    """Type 6 (ranges without an epoch) was written by earlier versions: its ranges were all
    appended at the snapshot's epoch."""
    raw = b"\x06" + struct.pack("<I", 1) + b"t" + struct.pack("<I", 1)
    raw += struct.pack("<I", 1) + b"p" + struct.pack("<q", 3) + struct.pack("<I", 2)
    raw += struct.pack("<qqqq", 0, 1, 5, 6) + struct.pack("<qqqq", 2, 2, 9, 9)
    assert decode(raw) == ProducerSnapshot(
        "t", 1, "p", 3, (SeqRange(0, 1, 5, 6, 3), SeqRange(2, 2, 9, 9, 3))
    )


def test_a_group_state_of_the_older_form_still_loads() -> None:
    """Type 5 (no assignor, no bound members) was written by earlier versions: its group
    uses the engine's assignor and every member has a session."""
    raw = b"\x05" + struct.pack("<I", 1) + b"g" + struct.pack("<qq", 3, 2)
    raw += struct.pack("<I", 1) + struct.pack("<I", 1) + b"t"
    raw += struct.pack("<I", 1) + struct.pack("<I", 3) + b"c-2" + struct.pack("<I", 1) + b"c"
    assert decode(raw) == GroupState("g", 3, 2, ("t",), (("c-2", "c"),), "", ())


def test_group_policies_survive_a_reopen(tmp_path: Path) -> None:
    """The group's assignor is durable; members bound to a connection are not (no
    connection outlives the process: recovery removes them, one generation up), and the
    groups they were in, created explicitly, stay."""
    given = GroupPolicy(member_ids=MemberIds.GIVEN, first_generation=2)
    bound = GroupPolicy(
        member_ids=MemberIds.GIVEN, reaping=Reaping.CONNECTION, creation=Creation.EXPLICIT
    )
    clock = FakeClock()
    with Engine(str(tmp_path), clock=clock, assignor="range") as e:
        e.create_topic("t", 4)
        e.join_group("v1", "t", "a", policy=given, assignor="round_robin")
        e.join_group("v1", "t", "b", policy=given)
        e.create_group("iggy", "t", policy=bound)
        e.join_group("iggy", "t", "7", policy=bound)
        e.create_group("gone", "t", policy=bound)
        e.commit("gone", "t", 0, 1, policy=bound)
        e.delete_group("gone")
    with Engine(str(tmp_path), clock=clock, assignor="range") as e:
        assert e.sync_group("v1", "a", 3) == {"t": [0, 2]}  # round_robin, not range
        info = e.group_info("iggy")
        assert (info.generation, info.members) == (2, ())
        assert [g.name for g in e.list_groups()] == ["iggy", "v1"]
        assert e.committed("gone", "t", 0) is None
    with Engine(str(tmp_path), clock=clock) as e:  # the removal itself was durable
        assert e.group_info("iggy").generation == 2


def _dedupe_only_history(e: Engine) -> None:
    e.create_topic("t", 1)
    e.create_topic("gone", 1)
    for batch in [
        ProducerBatch("p", 2, 0, 1),
        ProducerBatch("p", 2, 10, 10),  # a gap
        ProducerBatch("p", 1, 0, 0),  # a lower epoch: stored, remembered at epoch 1
        ProducerBatch("p", 2, 5, 9),  # a range that does not number its one record
    ]:
        count = 2 if batch.seq_end - batch.seq_start == 1 else 1
        records = [NewRecord(b"", b"%d" % i) for i in range(count)]
        e.append("t", 0, records, batch, policy=DEDUPE_ONLY)


def _dedupe_only_state(e: Engine) -> list[tuple[int, int, bool]]:
    """(base offset, epoch, duplicate) of every remembered batch sent again, then a new one."""
    out = []
    for batch in [
        ProducerBatch("p", 2, 0, 1),
        ProducerBatch("p", 2, 10, 10),
        ProducerBatch("p", 1, 0, 0),
        ProducerBatch("p", 2, 5, 9),
        ProducerBatch("p", 1, 10, 10),  # new: epoch 1 never sent 10..10
    ]:
        r = e.append("t", 0, [NewRecord(b"", b"x")], batch, policy=DEDUPE_ONLY)
        out.append((r.base_offset, r.producer_epoch, r.duplicate))
    return out


@pytest.mark.parametrize("compact", [False, True])
def test_dedupe_only_producer_state_is_recovered(tmp_path: Path, compact: bool) -> None:
    """The journal does not record the policy: what was stored under DEDUPE_ONLY (gaps, a
    lower epoch, a range that does not number its records) reopens to the same producer
    state, from the appends or from a compacted snapshot."""
    with Engine() as live:
        _dedupe_only_history(live)
        want = _dedupe_only_state(live)
    assert want == [(0, 2, True), (2, 2, True), (3, 2, True), (4, 2, True), (5, 2, False)]
    with Engine(str(tmp_path)) as e:
        _dedupe_only_history(e)
        if compact:
            e.delete_topic("gone")  # a delete makes the next open compact the journal
    if compact:
        Engine(str(tmp_path)).close()
    with Engine(str(tmp_path)) as e:
        assert [r.sequence for r in e.read("t", 0, 0, 10)] == [0, 1, 10, 0, -1]
        assert _dedupe_only_state(e) == want


def test_kafka_nulls_and_producer_timestamps_survive_a_reopen(tmp_path: Path) -> None:
    """A null key, value or header value is not an empty one, and a record's own
    timestamp is kept (Kafka's create time)."""
    with Engine(str(tmp_path)) as e:
        e.create_topic("t", 1)
        e.append("t", 0, [NewRecord(None, None, (("h", None), ("e", b"")), timestamp_ms=7)])
        e.append("t", 0, [NewRecord(b"", b"")])
    with Engine(str(tmp_path)) as e:
        null, empty = e.read("t", 0, 0, 10)
    assert (null.key, null.value, null.headers, null.timestamp_ms) == (
        None,
        None,
        (("h", None), ("e", b"")),
        7,
    )
    assert (empty.key, empty.value) == (b"", b"")
    assert empty.timestamp_ms > 7
