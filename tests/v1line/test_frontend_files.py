"""The V1 front-end in process: groups.json and offsets.json as a view of the engine
(V1L-DUR-1..3, -6: written on a change before the reply, rewritten at start; a data directory
whose files are ahead of the engine's journal refuses to start with one line), and the
engine's limits as one-line refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.engine import Engine, EngineError
from conformance.exits import UsageError
from conformance.protocols.v1line.handler import V1Config, V1Frontend


def _ask(frontend: V1Frontend, line: str) -> str:
    outcome = frontend.new_session("test").handle(line.encode())
    assert len(outcome.replies) == 1, outcome
    return outcome.replies[0].decode()


def test_a_commit_is_in_offsets_json_before_its_reply(tmp_path: Path) -> None:
    with Engine(str(tmp_path)) as engine:
        fe = V1Frontend(engine, V1Config(partitions=2))
        assert _ask(fe, "V1|1|JOIN|g t c1") == "V1|1|OK|generation=1 assigned=[0 1]\n"
        assert _ask(fe, "V1|2|COMMIT|g t c1 1 1 7") == "V1|2|OK|committed=true\n"
        offsets = json.loads((tmp_path / "offsets.json").read_text())
        groups = json.loads((tmp_path / "groups.json").read_text())
    assert offsets == {"g": {"t": {"1": 7}}}
    assert groups["g"]["generation"] == 1
    assert groups["g"]["assignor"] == "round_robin"
    assert groups["g"]["assignments"] == {"c1": [0, 1]}
    assert [m["consumer_id"] for m in groups["g"]["members"]] == ["c1"]


def test_a_restart_serves_what_was_committed_and_joined(tmp_path: Path) -> None:
    config = V1Config(revision="real", partitions=3)
    with Engine(str(tmp_path)) as engine:
        fe = V1Frontend(engine, config)
        assert _ask(fe, "V1|1|JOIN|g t c1 assignor=range").startswith("V1|1|OK|generation=2 ")
        _ask(fe, "V1|2|COMMIT|g t c1 2 2 4")
    with Engine(str(tmp_path)) as engine:
        fe = V1Frontend(engine, config)
        assert _ask(fe, "V1|3|OFFSET|g t 2") == "V1|3|OK|offset=4\n"
        assert _ask(fe, "V1|4|SYNC|g t c1 2") == "V1|4|OK|generation=2 assigned=[0 1 2]\n"
    assert json.loads((tmp_path / "groups.json").read_text())["g"]["assignor"] == "range"


def test_files_ahead_of_the_journal_stop_the_broker(tmp_path: Path) -> None:
    (tmp_path / "offsets.json").write_text('{"g": {"t": {"0": 5}}}')
    with Engine(str(tmp_path)) as engine, pytest.raises(UsageError) as refused:
        V1Frontend(engine, V1Config())
    assert "offset 5 of 'g' t/0" in str(refused.value)
    assert "move groups.json and offsets.json away" in str(refused.value)
    assert (tmp_path / "offsets.json").read_text() == '{"g": {"t": {"0": 5}}}'  # not overwritten


def test_a_damaged_file_stops_the_broker_with_its_name(tmp_path: Path) -> None:
    (tmp_path / "groups.json").write_text('{"g":')
    with Engine(str(tmp_path)) as engine, pytest.raises(UsageError, match=r"groups\.json"):
        V1Frontend(engine, V1Config())


def test_without_a_data_dir_no_file_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    fe = V1Frontend(Engine(), V1Config())
    _ask(fe, "V1|1|JOIN|g t c1")
    assert list(tmp_path.iterdir()) == []


def test_more_partitions_than_the_engine_allows_refuse_to_start() -> None:
    with pytest.raises(UsageError, match="--partitions 5 is above this broker's limit of 2"):
        V1Frontend(Engine(max_partitions=2), V1Config(partitions=5))


def test_an_engine_refusal_is_a_bad_request_not_a_closed_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine = Engine()

    def refuse(*_: object, **__: object) -> None:
        raise EngineError("INVALID_ARGUMENT", "the engine says no")

    monkeypatch.setattr(engine, "append", refuse)
    fe = V1Frontend(engine, V1Config())
    assert _ask(fe, "V1|7|PRODUCE|t k:v") == "V1|7|ERR|BAD_REQUEST|the engine says no\n"
