"""Every test here runs with the test-only protocols registered (tests/protocols/registered.py),
in this process and in any subprocess it starts."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.protocols.registered import extra_protocols_registered


@pytest.fixture(autouse=True)
def _test_only_protocols(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with extra_protocols_registered() as pythonpath:
        monkeypatch.setenv("PYTHONPATH", pythonpath)
        yield
