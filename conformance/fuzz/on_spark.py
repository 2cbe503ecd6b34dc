"""A fuzz campaign's Spark side, as the ``fuzz`` command starts it: the session first (its
start is not campaign time), then the seed ranges as tasks (:mod:`.spark`).  Spark is
imported only here, and only when ``--spark-master`` is given; whatever py4j or pyspark
raises becomes one line for the user."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conformance.exits import UsageError
from conformance.fuzz.campaign import Options, Row
from conformance.fuzz.target import Target


def run_on_spark(
    args: argparse.Namespace,
    target: Target,
    options: Options,
    advance: Callable[[list[Row]], None],
    values: dict[str, Any],
    revision: str,
) -> list[Row]:
    from conformance.fuzz import spark

    try:
        return spark.run_campaign(
            args.spark_master,
            args.protocol,
            target.address,
            args.seed,
            args.cases,
            options,
            Path(args.out),
            on_rows=advance,
            protocol_options=values,
            revision=revision,
        )
    except Exception as exc:
        raise UsageError(f"the Spark campaign failed: {first_line(exc)}") from None


def start_spark(master: str) -> None:
    """Start the Spark session before the progress bar (its start is not campaign time)."""
    from conformance.fuzz import spark

    try:
        spark.session(master)
    except Exception as exc:  # py4j and pyspark raise many kinds; the user needs one line
        raise UsageError(
            f"cannot start Spark on --spark-master {master}: {first_line(exc)}"
        ) from None


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
