"""Kafka test fixtures: the reference broker served as a subprocess, once per test module
and revision (real clients must work against both: ``apache``, and ``doc`` with pgcdc's
header v0 everywhere), stopped by its PID."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from tests.support import broker as support


@pytest.fixture(scope="module", params=["apache", "doc"])
def kafka(request: pytest.FixtureRequest) -> Iterator[support.Broker]:
    served = support.start(
        "--revision",
        request.param,
        "--join-delay-ms",
        "200",
        "--session-timeout",
        "10",
        protocol="kafka",
    )
    try:
        yield served
    finally:
        served.stop()


def need_tool(name: str) -> str:
    """The path of system tool ``name``; with CI=true a missing one fails the test (the
    README's test command installs it), elsewhere it is skipped with how to get it."""
    path = shutil.which(name)
    if path is None:
        why = (
            f"{name} is not installed; scripts/system-packages installs it (apt-get install {name})"
        )
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    return path
