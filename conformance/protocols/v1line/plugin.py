"""The V1 line plug-in: everything the generic tool needs of the V1 line protocol, in one object.

Revisions: ``doc`` (the default: v1-line-protocol.txt as written) and ``real`` (the real
broker's behaviour where DESIGN.md records it; SPEC.md's preamble and FACTS.md).  A frame
is one line, ``\\n``-terminated both ways, at most 64 KiB (:data:`codec.FRAMING`).  There is
no session opener: a connection's first line is a real request.

Options, for ``serve`` (what the reference broker runs with) and ``run`` (what the target
is configured with, so that the cases know what to wait for; against the embedded broker
the short ``embedded_default`` values are passed on to it, so the timing cases take
fractions of a second):

* ``--replication-factor`` (3) and ``--min-isr`` (2): followers are replicas
  1..factor-1; acks=all needs min ISR replicas in sync;
* ``--ack-timeout-ms`` (2000): how long acks=all waits before REPLICATION_TIMEOUT (also a
  ``fuzz`` option: a target that answers within 100 ms gets acks=all cases; the
  embedded broker of ``fuzz`` is started with 20 ms, so acks=all cases cost little);
* ``--replica-lag-timeout-ms`` (10000): how long a silent follower stays in the ISR;
* ``--session-timeout-ms`` (10000): how long a silent group member stays in its group;
* ``--partitions`` (3, ``serve`` only): a topic's partition count when first used.

The defaults are the real broker's (FACTS.md).  The default port is 9192 (SPEC preamble).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from conformance.options import Option
from conformance.plugin import Annotation, Plugin, ServeConfig
from conformance.protocols.v1line import codec
from conformance.protocols.v1line.quirks import QUIRKS
from conformance.protocols.v1line.replication import (
    DEFAULT_ACK_TIMEOUT_MS,
    DEFAULT_LAG_TIMEOUT_MS,
    DEFAULT_MIN_ISR,
    DEFAULT_REPLICATION_FACTOR,
)

if TYPE_CHECKING:
    from conformance.engine import Engine
    from conformance.fuzz.case import Fuzzing
    from conformance.plugin import Messaging, VectorSchema
    from conformance.server import Frontend
    from conformance.validate.contract import Validation

DEFAULT_PORT = 9192
"""The document gives none; the real broker's 9092 is Kafka's, so 100 above it (SPEC.md)."""
REVISIONS = ("doc", "real")
PING = codec.encode_request("1", "PING")[:-1]
"""``V1|1|PING|``: every V1 broker of this project answers it (V1L-PING-1)."""

BOTH = ("run", "serve")
OPTIONS = (
    Option(
        "--replication-factor",
        f"replicas of every partition, the leader 0 and followers 1..N-1 "
        f"(default {DEFAULT_REPLICATION_FACTOR})",
        BOTH,
        default=DEFAULT_REPLICATION_FACTOR,
        type=int,
        minimum=1,
        metavar="N",
    ),
    Option(
        "--min-isr",
        f"in-sync replicas acks=all needs (default {DEFAULT_MIN_ISR})",
        BOTH,
        default=DEFAULT_MIN_ISR,
        type=int,
        minimum=1,
        metavar="N",
    ),
    Option(
        "--ack-timeout-ms",
        f"how long acks=all waits before REPLICATION_TIMEOUT (default {DEFAULT_ACK_TIMEOUT_MS}; "
        "the embedded broker of run uses 400)",
        BOTH,
        default=DEFAULT_ACK_TIMEOUT_MS,
        embedded_default=400,
        type=int,
        minimum=1,
        metavar="MS",
    ),
    Option(
        "--ack-timeout-ms",
        "the target's acks=all timeout: at most 100 ms, and the cases write acks=all "
        "(their replies come by the deadline); the embedded broker of fuzz uses 20 "
        f"(default {DEFAULT_ACK_TIMEOUT_MS}: no case writes acks=all)",
        ("fuzz",),
        default=DEFAULT_ACK_TIMEOUT_MS,
        embedded_default=20,
        type=int,
        minimum=1,
        metavar="MS",
    ),
    Option(
        "--replica-lag-timeout-ms",
        f"how long a silent follower stays in the ISR (default {DEFAULT_LAG_TIMEOUT_MS}; "
        "the embedded broker of run uses 500)",
        BOTH,
        default=DEFAULT_LAG_TIMEOUT_MS,
        embedded_default=500,
        type=int,
        minimum=1,
        metavar="MS",
    ),
    Option(
        "--session-timeout-ms",
        "how long a silent group member stays in its group (default 10000; the embedded "
        "broker of run uses 600)",
        BOTH,
        default=10_000,
        embedded_default=600,
        type=int,
        minimum=1,
        metavar="MS",
    ),
    Option(
        "--partitions",
        "partitions of a topic created by its first use (default 3)",
        ("serve",),
        default=3,
        type=int,
        minimum=1,
        metavar="N",
    ),
)


def annotate(payload: bytes, direction: str, earlier: Sequence[bytes]) -> Annotation:
    from conformance.protocols.v1line.annotate import annotate as read

    return read(payload, direction, earlier)


def _frontend(engine: Engine, config: ServeConfig) -> Frontend:
    from conformance.protocols.v1line.handler import V1Config, V1Frontend
    from conformance.protocols.v1line.quirks import Quirks

    options = config.options

    def number(name: str, default: int) -> int:
        value = options.get(name)
        return default if value is None else int(value)

    v1 = V1Config(
        revision="real" if config.revision == "real" else "doc",
        replication_factor=number("replication_factor", DEFAULT_REPLICATION_FACTOR),
        min_isr=number("min_isr", DEFAULT_MIN_ISR),
        ack_timeout_ms=number("ack_timeout_ms", DEFAULT_ACK_TIMEOUT_MS),
        replica_lag_timeout_ms=number("replica_lag_timeout_ms", DEFAULT_LAG_TIMEOUT_MS),
        session_timeout_ms=number("session_timeout_ms", 10_000),
        partitions=number("partitions", 3),
        quirks=Quirks.of(config.quirks),
    )
    return V1Frontend(engine, v1)


def _vectors() -> VectorSchema:
    from conformance.protocols.v1line.vectors import SCHEMA

    return SCHEMA


def _fuzzing(options: Mapping[str, Any], revision: str) -> Fuzzing:
    from conformance.protocols.v1line.fuzzing import V1Fuzzing

    return V1Fuzzing(options, revision)


def _messaging(options: Mapping[str, Any], revision: str) -> Messaging:
    from conformance.protocols.v1line.messaging import messaging

    return messaging(options, revision)


def _validation(frontend: Frontend, config: ServeConfig) -> Validation:
    from conformance.protocols.v1line.validation import validation

    return validation(frontend, config)


PLUGIN = Plugin(
    name="v1line",
    title="V1 line protocol (v1-line-protocol.txt; real: the Go broker it describes)",
    package="conformance.protocols.v1line",
    suite_package="conformance.suite.v1line",
    revisions=REVISIONS,
    default_revision="doc",
    default_port=DEFAULT_PORT,
    framing=codec.FRAMING,
    reply_framing="V1L-ENV-1",
    probe_request=PING,
    annotate=annotate,
    frontend=_frontend,
    vectors=_vectors,
    fuzzing=_fuzzing,
    quirks=QUIRKS,
    options=OPTIONS,
    messaging=_messaging,
    validation=_validation,
)
