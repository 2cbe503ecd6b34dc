"""The toy protocol's plug-in object (registered by an entry point the tests write)."""

from __future__ import annotations

from pathlib import Path

from conformance.options import Option
from conformance.plugin import Plugin, QuirkSpec
from tests.toy import protocol
from tests.toy.vectors import SCHEMA

PLUGIN = Plugin(
    name="toy",
    title="a test-only protocol",
    package="tests.toy",
    suite_package="tests.toy.suite",
    revisions=("v1",),
    default_revision="v1",
    default_port=9999,
    framing=protocol.FRAMING,
    probe_request=b"PING",
    annotate=protocol.annotate,
    frontend=protocol.Frontend,
    vectors=lambda: SCHEMA,
    fuzzing=protocol.Fuzzing,
    quirks={
        "get-off-by-one": QuirkSpec(
            "get-off-by-one", "spec", "data", ("TOY-GET-1",), "GET reads offset+1"
        ),
        "crash-on-nul-value": QuirkSpec(
            "crash-on-nul-value", "fault", "fault", (), "CRASH on a NUL in a PUT value"
        ),
    },
    options=(
        Option(
            "--toy-password",
            "the password HELLO must give",
            ("run", "serve", "fuzz"),
            "toy",
            secret=True,
        ),
    ),
    opening=protocol.opening,
    vector_dir=Path(__file__).parent / "vectors" / "toy",
)
