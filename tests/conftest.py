"""Project-wide test settings: Hypothesis profiles; the toy suite is not collected here;
xdist groups kept on one worker (see the hook below).

``ci`` (chosen when the CI variable is set) keeps property tests short; ``dev`` is the
default; ``long`` (HYPOTHESIS_PROFILE=long) is for a deep run on demand.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

# The toy protocol's conformance cases are run by `conformance run --protocol toy`
# (tests/test_toy_protocol.py), not collected as the project's own tests.
collect_ignore = ["toy/suite"]

settings.register_profile(
    "ci",
    max_examples=50,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile("long", max_examples=5000, deadline=None)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep each ``xdist_group`` on one worker under ``--dist loadgroup`` (pyproject's
    addopts): pytest-xdist 3.8 marks a grouped test by renaming its node id ``<id>@<group>``
    through ``item._nodeid``, which pytest 9 no longer reads (the id is ``item._id``), so
    every group was spread over the workers (two Spark JVMs, two Tansu tests at once).  This
    does the same renaming the way pytest 9 reads it; a no-op once xdist has done it."""
    if not getattr(config.option, "loadgroup", False):
        return
    from _pytest.nodeid import NodeId  # pytest 9's structured node id (pinned in pyproject)

    for item in items:
        names = {
            str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
            for mark in item.iter_markers("xdist_group")
        }
        if names and "@" not in item.nodeid:
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(sorted(names))}")  # type: ignore[attr-defined]
