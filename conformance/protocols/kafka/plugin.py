"""The Kafka plug-in: everything the generic tool needs of Kafka, in one object.

Revisions: ``doc`` (pgcdc's server as kafka-wire-protocol-pgcdc.txt describes it: every
response with header v0, an unknown API key answered with a bare int16 35, magic-2
batches at every Fetch version) and ``apache`` (Apache Kafka's protocol).  The broker
serves the same APIs in both (ApiVersions lists them).  Serve options:
``--join-delay-ms`` (how long a rebalance waits for more members, default 300; 50 in the
embedded broker of ``run``, where the group cases would otherwise spend most of the run
waiting on it: bench/run_all.py) and
``--default-partitions`` (for auto-created topics and CreateTopics with -1).

SASL (SPEC-sasl.md).  ``serve --sasl-username NAME --sasl-password SECRET`` (and
``--sasl-users NAME:SECRET,...`` for more) makes the broker require SASL of every
connection, with the mechanisms of ``--sasl-mechanisms`` (default PLAIN, SCRAM-SHA-256,
SCRAM-SHA-512); without users it requires none, as before.  ``run`` and ``fuzz`` with
``--sasl-username``/``--sasl-password`` (and ``--sasl-mechanism``, default PLAIN) open
every connection with ApiVersions v0, SaslHandshake v1 and SaslAuthenticate
(:func:`opening`), and give the same user to the embedded broker, which then requires
SASL.  Without credentials Kafka has no session opener: a connection's first request is
a real one (clients begin with ApiVersions of their own accord).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from conformance.options import Option
from conformance.plugin import Annotation, ErrorCodes, Opening, Plugin, ServeConfig
from conformance.protocols.kafka import codec
from conformance.protocols.kafka.context import REVISIONS
from conformance.protocols.kafka.errors import CODES
from conformance.protocols.kafka.quirks import QUIRKS
from conformance.protocols.kafka.sasl_opening import (
    mechanisms_list,
    sasl_opening,
    users_list,
)
from conformance.protocols.kafka.sasl_session import MECHANISMS

if TYPE_CHECKING:
    from conformance.engine import Engine
    from conformance.fuzz.case import Fuzzing
    from conformance.plugin import Messaging, VectorSchema
    from conformance.server import Frontend
    from conformance.validate.contract import Validation

DEFAULT_PORT = 9092

OPTIONS = (
    Option(
        "--join-delay-ms",
        "how long a rebalance waits for more members to join (default 300); for run, the "
        "embedded broker's (50 there, so the group cases wait less; no case depends on it, "
        "and it is not used with --target)",
        ("run", "serve"),
        default=300,
        embedded_default=50,
        type=int,
        minimum=0,
        metavar="MS",
    ),
    Option(
        "--consumer-session-timeout-ms",
        "how long a member of a KIP-848 consumer group may go without a heartbeat (default "
        "45000, Kafka's group.consumer.session.timeout.ms); for run, the embedded broker's "
        "(3000 there, so the session-expiry case waits less; not used with --target)",
        ("run", "serve"),
        default=45_000,
        embedded_default=3_000,
        type=int,
        minimum=1,
        metavar="MS",
    ),
    Option(
        "--default-partitions",
        "partitions of an auto-created topic, and of CreateTopics asking for -1 (default 1)",
        ("serve",),
        default=1,
        type=int,
        minimum=1,
        metavar="N",
    ),
    Option(
        "--sasl-username",
        "authenticate every connection as this user (SASL; run, fuzz), and the user the "
        "broker knows (serve; any user makes it require SASL)",
        ("run", "serve", "fuzz"),
        metavar="NAME",
        session=True,
    ),
    Option(
        "--sasl-password",
        "that user's password",
        ("run", "serve", "fuzz"),
        metavar="SECRET",
        secret=True,
        session=True,
    ),
    Option(
        "--sasl-mechanism",
        "the SASL mechanism a connection authenticates with (default PLAIN)",
        ("run", "fuzz"),
        default="PLAIN",
        choices=MECHANISMS,
        session=True,
    ),
    Option(
        "--sasl-users",
        "more users the broker knows, comma-separated (SASL required)",
        ("serve",),
        type=users_list,
        metavar="NAME:SECRET,...",
        secret=True,
    ),
    Option(
        "--sasl-mechanisms",
        f"the SASL mechanisms the broker enables, comma-separated (default {','.join(MECHANISMS)})",
        ("serve",),
        type=mechanisms_list,
        metavar="LIST",
    ),
)

PROBE = codec.encode_request(18, 0, {}, correlation_id=0x7EC0, client_id="conformance-probe")
"""ApiVersions v0: every Kafka broker answers it, whatever versions it serves."""


def annotate(payload: bytes, direction: str, earlier: Sequence[bytes]) -> Annotation:
    """A request read from its header and API; a response as the answer to the request
    among ``earlier`` with its correlation id (``Fetch v12 response #7``)."""
    if direction == "reply":
        return Annotation(
            codec.describe_reply(payload, earlier), codec.annotate_reply(payload, earlier)
        )
    return Annotation(codec.describe("request", payload), codec.annotate(payload, "request"))


def _given(options: Mapping[str, Any], name: str, default: int) -> Any:
    value = options.get(name)
    return default if value is None else value  # 0 is a value (--join-delay-ms 0)


def _frontend(engine: Engine, config: ServeConfig) -> Frontend:
    from conformance.protocols.kafka.broker import KafkaConfig, KafkaFrontend

    options = config.options
    users = list(options.get("sasl_users") or ())
    if options.get("sasl_username"):
        users.insert(0, (str(options["sasl_username"]), str(options.get("sasl_password") or "")))
    kafka = KafkaConfig(
        revision=config.revision,
        quirks=config.quirks,
        join_delay_s=int(_given(options, "join_delay_ms", 300)) / 1000,
        default_partitions=int(_given(options, "default_partitions", 1)),
        consumer_session_timeout_ms=int(_given(options, "consumer_session_timeout_ms", 45_000)),
        sasl_users=tuple(users),
        sasl_mechanisms=tuple(options.get("sasl_mechanisms") or MECHANISMS),
    )
    return KafkaFrontend(engine, kafka)


def opening(values: Mapping[str, Any], revision: str) -> Opening | None:
    """With ``--sasl-username``: authenticate (SASL) before the first real request;
    without: nothing (a connection's first request is a real one)."""
    user = values.get("sasl_username")
    if not user:
        return None
    mechanism = str(values.get("sasl_mechanism") or "PLAIN")
    return sasl_opening(mechanism, str(user), str(values.get("sasl_password") or ""), revision)


def _vectors() -> VectorSchema:
    from conformance.protocols.kafka.vectors import SCHEMA

    schema: VectorSchema = SCHEMA
    return schema


def _fuzzing(options: Mapping[str, Any], revision: str) -> Fuzzing:
    from conformance.protocols.kafka.fuzzing import KafkaFuzzing

    return KafkaFuzzing()


def _messaging(options: Mapping[str, Any], revision: str) -> Messaging:
    from conformance.protocols.kafka.messaging import messaging

    return messaging(options, revision)


def _validation(frontend: Frontend, config: ServeConfig) -> Validation:
    from conformance.protocols.kafka.broker import KafkaFrontend
    from conformance.protocols.kafka.validation import KafkaValidation

    assert isinstance(frontend, KafkaFrontend)
    return KafkaValidation(frontend, config)


PLUGIN = Plugin(
    name="kafka",
    title="Kafka (kafka-wire-protocol-pgcdc.txt, Apache Kafka protocol)",
    package="conformance.protocols.kafka",
    suite_package="conformance.suite.kafka",
    revisions=REVISIONS,
    default_revision="doc",
    default_port=DEFAULT_PORT,
    framing=codec.FRAMING,
    reply_framing="KAF-FRAME-1",
    probe_request=PROBE,
    annotate=annotate,
    error_codes=ErrorCodes("error_code", {c: n for n, c in CODES.items()}),
    frontend=_frontend,
    vectors=_vectors,
    fuzzing=_fuzzing,
    quirks=QUIRKS,
    options=OPTIONS,
    opening=opening,
    messaging=_messaging,
    validation=_validation,
)
