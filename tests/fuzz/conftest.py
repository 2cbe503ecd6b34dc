"""Fixtures shared by the fuzzer's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from conformance import fuzz
from conformance.fuzz import campaign
from conformance.fuzz.target import External
from tests.support import broker


@pytest.fixture(scope="module")
def clean() -> Iterator[External]:
    """A clean reference broker for the module, set up for fuzzing (its fuzz topics made)."""
    b = broker.start()
    try:
        target = External(b.host, b.port)
        campaign.setup(fuzz.protocol("cursus"), target, 2.0)
        yield target
    finally:
        b.stop()
