"""The front-ends' metadata store (``Engine.put_meta`` / ``Engine.meta``): journaled as
PutMeta, recovered in order, compacted to its live keys, and after a crash each write is
there whole or not at all."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.engine import Engine, EngineError, NewRecord
from conformance.engine.ops import PutMeta, decode, encode
from conformance.engine.store import JOURNAL_FILE

KILL_ROUNDS = 3


def journal(data_dir: Path) -> Path:
    return data_dir / JOURNAL_FILE


@pytest.mark.parametrize(
    "op",
    [
        PutMeta("k", b"v"),
        PutMeta("p/\u00e9\udcff", b"\x00\xff" * 40),
        PutMeta("k", b""),
        PutMeta("k", None),
    ],
    ids=["value", "unicode-key", "empty-value", "removal"],
)
def test_put_meta_round_trips_and_refuses_a_cut_or_padded_payload(op: PutMeta) -> None:
    raw = encode(op)
    assert decode(raw) == op
    with pytest.raises(ValueError, match="early"):
        decode(raw[:-1])
    with pytest.raises(ValueError, match="left after"):
        decode(raw + b"\x00")


def test_an_empty_value_is_not_a_removal() -> None:
    assert encode(PutMeta("k", b"")) != encode(PutMeta("k", None))


def test_set_overwrite_remove_and_prefix_survive_a_reopen(tmp_path: Path) -> None:
    with Engine(str(tmp_path)) as e:
        e.put_meta("a/1", b"one")
        e.put_meta("a/2", b"two")
        e.put_meta("a/2", b"TWO")
        e.put_meta("a/3", b"")
        e.put_meta("b/1", b"\x00\xff")
        e.put_meta("a/1", None)
        e.put_meta("absent", None)  # removing what is not there writes nothing
        e.create_topic("t", 1)  # metadata and the rest of the state share the journal
        e.append("t", 0, [NewRecord(b"", b"x")])
        want = {"a/2": b"TWO", "a/3": b"", "b/1": b"\x00\xff"}
        assert e.meta() == want
        assert e.meta("a/") == {"a/2": b"TWO", "a/3": b""}
    with Engine(str(tmp_path)) as e:
        assert e.meta() == want
        assert e.meta("b") == {"b/1": b"\x00\xff"}
        assert e.meta("c") == {}
        assert e.high_watermark("t", 0) == 1


def test_meta_returns_a_copy_and_an_unchanged_value_writes_nothing(tmp_path: Path) -> None:
    with Engine(str(tmp_path)) as e:
        e.put_meta("k", b"v")
        e.meta()["k"] = b"changed"
        assert e.meta() == {"k": b"v"}
        size = journal(tmp_path).stat().st_size
        e.put_meta("k", b"v")
        e.put_meta("gone", None)
        assert journal(tmp_path).stat().st_size == size


def test_an_empty_key_is_refused_and_a_closed_engine_refuses_changes() -> None:
    e = Engine()
    with pytest.raises(EngineError) as exc:
        e.put_meta("", b"v")
    assert exc.value.code == "INVALID_ARGUMENT"
    e.close()
    with pytest.raises(EngineError) as exc:
        e.put_meta("k", b"v")
    assert exc.value.code == "CLOSED"


def test_an_engine_without_a_data_dir_keeps_meta_in_memory() -> None:
    with Engine() as e:
        e.put_meta("k", b"v")
        assert e.meta("k") == {"k": b"v"}


def test_compaction_keeps_only_live_keys(tmp_path: Path) -> None:
    with Engine(str(tmp_path)) as e:
        for i in range(10_050):  # past the engine's threshold of superseded operations
            e.put_meta(f"k/{i % 7}", b"%d" % i)
        e.put_meta("k/3", None)
        e.put_meta("other", b"kept")
        want = e.meta()
    size_before = journal(tmp_path).stat().st_size
    with Engine(str(tmp_path)) as e:
        assert e.meta() == want
        assert e.recovery is not None and e.recovery.operations > 10_000
    assert journal(tmp_path).stat().st_size < size_before / 100
    with Engine(str(tmp_path)) as e:  # the compacted journal: one PutMeta per live key
        assert e.meta() == want
        assert e.recovery is not None and e.recovery.operations == len(want)


def test_a_topic_deletion_compaction_keeps_meta(tmp_path: Path) -> None:
    with Engine(str(tmp_path)) as e:
        e.create_topic("gone", 1)
        e.put_meta("k", b"v")
        e.put_meta("removed", b"x")
        e.put_meta("removed", None)
        e.delete_topic("gone")  # the next open compacts
    Engine(str(tmp_path)).close()
    with Engine(str(tmp_path)) as e:
        assert e.meta() == {"k": b"v"}
        assert e.recovery is not None and e.recovery.operations == 1


def test_a_write_cut_anywhere_is_absent_and_every_earlier_one_whole(tmp_path: Path) -> None:
    """kill -9 in the middle of a write leaves a torn tail: every cut point of the last
    PutMeta record gives the state before it."""
    with Engine(str(tmp_path)) as e:
        e.put_meta("a", b"first")
        e.put_meta("b", b"second")
        good = journal(tmp_path).stat().st_size
        e.put_meta("a", b"overwritten, and long enough to be cut in many places")
    whole = journal(tmp_path).read_bytes()
    for cut in range(good, len(whole)):
        journal(tmp_path).write_bytes(whole[:cut])
        with Engine(str(tmp_path)) as e:
            assert e.meta() == {"a": b"first", "b": b"second"}, f"cut at byte {cut}"
    journal(tmp_path).write_bytes(whole)
    with Engine(str(tmp_path)) as e:
        assert e.meta()["a"].startswith(b"overwritten")


WRITER = """
import sys
from conformance.engine import Engine
e = Engine(sys.argv[1])
print("ready", flush=True)
i = 0
while True:
    e.put_meta("k/%d" % (i % 50), b"%d:" % i + b"x" * (i % 300))
    if i % 3 == 0:
        e.put_meta("k/%d" % ((i + 25) % 50), None)
    print(i, flush=True)
    i += 1
"""


def _writes(iterations: int) -> list[tuple[str, bytes | None]]:
    """The WRITER's writes, in order, for its first ``iterations`` turns."""
    out: list[tuple[str, bytes | None]] = []
    for i in range(iterations):
        out.append((f"k/{i % 50}", b"%d:" % i + b"x" * (i % 300)))
        if i % 3 == 0:
            out.append((f"k/{(i + 25) % 50}", None))
    return out


def _after(writes: list[tuple[str, bytes | None]]) -> dict[str, bytes]:
    state: dict[str, bytes] = {}
    for key, value in writes:
        if value is None:
            state.pop(key, None)
        else:
            state[key] = value
    return state


@pytest.mark.parametrize("round_", range(KILL_ROUNDS))
def test_kill_9_between_writes_leaves_each_write_whole_or_absent(
    tmp_path: Path, round_: int
) -> None:
    """A writer process is killed with SIGKILL while it writes: the reopened store is the
    state after some prefix of its writes, in order, each whole, that holds every write
    it acknowledged (printed the turn of) and at most the turn after."""
    data, out = tmp_path / "data", tmp_path / "out.txt"
    with out.open("wb") as f:
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(data)],
            stdout=f,  # a file, not a pipe: the writer never waits for the test
            cwd=Path(__file__).resolve().parents[2],
        )
    deadline = time.monotonic() + 20
    while not out.read_bytes().startswith(b"ready\n") and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1 + 0.1 * round_)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    acked = [int(line) for line in out.read_bytes().split(b"\n")[1:-1]]
    assert len(acked) > 100, "the writer hardly wrote before the kill"
    with Engine(str(data)) as e:
        got = e.meta()
    done, upto = len(_writes(acked[-1] + 1)), _writes(acked[-1] + 2)
    prefixes = [n for n in range(done, len(upto) + 1) if _after(upto[:n]) == got]
    assert prefixes, (
        f"after turn {acked[-1]} the store is no prefix of the writes: "
        f"{sorted(got.items())[:3]} ..."
    )
