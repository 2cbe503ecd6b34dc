"""The Cursus plug-in: everything the generic tool needs of Cursus, in one object.

Revision ``doc`` (cursus-protocol.txt).  Options: ``--compression`` (``run``: what the
target accepts, gzip for the embedded broker and none for a ``--target``; ``serve``:
what the broker inflates) and ``--max-poll-records`` (``serve``).  Cursus has no
session opener: a connection's first frame is a real request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from conformance.options import Option
from conformance.plugin import Annotation, Plugin, ServeConfig
from conformance.protocols.cursus import annotate as fields
from conformance.protocols.cursus import codec
from conformance.protocols.cursus.messages import DEFAULT_PORT
from conformance.protocols.cursus.quirks import QUIRKS

if TYPE_CHECKING:
    from conformance.engine import Engine
    from conformance.fuzz.case import Fuzzing
    from conformance.plugin import Messaging, VectorSchema
    from conformance.server import Frontend


OPTIONS = (
    Option(
        "--compression",
        "compression the target accepts; the compression cases are UNSUPPORTED with none "
        "(default: gzip for the embedded broker, none for a --target)",
        ("run",),
        default="none",
        embedded_default="gzip",
        choices=("gzip", "none"),
    ),
    Option(
        "--compression",
        "inflate batch bodies compressed with this algorithm (default none)",
        ("serve",),
        default="none",
        choices=("gzip", "none"),
    ),
    Option(
        "--max-poll-records",
        "most messages returned by one CONSUME (default 100)",
        ("serve",),
        default=100,
        type=int,
        minimum=1,
        metavar="N",
    ),
)


def annotate(payload: bytes, direction: str, earlier: Sequence[bytes]) -> Annotation:
    """A batch, a text command or a reply read on its own (a Cursus reply needs no
    request to be understood)."""
    return Annotation(codec.describe(direction, payload), fields.annotate(payload, direction))


def _frontend(engine: Engine, config: ServeConfig) -> Frontend:
    from conformance.protocols.cursus.handler import CursusConfig, CursusFrontend
    from conformance.protocols.cursus.quirks import Quirks

    options = config.options
    cursus = CursusConfig(
        compression=str(options.get("compression") or "none"),
        max_poll_records=int(options.get("max_poll_records") or 100),
        quirks=Quirks.of(config.quirks),
    )
    return CursusFrontend(engine, cursus)


def _vectors() -> VectorSchema:
    from conformance.protocols.cursus.vectors import SCHEMA

    return SCHEMA


def _fuzzing(options: Mapping[str, Any], revision: str) -> Fuzzing:
    from conformance.protocols.cursus.fuzzing import CursusFuzzing

    return CursusFuzzing()


def _messaging(options: Mapping[str, Any], revision: str) -> Messaging:
    from conformance.protocols.cursus.messaging import messaging

    return messaging(options, revision)


PLUGIN = Plugin(
    name="cursus",
    title="Cursus (cursus-protocol.txt)",
    package="conformance.protocols.cursus",
    suite_package="conformance.suite.cursus",
    revisions=("doc",),
    default_revision="doc",
    default_port=DEFAULT_PORT,
    framing=codec.FRAMING,
    probe_request=b"LIST",
    annotate=annotate,
    frontend=_frontend,
    vectors=_vectors,
    fuzzing=_fuzzing,
    quirks=QUIRKS,
    options=OPTIONS,
    messaging=_messaging,
)
