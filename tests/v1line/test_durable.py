"""The V1 line durable files against SPEC.md's durability area (V1L-DUR-1 to -6): round trips,
the real broker's JSON layout, missing and damaged files, and kill -9 of a saving writer at
random moments (nothing saved and reported ever goes back, no file is ever torn)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conformance.protocols.v1line.durable import (
    GROUPS_FILE,
    OFFSETS_FILE,
    DurableStateError,
    Group,
    GroupFiles,
    Member,
    Offsets,
)

ROOT = Path(__file__).resolve().parents[2]


def _group(generation: int = 2, n: int = 2) -> Group:
    ids = [f"c{i}" for i in range(n)]
    return Group(
        topic="orders",
        generation=generation,
        assignor="range",
        member_order=ids,
        assignments={cid: [i] for i, cid in enumerate(ids)},
        members=[Member(cid, 1_700_000_000_000 + i) for i, cid in enumerate(ids)],
    )


def test_round_trip_groups_and_offsets(tmp_path: Path) -> None:
    files = GroupFiles(tmp_path)
    groups = {"g1": _group(2), "g2": Group(topic="t", generation=5, assignor="round_robin")}
    offsets: Offsets = {"g1": {"orders": {0: 5, 1: 0, 12: -3}}, "g2": {"t": {}}}
    files.save_groups(groups)
    files.save_offsets(offsets)
    assert GroupFiles(tmp_path).load() == (groups, offsets)


def test_saving_again_replaces_the_state(tmp_path: Path) -> None:
    files = GroupFiles(tmp_path)
    files.save_groups({"g": _group(2)})
    files.save_offsets({"g": {"t": {0: 1}}})
    files.save_groups({"g": _group(3, n=1)})
    files.save_offsets({})
    assert files.load() == ({"g": _group(3, n=1)}, {})
    assert sorted(os.listdir(tmp_path)) == [GROUPS_FILE, OFFSETS_FILE]


def test_layout_is_the_real_brokers(tmp_path: Path) -> None:
    """V1L-DUR-3 and -6: both files directly under the data dir, in the real broker's shape."""
    files = GroupFiles(tmp_path / "data")
    files.save_groups({"g": _group(2, n=1)})
    files.save_offsets({"g": {"orders": {3: 7}}})
    assert json.loads((tmp_path / "data" / OFFSETS_FILE).read_text()) == {"g": {"orders": {"3": 7}}}
    assert json.loads((tmp_path / "data" / GROUPS_FILE).read_text()) == {
        "g": {
            "topic": "orders",
            "generation": 2,
            "assignor": "range",
            "member_order": ["c0"],
            "assignments": {"c0": [0]},
            "members": [{"consumer_id": "c0", "last_heartbeat_unix_ms": 1_700_000_000_000}],
        }
    }


def test_reads_go_nulls_as_empty(tmp_path: Path) -> None:
    (tmp_path / GROUPS_FILE).write_text(
        '{"g":{"topic":"t","generation":1,"assignor":"round_robin",'
        '"member_order":null,"assignments":null,"members":null}}'
    )
    groups, offsets = GroupFiles(tmp_path).load()
    assert groups == {"g": Group(topic="t", generation=1, assignor="round_robin")}
    assert offsets == {}


def test_missing_files_and_directory_are_empty_state(tmp_path: Path) -> None:
    assert GroupFiles(tmp_path / "nowhere").load() == ({}, {})
    assert GroupFiles(tmp_path).load() == ({}, {})


DAMAGED = [
    (GROUPS_FILE, b"", "empty file"),
    (OFFSETS_FILE, b'{"g": {"t": {"0": 5', "not JSON"),
    (OFFSETS_FILE, b"\xff\xfe", "not UTF-8"),
    (OFFSETS_FILE, b"[1, 2]", "top level: expected an object, got list"),
    (OFFSETS_FILE, b'{"g": {"t": {"x": 5}}}', "partition key 'x' is not an integer"),
    (OFFSETS_FILE, b'{"g": {"t": {"0": "5"}}}', "partition 0: expected an integer, got str"),
    (OFFSETS_FILE, b'{"g": {"t": {"0": true}}}', "expected an integer, got bool"),
    (GROUPS_FILE, b'{"g": {"topic": "t"}}', "group 'g': missing generation, assignor"),
    (
        GROUPS_FILE,
        b'{"g": {"topic": "t", "generation": 2, "assignor": "sticky"}}',
        "'sticky' is not round_robin|range",
    ),
    (
        GROUPS_FILE,
        b'{"g": {"topic": "t", "generation": 2, "assignor": "range", "members": [{}]}}',
        "members[0] consumer_id: expected a string, got null",
    ),
]


@pytest.mark.parametrize(("name", "content", "reason"), DAMAGED)
def test_damaged_file_raises_one_line_naming_it(
    tmp_path: Path, name: str, content: bytes, reason: str
) -> None:
    (tmp_path / name).write_bytes(content)
    with pytest.raises(DurableStateError) as exc:
        GroupFiles(tmp_path).load()
    message = str(exc.value)
    assert exc.value.path == str(tmp_path / name)
    assert message.startswith(f"{tmp_path / name}: ")
    assert reason in message, message
    assert "\n" not in message


WRITER = textwrap.dedent(
    """
    import sys
    from conformance.protocols.v1line.durable import Group, GroupFiles, Member

    files = GroupFiles(sys.argv[1])
    groups, offsets = files.load()
    n = groups["g"].generation if "g" in groups else 0
    ids = [f"consumer-{i:04d}" for i in range(300)]
    print("ready", flush=True)
    while True:
        n += 1
        files.save_groups({"g": Group(
            topic="orders", generation=n, assignor="round_robin", member_order=ids,
            assignments={c: [i, i + 300] for i, c in enumerate(ids)},
            members=[Member(c, n) for c in ids],
        )})
        files.save_offsets({"g": {"orders": {p: n for p in range(300)}}})
        print(n, flush=True)
    """
)


def test_kill_9_never_loses_a_saved_generation_or_offset(tmp_path: Path) -> None:
    """V1L-DUR-4, -5: SIGKILL at random moments; after each, load() succeeds and nothing the
    writer reported saved has gone back."""
    rng = random.Random(22)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    files = GroupFiles(tmp_path)
    gen_floor = off_floor = 0  # the least each may be: what was reported saved or loaded
    saved_any = False
    deadline = time.monotonic() + 15
    for kill in range(24):
        assert time.monotonic() < deadline, f"too slow: {kill} kills in 15 s"
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            assert proc.stdout is not None
            first = proc.stdout.readline()
            assert first == "ready\n", first + (proc.stderr.read() if proc.stderr else "")
            time.sleep(rng.uniform(0.0, 0.04))
        finally:
            proc.kill()  # SIGKILL to this one PID
            out, err = proc.communicate(timeout=10)
        assert proc.returncode == -9, err
        printed = [int(line) for line in out.split()]
        assert printed == sorted(printed), printed
        if printed:
            saved_any = True
            gen_floor = max(gen_floor, printed[-1])
            off_floor = max(off_floor, printed[-1])
        groups, offsets = files.load()
        generation = groups["g"].generation if "g" in groups else 0
        parts = offsets.get("g", {}).get("orders", {})
        assert generation >= gen_floor, f"kill {kill}: generation {generation} < {gen_floor}"
        assert generation <= gen_floor + 1, f"kill {kill}: generation {generation} never saved"
        assert all(off_floor <= off <= generation for off in parts.values()), (
            f"kill {kill}: offsets {set(parts.values())}, floor {off_floor}, gen {generation}"
        )
        if off_floor:
            assert len(parts) == 300, f"kill {kill}: {len(parts)} partitions, expected 300"
        gen_floor = generation
        off_floor = min(parts.values(), default=0)
    assert saved_any, "the writer never reported a save"
