"""Kafka SASL authentication (SPEC-sasl.md, area "sasl").

Every case but the last needs the run's credentials (``--sasl-username``,
``--sasl-password``, ``--sasl-mechanism``) and is UNSUPPORTED without them; each opens
connections that have not authenticated (the session opener is not run) and makes the
exchange itself.  The last runs without credentials against a target that requires no
SASL, and after authentication with them.
"""

from __future__ import annotations

from conformance.evidence import Node
from conformance.protocols.kafka import codec, scram
from conformance.protocols.kafka.sasl_opening import plain_token
from conformance.suite.case import Unsupported, Violation, case, require
from conformance.suite.kafka.sasl_steps import (
    NO_SUCH_MECHANISM,
    accepted,
    authenticate,
    authenticate_version,
    credentials,
    enabled,
    fresh,
    handshake,
    need_sasl,
    not_this_user,
    plain_enabled,
    refused_then_closed,
    requires_sasl,
    scram_to_try,
    served,
)
from conformance.suite.kafka.verify import KafkaClient, expect_code, usable
from conformance.suite.target import CaseContext

WRONG = "conformance-wrong-password"


@case("kafka/sasl/1", "KAF-SASL-1")
def test_api_versions_then_an_enabled_mechanism(target: CaseContext) -> None:
    """ApiVersions first, then SaslHandshake with the run's mechanism: error 0, listed.

    KAF-SASL-1: "on a broker that requires SASL, an ApiVersions request sent first is answered
    as usual, and a SaslHandshake naming a mechanism the broker enables is answered error 0 with
    the list of enabled mechanisms, the one named among them."
    """
    creds = credentials(target)
    with fresh(target) as k:
        versions = k.call("ApiVersions", 0, {}, "KAF-SASL-1", "ApiVersions v0 first")
        expect_code(versions, "error_code", "NONE", "KAF-SASL-1", "ApiVersions v0 first")
        answer = handshake(k, creds.mechanism, "KAF-SASL-1")
        expect_code(answer, "error_code", "NONE", "KAF-SASL-1", f"SaslHandshake {creds.mechanism}")
        listed = [str(m) for m in answer["mechanisms"]]
    require(
        creds.mechanism in listed,
        "KAF-SASL-1",
        f"SaslHandshake {creds.mechanism} answered 0 but lists {listed}, without it",
        answer.at("mechanisms"),
    )


@case("kafka/sasl/2", "KAF-SASL-2")
def test_an_unknown_mechanism_is_refused_with_the_enabled_ones(target: CaseContext) -> None:
    """A mechanism the broker does not enable: UNSUPPORTED_SASL_MECHANISM, the list, a close.

    KAF-SASL-2: "a SaslHandshake naming a mechanism the broker does not enable is answered
    UNSUPPORTED_SASL_MECHANISM (33) with the list of the mechanisms it enables (not empty), and
    the connection is then closed."
    """
    credentials(target)
    what = f"SaslHandshake v1 {NO_SUCH_MECHANISM}"
    with fresh(target) as k:
        answer = handshake(k, NO_SUCH_MECHANISM, "KAF-SASL-2")
        expect_code(answer, "error_code", "UNSUPPORTED_SASL_MECHANISM", "KAF-SASL-2", what)
        require(
            len(answer["mechanisms"]) > 0,
            "KAF-SASL-2",
            f"{what}: refused with an empty list of mechanisms, expected the enabled ones",
            answer.at("mechanisms"),
        )
        k.expect_close("KAF-SASL-2", f"{what}, after its refusal")


@case("kafka/sasl/3", "KAF-SASL-3")
def test_a_request_before_the_handshake_is_not_served(target: CaseContext) -> None:
    """Metadata as a connection's first request, before any SASL: the connection closes.

    KAF-SASL-3: "on a broker that requires SASL, a request other than ApiVersions,
    SaslHandshake and SaslAuthenticate sent before authentication is not served: the connection
    is closed, at most after an answer carrying ILLEGAL_SASL_STATE (34)."
    """
    credentials(target)
    v = usable(target, "Metadata", lowest=1)
    with fresh(target) as k:
        k.send("Metadata", v, {"topics": []})
        refused_then_closed(k, "Metadata", v, "KAF-SASL-3", f"Metadata v{v} before SASL")


@case("kafka/sasl/4", "KAF-SASL-3")
def test_a_request_after_the_handshake_is_not_served(target: CaseContext) -> None:
    """Metadata after SaslHandshake v1, before SaslAuthenticate: the connection closes.

    KAF-SASL-3: "... a request other than ApiVersions, SaslHandshake and SaslAuthenticate sent
    before authentication is not served: the connection is closed, at most after an answer
    carrying ILLEGAL_SASL_STATE (34)."
    """
    creds = credentials(target)
    v = usable(target, "Metadata", lowest=1)
    with fresh(target) as k:
        enabled(k, creds.mechanism, "KAF-SASL-1")
        k.send("Metadata", v, {"topics": []})
        what = f"Metadata v{v} after SaslHandshake, before SaslAuthenticate"
        refused_then_closed(k, "Metadata", v, "KAF-SASL-3", what)


@case("kafka/sasl/5", "KAF-SASL-4")
def test_plain_with_the_right_password_authenticates(target: CaseContext) -> None:
    """PLAIN with the run's user and password: error 0, then Metadata is served.

    KAF-SASL-4: "with PLAIN, a SaslAuthenticate whose token is NUL user NUL password with a
    user and password the broker knows is answered error 0, and the connection is then served as
    any other."
    """
    creds = credentials(target)
    with fresh(target) as k:
        plain_enabled(k)
        v = authenticate_version(target)
        what = f"SaslAuthenticate v{v} PLAIN as {creds.user!r}"
        reply = authenticate(k, v, plain_token(creds.user, creds.password), "KAF-SASL-4", what)
        not_this_user(creds, "PLAIN", reply)
        accepted(reply, "KAF-SASL-4", what)
        served(target, k, "KAF-SASL-4", "after PLAIN authentication")


def _refused(k: KafkaClient, answer: Node, what: str) -> None:
    """SASL_AUTHENTICATION_FAILED with a message, then a close (KAF-SASL-5)."""
    expect_code(answer, "error_code", "SASL_AUTHENTICATION_FAILED", "KAF-SASL-5", what)
    require(
        bool(answer.get("error_message")),
        "KAF-SASL-5",
        f"{what}: refused without an error message",
        answer.at("error_message"),
    )
    k.expect_close("KAF-SASL-5", f"{what}, after its refusal")


@case("kafka/sasl/6", "KAF-SASL-5")
def test_plain_with_a_wrong_password_is_refused(target: CaseContext) -> None:
    """PLAIN with a wrong password: SASL_AUTHENTICATION_FAILED with a message, then a close.

    KAF-SASL-5: "a SaslAuthenticate with a wrong password (PLAIN, or a SCRAM proof made with a
    wrong password) is answered SASL_AUTHENTICATION_FAILED (58) with an error message, and the
    connection is then closed"
    """
    creds = credentials(target)
    with fresh(target) as k:
        plain_enabled(k)
        v = authenticate_version(target)
        what = f"SaslAuthenticate v{v} PLAIN as {creds.user!r} with a wrong password"
        reply = authenticate(k, v, plain_token(creds.user, WRONG), "KAF-SASL-5", what)
        _refused(k, reply, what)


@case("kafka/sasl/7", "KAF-SASL-5")
def test_scram_with_a_wrong_password_is_refused(target: CaseContext) -> None:
    """SCRAM with a proof made from a wrong password: SASL_AUTHENTICATION_FAILED, then a close.

    KAF-SASL-5: "a SaslAuthenticate with a wrong password (PLAIN, or a SCRAM proof made with a
    wrong password) is answered SASL_AUTHENTICATION_FAILED (58) with an error message, and the
    connection is then closed; with SCRAM the failure may come at the client-first message (a
    broker that does not know the user) or at the client-final one."
    """
    creds = credentials(target)
    mechanism = scram_to_try(target, creds)
    client = scram.ScramClient(mechanism, creds.user, WRONG)
    with fresh(target) as k:
        enabled(k, mechanism, "KAF-SASL-1")
        v = authenticate_version(target)
        first = authenticate(k, v, client.first(), "KAF-SASL-5", f"{mechanism} client-first")
        if first["error_code"] != 0:
            _refused(k, first, f"SaslAuthenticate v{v} {mechanism} client-first")
            return
        try:
            final = client.final(bytes(first["auth_bytes"]))
        except scram.ScramError as exc:
            where = first.at("auth_bytes")
            raise Violation("KAF-SASL-6", f"{mechanism} server-first: {exc}", where) from None
        what = f"SaslAuthenticate v{v} {mechanism} client-final with a wrong password's proof"
        _refused(k, authenticate(k, v, final, "KAF-SASL-5", what), what)


@case("kafka/sasl/8", "KAF-SASL-6", "KAF-SASL-7")
def test_scram_with_the_right_password_authenticates(target: CaseContext) -> None:
    """SCRAM with the run's user and password: a sound server-first, a verifiable server-final.

    KAF-SASL-6: "with SCRAM-SHA-256 or SCRAM-SHA-512, the server-first message answered to a
    client-first message is r=<nonce>,s=<salt>,i=<iterations>, where the nonce begins with the
    client's nonce and is longer, the salt is base64 and the iteration count is at least 4096."

    KAF-SASL-7: "a client-final message with the proof of the right password is answered error 0
    with the server-final message v=<ServerSignature>, a signature the client verifies with its
    password, and the connection is then served as any other."
    """
    creds = credentials(target)
    mechanism = scram_to_try(target, creds)
    client = scram.ScramClient(mechanism, creds.user, creds.password)
    with fresh(target) as k:
        enabled(k, mechanism, "KAF-SASL-1")
        v = authenticate_version(target)
        what = f"SaslAuthenticate v{v} {mechanism} client-first as {creds.user!r}"
        first = authenticate(k, v, client.first(), "KAF-SASL-6", what)
        not_this_user(creds, mechanism, first)
        server_first = accepted(first, "KAF-SASL-6", what)
        try:
            final = client.final(server_first)
        except scram.ScramError as exc:
            raise Violation("KAF-SASL-6", f"{what}: {exc}", first.at("auth_bytes")) from None
        what = f"SaslAuthenticate v{v} {mechanism} client-final"
        last = authenticate(k, v, final, "KAF-SASL-7", what)
        not_this_user(creds, mechanism, last)
        try:
            client.verify(accepted(last, "KAF-SASL-7", what))
        except scram.ScramError as exc:
            raise Violation("KAF-SASL-7", f"{what}: {exc}", last.at("auth_bytes")) from None
        served(target, k, "KAF-SASL-7", f"after {mechanism} authentication")


@case("kafka/sasl/9", "KAF-SASL-8")
def test_the_session_lifetime_is_not_negative(target: CaseContext) -> None:
    """The SaslAuthenticate answer that completes authentication: session_lifetime_ms >= 0.

    KAF-SASL-8: "the SaslAuthenticate answer (v1 and later) that completes authentication
    carries a session_lifetime_ms that is not negative"
    """
    credentials(target)
    with KafkaClient(target) as k:  # the session opener authenticated, at v1+ if served
        last = k.conn.session
    if not isinstance(last, dict) or "session_lifetime_ms" not in last:
        raise Unsupported("the target authenticated at SaslAuthenticate v0 (no session lifetime)")
    lifetime = int(last["session_lifetime_ms"])
    require(
        lifetime >= 0,
        "KAF-SASL-8",
        f"the SaslAuthenticate answer that completed authentication: session_lifetime_ms "
        f"{lifetime}, expected 0 or more",
        k.conn.exchange(),
    )


@case("kafka/sasl/10", "KAF-SASL-9")
def test_handshake_v0_exchanges_bare_tokens(target: CaseContext) -> None:
    """SaslHandshake v0, then the mechanism's tokens bare (no headers), then Metadata served.

    KAF-SASL-9: "after a SaslHandshake v0, the mechanism's tokens travel bare, each a
    size-prefixed frame without a request or response header: the broker answers each client
    token with its own (an empty one, size 0, to a PLAIN token it accepts), and once the
    exchange is complete the connection is served as any other."
    """
    creds = credentials(target)
    need_sasl(target, "SaslHandshake", 0)
    with fresh(target) as k:
        answer = handshake(k, creds.mechanism, "KAF-SASL-9", version=0)
        expect_code(
            answer, "error_code", "NONE", "KAF-SASL-9", f"SaslHandshake v0 {creds.mechanism}"
        )
        if creds.mechanism == "PLAIN":
            k.raw(codec.frame(plain_token(creds.user, creds.password)), "bare PLAIN token")
            got = k.payload("KAF-SASL-9", "the answer to a bare PLAIN token")
            require(
                got == b"",
                "KAF-SASL-9",
                f"a bare PLAIN token was answered with {len(got)} bytes, expected an empty token",
                k.exchange(),
            )
        else:
            client = scram.ScramClient(creds.mechanism, creds.user, creds.password)
            k.raw(codec.frame(client.first()), "bare SCRAM client-first")
            got = k.payload("KAF-SASL-9", "the answer to a bare SCRAM client-first")
            try:
                k.raw(codec.frame(client.final(got)), "bare SCRAM client-final")
                client.verify(k.payload("KAF-SASL-9", "the answer to a bare client-final"))
            except scram.ScramError as exc:
                where = k.exchange()
                raise Violation("KAF-SASL-9", f"bare {creds.mechanism}: {exc}", where) from None
        served(target, k, "KAF-SASL-9", "after the bare token exchange")


@case("kafka/sasl/11", "KAF-SASL-10")
def test_sasl_requests_where_none_is_needed_are_illegal(target: CaseContext) -> None:
    """Without SASL (or once authenticated): SaslHandshake and SaslAuthenticate answer 34.

    KAF-SASL-10: "on a connection that needs no authentication (a broker without SASL, or after
    authentication with a session lifetime of 0), SaslHandshake and SaslAuthenticate are
    answered ILLEGAL_SASL_STATE (34)."
    """
    with KafkaClient(target) as k:  # authenticated first when the run has credentials
        last = k.conn.session
        if isinstance(last, dict) and int(last.get("session_lifetime_ms", 0)) > 0:
            raise Unsupported("the target sets a session lifetime: a handshake re-authenticates")
        shake = handshake(k, "PLAIN", "KAF-SASL-10")
        if last is None and shake["error_code"] != 34 and requires_sasl(target):
            raise Unsupported(
                "the target requires SASL (a Metadata request on a fresh connection is not "
                "served) and the run has no credentials (--sasl-username ...)"
            )
        expect_code(shake, "error_code", "ILLEGAL_SASL_STATE", "KAF-SASL-10", "SaslHandshake v1")
    need_sasl(target, "SaslAuthenticate", 0)
    with KafkaClient(target) as k:
        v = authenticate_version(target)
        what = f"SaslAuthenticate v{v} where none is needed"
        answer = authenticate(k, v, plain_token("nobody", WRONG), "KAF-SASL-10", what)
        expect_code(answer, "error_code", "ILLEGAL_SASL_STATE", "KAF-SASL-10", what)
