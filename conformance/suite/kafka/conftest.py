"""The Kafka suite's one hook: a case marked ``at_every_version(API)`` (see verify.py)
runs once per version of that API its revision knows, with the version as its
``version`` argument; the plugin then gives it the ID ``<case>@v<version>``."""

from __future__ import annotations

import pytest

from conformance.suite.kafka.verify import known_versions


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    mark = metafunc.definition.get_closest_marker("conformance_versions")
    if mark is None:
        return
    revision = metafunc.config.getoption("conformance_revision", None) or "doc"
    since, until = mark.kwargs.get("since", 0), mark.kwargs.get("until")
    versions = [
        v
        for v in known_versions(revision, mark.args[0])
        if v >= since and (until is None or v <= until)
    ]
    metafunc.parametrize("version", versions, ids=[f"v{v}" for v in versions])
