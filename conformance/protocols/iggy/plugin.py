"""The Iggy plug-in: everything the generic tool needs of Apache Iggy's binary TCP protocol.

Revisions: ``classic`` (the default; what the ``apache-iggy==0.8.0`` client and the 0.8
server speak, FACTS.md) and ``doc`` (iggy-binary-protocol.txt's own layouts where they
differ; SPEC.md's preamble says how its contradictions are read).  A frame's payload, as
the generic code sees it, is ``u32 code + payload`` going in and ``u32 status + payload``
coming back (the length is the deframer's).

Options: ``--username`` and ``--password`` (run, serve, fuzz; default ``iggy``/``iggy``,
the real server's default root credentials) are what a classic session logs in with and
what the reference broker accepts; ``--login`` (fuzz) says whether fuzz cases run after
login, before it (the gate itself is fuzzed), or both (each case draws which).  In
``classic`` every connection opens with LOGIN_USER (:func:`opening`); ``doc`` has no login.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from conformance.options import Option
from conformance.plugin import Annotation, ErrorCodes, Opening, Plugin, ServeConfig, SessionRefused
from conformance.protocols.iggy import codec
from conformance.protocols.iggy.errors import INVALID_COMMAND
from conformance.protocols.iggy.errors import NAMES as STATUS_NAMES
from conformance.protocols.iggy.messages import CODES
from conformance.protocols.iggy.quirks import QUIRKS

if TYPE_CHECKING:
    from conformance.engine import Engine
    from conformance.fuzz.case import Fuzzing
    from conformance.plugin import Messaging, VectorSchema
    from conformance.server import Frontend
    from conformance.validate.contract import Validation

DEFAULT_PORT = 8090
"""The real server's default TCP port (core/server/config.toml, ``[tcp] address``)."""
REVISIONS = ("classic", "doc")
LOGIN_MODES = ("after", "before", "both")
SDK_VERSION = "0.10.0"
"""The version string the 0.8 binding's LOGIN_USER carries (its Rust SDK's; FACTS.md §3)."""

OPTIONS = (
    Option(
        "--username",
        "the user a classic session logs in as, and the one the reference broker knows "
        "(default iggy)",
        ("run", "serve", "fuzz"),
        default="iggy",
        metavar="NAME",
        session=True,
    ),
    Option(
        "--password",
        "that user's password (default iggy)",
        ("run", "serve", "fuzz"),
        default="iggy",
        metavar="SECRET",
        secret=True,
        session=True,
    ),
    Option(
        "--login",
        "fuzz cases after login (each connection logs in first), before it (the login gate "
        "itself is fuzzed), or both: each case draws whether its connection logs in, and a "
        "finding records it (default both; doc has no login)",
        ("fuzz",),
        default="both",
        choices=LOGIN_MODES,
    ),
)

PING = codec.U32.pack(CODES["ping"])
"""PING's ``code + payload``: every Iggy server answers it, logged in or not."""


def login_request(username: str, password: str) -> bytes:
    """A framed LOGIN_USER as the 0.8 client sends it (its SDK version, no context)."""
    body = {"username": username, "password": password, "version": SDK_VERSION, "context": ""}
    return codec.frame_request(CODES["login_user"], codec.encode_request("login_user", body))


def _login(username: str, password: str) -> Opening:
    reply = yield login_request(username, password)
    status, payload = codec.split_reply(reply)
    if status == INVALID_COMMAND:
        raise SessionRefused(
            f"LOGIN_USER was answered status {status} (INVALID_COMMAND): the target does not "
            "know it; if it speaks the document's revision, which has no login, use --revision doc"
        )
    if status != 0:
        name = STATUS_NAMES.get(status, "unknown status")
        raise SessionRefused(f"LOGIN_USER as {username!r} was answered status {status} ({name})")
    return codec.decode_reply("login_user", payload)


def opening(values: Mapping[str, Any], revision: str) -> Opening | None:
    """Classic: log in with ``--username``/``--password``; doc: nothing (no login).  With a
    fuzz campaign's ``--login before`` or ``both`` this opens nothing: the fuzzing part asks
    for the login itself where it wants one (its own connections, and under ``both`` the
    cases that drew a session; :mod:`.fuzzing`), so the password never enters a case's bytes."""
    if revision != "classic" or values.get("login", "after") != "after":
        return None
    return _login(str(values.get("username") or "iggy"), str(values.get("password") or ""))


def annotate(payload: bytes, direction: str, earlier: Sequence[bytes]) -> Annotation:
    from conformance.protocols.iggy.annotate import annotate as read

    return read(payload, direction, earlier)


def _frontend(engine: Engine, config: ServeConfig) -> Frontend:
    from conformance.protocols.iggy.handler import IggyConfig, IggyFrontend
    from conformance.protocols.iggy.quirks import Quirks

    options = config.options
    iggy = IggyConfig(
        revision=config.revision,
        username=str(options.get("username") or "iggy"),
        password=str(options.get("password") or ""),
        quirks=Quirks.of(config.quirks),
    )
    return IggyFrontend(engine, iggy)


def _vectors() -> VectorSchema:
    from conformance.protocols.iggy.vectors import SCHEMA

    return SCHEMA


def _fuzzing(options: Mapping[str, Any], revision: str) -> Fuzzing:
    from conformance.protocols.iggy.fuzzing import IggyFuzzing

    return IggyFuzzing(options, revision)


def _messaging(options: Mapping[str, Any], revision: str) -> Messaging:
    from conformance.protocols.iggy.messaging import messaging

    return messaging(options, revision)


def _validation(frontend: Frontend, config: ServeConfig) -> Validation:
    from conformance.protocols.iggy.validation import validation

    return validation(frontend, config)


PLUGIN = Plugin(
    name="iggy",
    title="Apache Iggy, binary TCP (iggy-binary-protocol.txt; classic: apache-iggy 0.8)",
    package="conformance.protocols.iggy",
    suite_package="conformance.suite.iggy",
    revisions=REVISIONS,
    default_revision="classic",
    default_port=DEFAULT_PORT,
    framing=codec.IggyFraming(),
    reply_framing="IGG-FRAME-2",
    probe_request=PING,
    annotate=annotate,
    frontend=_frontend,
    vectors=_vectors,
    fuzzing=_fuzzing,
    error_codes=ErrorCodes("status", STATUS_NAMES),
    quirks=QUIRKS,
    options=OPTIONS,
    opening=opening,
    messaging=_messaging,
    validation=_validation,
)
