"""Steps of the SASL cases (test_sasl.py, SPEC-sasl.md): the run's credentials, the
handshake, one SaslAuthenticate, bare tokens, and "the connection is served".

Each step blames the requirement the case relies on.  The credentials are the ``run``
options ``--sasl-username``/``--sasl-password``/``--sasl-mechanism``; a case that needs
them is UNSUPPORTED without them.
"""

from __future__ import annotations

from typing import NamedTuple

from conformance.client import PeerClosed, ReplyTimeout
from conformance.evidence import Node
from conformance.protocols.kafka import codec
from conformance.protocols.kafka.apis import BY_NAME
from conformance.suite.case import Unsupported, Violation, require
from conformance.suite.kafka.verify import KafkaClient, expect_code, name_of, serves, usable
from conformance.suite.target import CaseContext

NO_SUCH_MECHANISM = "CONFORMANCE-NO-SUCH-MECHANISM"


class Credentials(NamedTuple):
    mechanism: str
    user: str
    password: str


def credentials(ctx: CaseContext) -> Credentials:
    """The run's SASL credentials; UNSUPPORTED without them."""
    user = ctx.options.get("sasl_username")
    if not user:
        raise Unsupported(
            "no SASL credentials were given (--sasl-username, --sasl-password, "
            "--sasl-mechanism): this case needs a user the target knows"
        )
    mechanism = str(ctx.options.get("sasl_mechanism") or "PLAIN")
    return Credentials(mechanism, str(user), str(ctx.options.get("sasl_password") or ""))


def fresh(ctx: CaseContext) -> KafkaClient:
    """A connection that has not authenticated (the session opener is not run)."""
    return KafkaClient(ctx, open_session=False)


def handshake(k: KafkaClient, mechanism: str, requirement: str, version: int = 1) -> Node:
    what = f"SaslHandshake v{version} {mechanism}"
    return k.call("SaslHandshake", version, {"mechanism": mechanism}, requirement, what)


def enabled(k: KafkaClient, mechanism: str, requirement: str) -> list[str]:
    """SaslHandshake v1 naming ``mechanism``, which must be answered error 0 (the
    connection then expects SaslAuthenticate); the mechanisms the target lists."""
    answer = handshake(k, mechanism, requirement)
    expect_code(answer, "error_code", "NONE", requirement, f"SaslHandshake v1 {mechanism}")
    return [str(m) for m in answer["mechanisms"]]


def authenticate_version(ctx: CaseContext) -> int:
    return usable(ctx, "SaslAuthenticate")


def authenticate(k: KafkaClient, version: int, token: bytes, requirement: str, what: str) -> Node:
    return k.call("SaslAuthenticate", version, {"auth_bytes": token}, requirement, what)


def accepted(answer: Node, requirement: str, what: str) -> bytes:
    """The token of a SaslAuthenticate answered error 0 (its message shown if not)."""
    if answer["error_code"] != 0:
        message = answer.get("error_message")
        raise Violation(
            requirement,
            f"{what}: {name_of(answer['error_code'])} ({message!r}), expected NONE (0)",
            answer.at("error_code"),
        )
    return bytes(answer["auth_bytes"])


def scram_mechanism(ctx: CaseContext, creds: Credentials, listed: list[str]) -> str:
    """The SCRAM mechanism to try: the run's, else the first the target enables."""
    if creds.mechanism.startswith("SCRAM-"):
        return creds.mechanism
    for m in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        if m in listed:
            return m
    raise Unsupported(f"the target enables no SCRAM mechanism (it lists {listed})")


def scram_to_try(ctx: CaseContext, creds: Credentials) -> str:
    """:func:`scram_mechanism` of the mechanisms the target lists to a SaslHandshake
    naming PLAIN, on a connection of its own."""
    with fresh(ctx) as k:
        listed = [str(m) for m in handshake(k, "PLAIN", "KAF-SASL-1")["mechanisms"]]
    return scram_mechanism(ctx, creds, listed)


def plain_enabled(k: KafkaClient) -> None:
    """SaslHandshake v1 naming PLAIN; UNSUPPORTED when the target does not enable it."""
    answer = handshake(k, "PLAIN", "KAF-SASL-1")
    if answer["error_code"] != 0:
        raise Unsupported(f"the target does not enable PLAIN (it lists {answer['mechanisms']})")


def not_this_user(creds: Credentials, mechanism: str, answer: Node) -> None:
    """UNSUPPORTED when ``answer`` refuses the run's user with a mechanism other than the
    run's: Kafka keeps a user's PLAIN and SCRAM credentials apart, so the user may have
    none for it (a refusal with the run's own mechanism is the case's to judge)."""
    if mechanism != creds.mechanism and answer["error_code"] != 0:
        raise Unsupported(
            f"the target refused {creds.user!r} with {mechanism} "
            f"({name_of(answer['error_code'])}); "
            f"the run authenticates with {creds.mechanism}, and the user may have no "
            f"{mechanism} credential",
            None,
            answer.at("error_code"),
        )


def served(ctx: CaseContext, k: KafkaClient, requirement: str, after: str) -> None:
    """A Metadata request (no topics) is answered on the connection."""
    v = usable(ctx, "Metadata", lowest=1)
    k.call("Metadata", v, {"topics": []}, requirement, f"Metadata v{v} {after}")


def requires_sasl(ctx: CaseContext) -> bool:
    """Whether the target requires SASL: a Metadata request as a fresh connection's first
    is not answered (the connection is closed, or nothing comes)."""
    v = usable(ctx, "Metadata", lowest=1)
    with fresh(ctx) as k:
        k.send("Metadata", v, {"topics": []})
        try:
            k.conn.recv_frame()
        except (PeerClosed, ReplyTimeout):
            return True
    return False


def refused_then_closed(
    k: KafkaClient, api: str, version: int, requirement: str, what: str
) -> None:
    """The connection closes; an answer before the close must carry ILLEGAL_SASL_STATE."""
    try:
        payload = k.conn.recv_frame()
    except PeerClosed:
        return
    except ReplyTimeout as exc:
        k.ctx.silence(requirement, f"{what}: expected the connection closed", exc.evidence)
    try:
        _, body = codec.decode_response(
            payload, BY_NAME[api].key, version, header_version=k.header_version
        )
    except codec.KafkaError:
        raise Violation(
            requirement, f"{what}: answered instead of closing the connection", k.exchange()
        ) from None
    codes = _codes(body)
    require(
        34 in codes,
        requirement,
        f"{what}: answered with error codes {sorted(codes)}, expected the connection closed "
        "(at most after ILLEGAL_SASL_STATE (34))",
        k.exchange(),
    )
    k.expect_close(requirement, f"{what}, after its ILLEGAL_SASL_STATE answer")


def _codes(value: object) -> set[int]:
    found: set[int] = set()
    if isinstance(value, dict):
        for key, inner in value.items():
            if key == "error_code" and isinstance(inner, int):
                found.add(inner)
            else:
                found |= _codes(inner)
    elif isinstance(value, list):
        for inner in value:
            found |= _codes(inner)
    return found


def need_sasl(ctx: CaseContext, api: str, version: int) -> None:
    if not serves(ctx, api, version):
        raise Unsupported(f"the target does not advertise {api} v{version}")
