"""The Cursus plug-in: everything the generic tool needs of Cursus, in one object.

Revisions ``doc`` (cursus-protocol.txt, the default) and ``real`` (the real broker and its
official Python client, FACTS.md).  Options: ``--compression`` (``run``: what the
target accepts, gzip for the embedded broker and none for a ``--target``; ``serve``:
what the broker inflates), ``--max-poll-records`` (``serve``) and ``--keepalive-ms`` (``run``
and ``serve``, revision real).  Cursus has no
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
from conformance.protocols.cursus.real_annotate import describe_real, real_spans

if TYPE_CHECKING:
    from conformance.engine import Engine
    from conformance.fuzz.case import Fuzzing
    from conformance.plugin import Messaging, VectorSchema
    from conformance.server import Frontend
    from conformance.validate.contract import Validation


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
        "--keepalive-ms",
        "revision real: the STREAM keepalive interval the target is configured with; the "
        "keepalive case waits this long plus the timeout (default 5000, the real broker's; "
        "300 for the embedded broker)",
        ("run",),
        default=5000,
        embedded_default=300,
        type=int,
        minimum=1,
        metavar="MS",
    ),
    Option(
        "--keepalive-ms",
        "revision real: a STREAM with nothing to push sends an empty frame this often "
        "(default 5000, the real broker's)",
        ("serve",),
        default=5000,
        type=int,
        minimum=1,
        metavar="MS",
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
    request to be understood), in the layout that explains it: revision real's where only
    that one does (real_annotate.py), else the document's."""
    real = real_spans(payload, direction)
    if real is not None:
        return Annotation(describe_real(payload), real)
    return Annotation(codec.describe(direction, payload), fields.annotate(payload, direction))


def _frontend(engine: Engine, config: ServeConfig) -> Frontend:
    from conformance.protocols.cursus.handler import CursusConfig, CursusFrontend
    from conformance.protocols.cursus.quirks import Quirks

    options = config.options
    cursus = CursusConfig(
        compression=str(options.get("compression") or "none"),
        max_poll_records=int(options.get("max_poll_records") or 100),
        quirks=Quirks.of(config.quirks),
        revision=config.revision,
        keepalive_s=int(options.get("keepalive_ms") or 5000) / 1000,
    )
    return CursusFrontend(engine, cursus)


def _vectors() -> VectorSchema:
    from conformance.protocols.cursus.vectors import SCHEMA

    return SCHEMA


def _fuzzing(options: Mapping[str, Any], revision: str) -> Fuzzing:
    if revision == "real":
        from conformance.protocols.cursus.real_fuzzing import RealFuzzing

        return RealFuzzing()
    from conformance.protocols.cursus.fuzzing import CursusFuzzing

    return CursusFuzzing()


def _messaging(options: Mapping[str, Any], revision: str) -> Messaging:
    from conformance.protocols.cursus.messaging import messaging

    return messaging(options, revision)


def _validation(frontend: Frontend, config: ServeConfig) -> Validation:
    from conformance.protocols.cursus.validation import validation

    return validation(frontend, config)


PLUGIN = Plugin(
    name="cursus",
    title="Cursus (cursus-protocol.txt)",
    package="conformance.protocols.cursus",
    suite_package="conformance.suite.cursus",
    revisions=("doc", "real"),
    default_revision="doc",
    default_port=DEFAULT_PORT,
    framing=codec.FRAMING,
    reply_framing="CUR-FRAME-1",
    probe_request=b"LIST",
    annotate=annotate,
    frontend=_frontend,
    vectors=_vectors,
    fuzzing=_fuzzing,
    quirks=QUIRKS,
    options=OPTIONS,
    messaging=_messaging,
    validation=_validation,
)
