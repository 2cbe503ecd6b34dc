"""Fuzz campaigns on Apache Spark: seed ranges as Spark tasks, Parquet rows, SQL triage.

A campaign of ``cases`` cases is cut into the fixed seed ranges of
:func:`conformance.fuzz.campaign.seed_ranges` (1,000 cases by default, whatever the
master, so that every master and a run in one process give the same rows).  Each range is one
Spark job of one task, which runs :func:`conformance.fuzz.campaign.run_range` against
the target and returns its rows as tuples.  The jobs are submitted from a small pool
of driver threads, so every core stays busy and the caller hears about each range as
soon as it is done (``on_rows``); the rows are sorted by index at the end, so the
result does not depend on which range finished first.

The rows are written on the driver with pyarrow (one file, ``out/cases.parquet``; no
filesystem shared with the executors is needed), and :func:`triage` hands the columns it
needs back to Spark and groups the findings with Spark SQL.

pyspark is imported inside the functions: a local campaign never starts a JVM.  There is
one session per process (``getOrCreate``); asking for another master stops the current
session first.  Everything listens on 127.0.0.1 (``SPARK_LOCAL_IP``, driver host and
bind address) and the Spark UI is off.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conformance.fuzz.campaign import Options, Row, seed_ranges
from conformance.fuzz.target import External
from conformance.fuzz.triage import CANARY, PARQUET, write_parquet

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

APP_NAME = "conformance-fuzz"
LOOPBACK = "127.0.0.1"
DEFAULT_MASTER = "local[*]"
LOG_LEVEL = "ERROR"
TRIAGE_KEYS = ("signature", "finding", "mutator", "requirement", "count", "first_index")

# ------------------------------------------------------------------------ session


def session(master: str) -> SparkSession:
    """The process's Spark session on ``master`` (started, or the running one reused)."""
    os.environ["SPARK_LOCAL_IP"] = LOOPBACK
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    running = SparkContext._active_spark_context
    if running is not None and running.master != master:
        SparkSession.builder.getOrCreate().stop()
    spark = (
        SparkSession.builder.master(master)
        .appName(APP_NAME)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", LOOPBACK)
        .config("spark.driver.bindAddress", LOOPBACK)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel(LOG_LEVEL)
    return spark


def stop() -> None:
    """Stop the process's Spark session, if one is running."""
    if "pyspark" not in sys.modules:
        return
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if SparkContext._active_spark_context is not None:
        SparkSession.builder.getOrCreate().stop()


def _current() -> SparkSession:
    """The running session, or a new one on :data:`DEFAULT_MASTER`."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if SparkContext._active_spark_context is not None:
        return SparkSession.builder.getOrCreate()
    return session(DEFAULT_MASTER)


# ----------------------------------------------------------------------- campaign


def run_task(
    protocol: str,
    host: str,
    port: int,
    seed: int,
    options: Options,
    ranges: Iterable[tuple[int, int]],
    protocol_options: Mapping[str, Any] | None = None,
    revision: str | None = None,
) -> Iterator[tuple[Any, ...]]:
    """The Spark task: run each seed range of its partition, yield one tuple per row."""
    from conformance.fuzz import protocol as fuzz_protocol
    from conformance.fuzz.campaign import run_range

    proto = fuzz_protocol(protocol, protocol_options, revision)
    names = Row.names()
    for start, stop_ in ranges:
        for row in run_range(proto, External(host, port), seed, start, stop_, options):
            yield tuple(getattr(row, name) for name in names)


def run_campaign(
    master: str,
    protocol: str,
    address: str,
    seed: int,
    cases: int,
    options: Options,
    out: Path,
    on_rows: Callable[[list[Row]], None] | None = None,
    protocol_options: Mapping[str, Any] | None = None,
    revision: str | None = None,
) -> list[Row]:
    """Run cases ``[0, cases)`` of ``seed`` on Spark against ``address`` (``HOST:PORT``),
    write them to ``out/cases.parquet`` and return them sorted by index.

    ``on_rows`` gets each range's rows as soon as that range is done, from the calling
    thread.
    """
    target = External.parse(address)
    spark = session(master)
    sc = spark.sparkContext
    parallelism = max(int(sc.defaultParallelism), 1)
    cuts = seed_ranges(cases, options)
    rows: list[Row] = []
    if cuts:
        rdd = sc.parallelize(cuts, len(cuts))
        task = partial(
            run_task,
            protocol,
            target.host,
            target.port,
            seed,
            options,
            protocol_options=dict(protocol_options or {}),
            revision=revision,
        )
        threads = min(len(cuts), 2 * parallelism)
        with ThreadPoolExecutor(threads, thread_name_prefix="fuzz-range") as pool:
            jobs = [pool.submit(sc.runJob, rdd, task, [i]) for i in range(len(cuts))]
            try:
                for done in as_completed(jobs):
                    got = [Row(*values) for values in _result(done)]
                    rows += got
                    if on_rows is not None:
                        on_rows(got)
            except BaseException:
                for job in jobs:
                    job.cancel()
                sc.cancelAllJobs()
                raise
    rows.sort(key=lambda r: r.index)
    write_parquet(rows, out)
    return rows


def _result(job: Future[Any]) -> list[tuple[Any, ...]]:
    values: list[tuple[Any, ...]] = job.result()
    return values


# ------------------------------------------------------------------------- triage

TRIAGE_SQL = """
WITH found AS (
    SELECT finding, requirement, mutator, `index` FROM fuzz_cases WHERE finding <> ''
    UNION ALL
    SELECT 'CORRUPTION', :corruption, :canary, `index` FROM fuzz_cases WHERE canary = 'lost'
    UNION ALL
    SELECT 'LEAK', :leak, :canary, `index` FROM fuzz_cases WHERE leak
)
SELECT concat(finding, ':', requirement) AS signature, finding, mutator, requirement,
       count(*) AS count, min(`index`) AS first_index
FROM found
GROUP BY finding, requirement, mutator
ORDER BY finding, count DESC, signature, mutator
"""

_TRIAGE_COLUMNS = ["index", "mutator", "finding", "requirement", "canary", "leak"]


def triage(
    out: Path, corruption_requirement: str, leak_requirement: str
) -> list[dict[str, object]]:
    """The findings in ``out/cases.parquet`` grouped by (signature, mutator), with how
    many cases show each and the first of them, ordered by finding then count (desc).

    A lost canary is a CORRUPTION filed against ``corruption_requirement``, a leak flag a
    LEAK filed against ``leak_requirement``, both under the mutator ``(canary)`` (the case
    a canary ran after is not its culprit); other findings carry their own requirement.
    Runs on the process's Spark session (``local[*]`` if none is running).
    """
    import pyarrow.parquet as pq

    path = out / PARQUET
    if not path.exists():
        raise FileNotFoundError(f"no campaign rows to triage: {path} does not exist")
    table = pq.read_table(path, columns=_TRIAGE_COLUMNS)
    spark = _current()
    spark.createDataFrame(table).createOrReplaceTempView("fuzz_cases")
    args = {"corruption": corruption_requirement, "leak": leak_requirement, "canary": CANARY}
    found = spark.sql(TRIAGE_SQL, args=args).collect()
    return [{key: row[key] for key in TRIAGE_KEYS} for row in found]
