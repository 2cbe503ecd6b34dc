"""Project-wide test settings: Hypothesis profiles; the toy suite is not collected here.

``ci`` (chosen when the CI variable is set) keeps property tests short; ``dev`` is the
default; ``long`` (HYPOTHESIS_PROFILE=long) is for a deep run on demand.
"""

from __future__ import annotations

import os

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
