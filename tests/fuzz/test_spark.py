"""Fuzz campaigns on Spark: the same rows as in one process, on ``local[2]`` and on a real
standalone cluster (a master and a worker started here from the pyspark install), Parquet
output, and a triage that finds the HANG of ``--quirk hang-on-empty-frame``.

Every test uses the one Spark session of this process; :func:`spark.session` stops the
running one when a test asks for another master (``local[2]``, ``spark://...``,
``local[*]``), so the JVM is started once and only the SparkContext is replaced.

Rows are compared on every field but ``latency_ms`` and ``rss_mb`` (the harness counts
only owed replies, not what a STREAM pushes, which depends on what other ranges wrote).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pyspark
import pytest

from conformance.fuzz import protocol, spark
from conformance.fuzz.campaign import Options, Row, run_range, seed_ranges, setup
from conformance.fuzz.case import FuzzCase
from conformance.fuzz.target import External
from tests.support import broker

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

PROTO = protocol("cursus")
SEED = 7
CASES = 300
HANG_SEED = 1
_ANY_CASE = FuzzCase(0, "valid", "structure", (b"",))
CORRUPTION_REQ = PROTO.requirement("CORRUPTION", _ANY_CASE)
LEAK_REQ = PROTO.requirement("LEAK", _ANY_CASE)
SPARK_HOME = Path(pyspark.__file__).parent
CLUSTER_START_S = 90.0


@pytest.fixture(scope="module", autouse=True)
def _stop_spark() -> Iterator[None]:
    yield
    spark.stop()


@pytest.fixture(scope="module")
def clean() -> Iterator[broker.Broker]:
    b = broker.start()
    try:
        setup(PROTO, External(b.host, b.port), 2.0)
        yield b
    finally:
        b.stop()


def comparable(rows: list[Row]) -> list[dict[str, object]]:
    """Rows without their timing fields."""
    out = []
    for row in rows:
        d = row.as_dict()
        del d["latency_ms"], d["rss_mb"]
        out.append(d)
    return out


def differences(a: list[Row], b: list[Row]) -> list[tuple[object, ...]]:
    """(index, field, one, other) for every comparable field that differs."""
    out: list[tuple[object, ...]] = [("row count", len(a), len(b))] if len(a) != len(b) else []
    for x, y in zip(comparable(a), comparable(b), strict=False):
        out += [(x["index"], k, x[k], y[k]) for k in x if x[k] != y[k]]
    return out


def in_process(b: broker.Broker, ranges: list[tuple[int, int]], options: Options) -> list[Row]:
    target = External(b.host, b.port)
    return [row for a, z in ranges for row in run_range(PROTO, target, SEED, a, z, options)]


def test_local_campaign_gives_the_rows_of_one_process(clean: broker.Broker, tmp_path: Path) -> None:
    progress: list[int] = []
    opts = Options(canary_every=50, range_cases=150)
    rows = spark.run_campaign(
        "local[2]",
        "cursus",
        clean.address,
        SEED,
        CASES,
        opts,
        tmp_path,
        on_rows=lambda got: progress.append(len(got)),
    )
    ranges = seed_ranges(CASES, opts)
    assert ranges == [(0, 150), (150, 300)]
    assert [r.index for r in rows] == list(range(CASES))
    assert sorted(progress) == [150, 150]  # one report per range, as each finished
    assert {r.task for r in rows} == {0, 150}
    assert differences(rows, in_process(clean, ranges, opts)) == []
    assert [r.index for r in rows if r.canary == "ok"] == [49, 99, 149, 199, 249, 299]

    path = tmp_path / spark.PARQUET
    assert path.is_file()
    back = spark.session("local[2]").read.parquet(str(path))
    assert back.count() == CASES
    first = back.orderBy("index").first()
    assert first is not None and bytes(first["sent"]) == rows[0].sent
    assert pq.read_schema(path).names == Row.names()
    assert spark.triage(tmp_path, CORRUPTION_REQ, LEAK_REQ) == []


def test_hang_quirk_is_found_and_triaged_on_spark(tmp_path: Path) -> None:
    # Seed 1 sends its first empty frame (a length-lie of 0) at case 28; seed 7 not before 469.
    hung = broker.start("--quirk", "hang-on-empty-frame")
    try:
        setup(PROTO, External(hung.host, hung.port), 2.0)
        rows = spark.run_campaign(
            "local[2]", "cursus", hung.address, HANG_SEED, 400, Options(deadline=0.5), tmp_path
        )
    finally:
        hung.stop()
    hangs = [r for r in rows if r.finding == "HANG"]
    assert hangs, "no HANG in 400 cases against --quirk hang-on-empty-frame"
    found = spark.triage(tmp_path, CORRUPTION_REQ, LEAK_REQ)
    assert found, "triage shows no finding"
    assert {f["finding"] for f in found} == {"HANG"}
    assert sum(int(str(f["count"])) for f in found) == len(hangs)
    assert min(int(str(f["first_index"])) for f in found) == hangs[0].index
    for f in found:
        assert f["signature"] == f"HANG:{f['requirement']}"
        assert list(f) == list(spark.TRIAGE_KEYS)
    counts = [int(str(f["count"])) for f in found]
    assert counts == sorted(counts, reverse=True)


def test_standalone_cluster_gives_the_rows_of_local(clean: broker.Broker, tmp_path: Path) -> None:
    opts = Options(canary_every=50, range_cases=100)  # 3 ranges, whatever the cores
    with standalone_cluster(tmp_path) as master:
        on_cluster = spark.run_campaign(
            master, "cursus", clean.address, SEED, CASES, opts, tmp_path / "cluster"
        )
        assert spark.session(master).sparkContext.master == master
        spark.stop()  # while the master still runs
    local = spark.run_campaign(
        "local[*]", "cursus", clean.address, SEED, CASES, opts, tmp_path / "local"
    )
    assert [r.index for r in on_cluster] == list(range(CASES))
    assert {r.task for r in on_cluster} == {0, 100, 200}
    assert differences(on_cluster, local) == []
    assert (tmp_path / "cluster" / spark.PARQUET).is_file()


# ------------------------------------------------------------ a standalone cluster


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(log: Path, text: str, proc: subprocess.Popen[bytes], what: str) -> None:
    end = time.monotonic() + CLUSTER_START_S
    while time.monotonic() < end:
        if text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    tail = log.read_text(errors="replace")[-2000:]
    raise RuntimeError(f"the Spark {what} did not start ({text!r} not seen):\n{tail}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@contextlib.contextmanager
def standalone_cluster(tmp_path: Path) -> Iterator[str]:
    """A Spark master and one worker (2 cores, 1 GiB) on 127.0.0.1; yields the master URL."""
    env = {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
    }
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen[bytes]] = []

    def spawn(name: str, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
        log = tmp_path / f"spark-{name}.log"
        with log.open("wb") as f:
            proc = subprocess.Popen(
                [spark_class, *args], env=env, stdout=f, stderr=subprocess.STDOUT, cwd=tmp_path
            )
        procs.append(proc)
        return proc, log

    try:
        master, log = spawn(
            "master",
            "org.apache.spark.deploy.master.Master",
            *("--host", "127.0.0.1", "--port", str(port), "--webui-port", str(_free_port())),
        )
        _wait_for(log, "New state: ALIVE", master, "master")
        worker, log = spawn(
            "worker",
            "org.apache.spark.deploy.worker.Worker",
            url,
            *("--host", "127.0.0.1", "--cores", "2", "--memory", "1g"),
            *("--webui-port", str(_free_port()), "--work-dir", str(tmp_path / "spark-work")),
        )
        _wait_for(log, "Successfully registered with master", worker, "worker")
        yield url
    finally:
        for proc in reversed(procs):
            _stop(proc)
