"""The mini-Kafka plug-in: everything the generic tool needs of the mini-Kafka protocol.

Revisions: ``doc`` (the default: mini-kafka-binary-protocol.txt as written) and ``real``
(the phase-2 server it describes where the document is silent: FACTS.md, SPEC.md's
preamble).  A frame is ``[i32 length counting its own 4 bytes][payload]`` both ways
(:data:`codec.FRAMING`); there is no session opener.

Options, for ``serve`` (limits of the reference broker; the real server has none):

* ``--max-frame-bytes`` (8 MiB): the largest request length field, its 4 bytes counted;
  a larger one closes the connection from the prefix, before anything is buffered;
* ``--max-batch`` (10000): the most messages one CONSUME returns, whatever its batch size.

The default port is 9180, the real server's (FACTS.md 7.2).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from conformance.options import Option
from conformance.plugin import Annotation, Plugin, ServeConfig
from conformance.protocols.minikafka import codec
from conformance.protocols.minikafka.quirks import QUIRKS

if TYPE_CHECKING:
    from conformance.engine import Engine
    from conformance.fuzz.case import Fuzzing
    from conformance.plugin import Messaging, VectorSchema
    from conformance.server import Frontend
    from conformance.validate.contract import Validation

DEFAULT_PORT = 9180
"""The document gives none; the real phase-2 server's ``binary.server.port`` (FACTS.md 7.2)."""
REVISIONS = ("doc", "real")
FLUSH = b"\x05"
"""A FLUSH request's payload: harmless, and answered by every mini-Kafka server."""
DEFAULT_MAX_BATCH = 10_000

OPTIONS = (
    Option(
        "--max-frame-bytes",
        f"the largest request length field, its own 4 bytes counted (default "
        f"{codec.DEFAULT_MAX_FRAME}); a larger one closes the connection",
        ("serve",),
        default=codec.DEFAULT_MAX_FRAME,
        type=int,
        minimum=64,
        metavar="N",
    ),
    Option(
        "--max-batch",
        f"the most messages one CONSUME returns, whatever its batch size (default "
        f"{DEFAULT_MAX_BATCH})",
        ("serve",),
        default=DEFAULT_MAX_BATCH,
        type=int,
        minimum=1,
        metavar="N",
    ),
)


def annotate(payload: bytes, direction: str, earlier: Sequence[bytes]) -> Annotation:
    from conformance.protocols.minikafka.annotate import annotate as read

    return read(payload, direction, earlier)


def _frontend(engine: Engine, config: ServeConfig) -> Frontend:
    from conformance.protocols.minikafka.handler import MiniKafkaConfig, MiniKafkaFrontend
    from conformance.protocols.minikafka.quirks import Quirks

    options = config.options

    def number(name: str, default: int) -> int:
        value = options.get(name)
        return default if value is None else int(value)

    mk = MiniKafkaConfig(
        revision="real" if config.revision == "real" else "doc",
        max_frame=number("max_frame_bytes", codec.DEFAULT_MAX_FRAME),
        max_batch=number("max_batch", DEFAULT_MAX_BATCH),
        quirks=Quirks.of(config.quirks),
    )
    return MiniKafkaFrontend(engine, mk)


def _vectors() -> VectorSchema:
    from conformance.protocols.minikafka.vectors import SCHEMA

    return SCHEMA


def _fuzzing(options: Mapping[str, Any], revision: str) -> Fuzzing:
    from conformance.protocols.minikafka.fuzzing import MiniKafkaFuzzing

    return MiniKafkaFuzzing(options, revision)


def _messaging(options: Mapping[str, Any], revision: str) -> Messaging:
    from conformance.protocols.minikafka.messaging import messaging

    return messaging(options, revision)


def _validation(frontend: Frontend, config: ServeConfig) -> Validation:
    from conformance.protocols.minikafka.validation import validation

    return validation(frontend, config)


PLUGIN = Plugin(
    name="minikafka",
    title="mini-Kafka binary protocol (mini-kafka-binary-protocol.txt; real: its phase-2 server)",
    package="conformance.protocols.minikafka",
    suite_package="conformance.suite.minikafka",
    revisions=REVISIONS,
    default_revision="doc",
    default_port=DEFAULT_PORT,
    framing=codec.FRAMING,
    reply_framing="MK-FRAME-1",
    probe_request=FLUSH,
    annotate=annotate,
    frontend=_frontend,
    vectors=_vectors,
    fuzzing=_fuzzing,
    quirks=QUIRKS,
    options=OPTIONS,
    messaging=_messaging,
    validation=_validation,
)
