"""SASL on one connection of a broker that requires it: the gate before authentication
and the mechanisms' exchanges (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), sans-IO.

The gate is Apache Kafka's ``SaslServerAuthenticator`` as a table (:data:`GATE`,
:data:`AFTER`).  A connection starts in ``start``; what each state admits:

* ``start``: ApiVersions (once) and SaslHandshake; ``handshake`` (after ApiVersions):
  SaslHandshake.  Any other request closes the connection unanswered (Kafka throws
  ``IllegalSaslStateException`` before it parses the request).
* ``authenticate`` (after SaslHandshake v1): SaslAuthenticate.  Any other request is
  answered with its error response carrying ILLEGAL_SASL_STATE, then the connection is
  closed (``buildResponseOnAuthenticateFailure`` with ``getErrorResponse``).
* ``raw`` (after SaslHandshake v0): every frame is a bare SASL token, answered with a
  bare token (KIP-152's old way; Kafka 4.0 keeps it, KAFKA-18270); a failure closes the
  connection unanswered.
* ``complete``: everything is served by the handlers.  ``failed``: the answer that failed
  has been sent; the connection is closed.

An enabled mechanism moves SaslHandshake on to ``authenticate`` or ``raw``; one that is
not is answered UNSUPPORTED_SASL_MECHANISM and fails.  A SaslAuthenticate whose
exchange ends moves to ``complete`` or ``failed``, decided by the answer that is sent
(:meth:`SaslConnection.answered`): error 0 opens the session, an error closes it.

Mechanisms: PLAIN (RFC 4616: ``[authzid] NUL authcid NUL passwd``, an authzid other than
the user refused, as ``PlainSaslServer``) and SCRAM (:mod:`.scram`, credentials made once
per user with 4096 iterations).  No re-authentication (KIP-368): session_lifetime_ms is
0, and a SaslHandshake after authentication is answered ILLEGAL_SASL_STATE.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from conformance.protocols.kafka import scram

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
"""The mechanisms the broker can enable (all by default)."""

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36

GATE: dict[tuple[str, int], str] = {
    ("start", API_VERSIONS): "serve",
    ("start", SASL_HANDSHAKE): "serve",
    ("handshake", SASL_HANDSHAKE): "serve",
    ("authenticate", SASL_AUTHENTICATE): "serve",
}
"""(state, API key) -> what the gate does with the request; not listed: :data:`OTHERWISE`."""
OTHERWISE = {
    "start": "close",
    "handshake": "close",
    "authenticate": "refuse",
    "complete": "serve",
    "failed": "close",
}
AFTER: dict[tuple[str, int, str], str] = {
    ("start", API_VERSIONS, "ok"): "handshake",
    ("start", SASL_HANDSHAKE, "v0"): "raw",
    ("start", SASL_HANDSHAKE, "v1"): "authenticate",
    ("handshake", SASL_HANDSHAKE, "v0"): "raw",
    ("handshake", SASL_HANDSHAKE, "v1"): "authenticate",
    ("authenticate", SASL_AUTHENTICATE, "ok"): "authenticate",
    ("authenticate", SASL_AUTHENTICATE, "done"): "complete",
    ("raw", 0, "ok"): "raw",
    ("raw", 0, "done"): "complete",
}
"""(state, API key (0 for a bare token), outcome) -> the next state; an outcome not
listed (``error``, or an unanswered ApiVersions) fails the connection, except that an
ApiVersions answered with an error leaves the state as it was."""


class AuthenticationFailed(Exception):
    """A token the mechanism refuses; the text is what the broker tells the client."""


class Exchange(Protocol):
    @property
    def complete(self) -> bool: ...

    def step(self, token: bytes) -> bytes: ...


class SaslUsers:
    """The users the broker knows: their passwords (PLAIN) and SCRAM credentials."""

    def __init__(self, users: Iterable[tuple[str, str]]) -> None:
        self.passwords: dict[str, str] = dict(users)
        self.credentials = {
            (mechanism, user): scram.credential(mechanism, password)
            for user, password in self.passwords.items()
            for mechanism in MECHANISMS
            if mechanism in scram.HASHES
        }

    def check(self, user: str, password: str) -> bool:
        known = self.passwords.get(user)
        return known is not None and known == password

    def exchange(self, mechanism: str) -> Exchange:
        if mechanism == "PLAIN":
            return PlainExchange(self)
        return ScramExchange(mechanism, self)


class PlainExchange:
    """RFC 4616 on the server side: one token, answered with an empty one."""

    def __init__(self, users: SaslUsers) -> None:
        self.users = users
        self.complete = False

    def step(self, token: bytes) -> bytes:
        parts = token.split(b"\x00")
        if len(parts) != 3:
            raise AuthenticationFailed(
                f"Authentication failed: a PLAIN token has 3 NUL-separated parts, not {len(parts)}"
            )
        try:
            authzid, user, password = (p.decode("utf-8") for p in parts)
        except UnicodeDecodeError:
            raise AuthenticationFailed(
                "Authentication failed: the PLAIN token is not UTF-8"
            ) from None
        if not user or not password:
            raise AuthenticationFailed("Authentication failed: no user name or no password")
        if not self.users.check(user, password):
            raise AuthenticationFailed("Authentication failed: wrong user name or password")
        if authzid and authzid != user:
            raise AuthenticationFailed(
                "Authentication failed: the authorization id is not the user name"
            )
        self.complete = True
        return b""


class ScramExchange:
    """A SCRAM exchange on the server side; every failure gives the one message Kafka
    gives for it (the user's existence is not told)."""

    def __init__(self, mechanism: str, users: SaslUsers) -> None:
        self.mechanism = mechanism
        self.server = scram.ScramServer(
            mechanism, lambda user: users.credentials.get((mechanism, user))
        )

    @property
    def complete(self) -> bool:
        return self.server.complete

    def step(self, token: bytes) -> bytes:
        try:
            return self.server.step(token)
        except scram.ScramError:
            raise AuthenticationFailed(
                f"Authentication failed: invalid credentials with SASL mechanism {self.mechanism}"
            ) from None


class SaslConnection:
    """The SASL state of one connection (see the module's table)."""

    def __init__(self, users: SaslUsers, enabled: Mapping[str, bool] | Iterable[str]) -> None:
        self.users = users
        self.enabled = [m for m in MECHANISMS if m in enabled]
        self.state = "start"
        self.exchange: Exchange | None = None
        self.outcome = ""
        """What the last request did to the exchange: ok, done, v0, v1 or error."""

    @property
    def open(self) -> bool:
        """True once authenticated: every request goes to the handlers."""
        return self.state == "complete"

    @property
    def raw(self) -> bool:
        return self.state == "raw"

    def admit(self, api_key: int) -> str:
        """serve, close (unanswered) or refuse (ILLEGAL_SASL_STATE, then close)."""
        return GATE.get((self.state, api_key), OTHERWISE[self.state])

    def handshake(self, mechanism: str, version: int) -> bool:
        """SaslHandshake: True if ``mechanism`` is enabled (the exchange begins)."""
        if mechanism not in self.enabled:
            self.outcome = "error"
            return False
        self.exchange = self.users.exchange(mechanism)
        self.outcome = "v0" if version == 0 else "v1"
        return True

    def authenticate(self, token: bytes) -> bytes:
        """One token of the exchange; AuthenticationFailed when it fails."""
        if self.exchange is None:
            self.outcome = "error"
            raise AuthenticationFailed("no SASL mechanism was chosen")
        try:
            reply = self.exchange.step(token)
        except AuthenticationFailed:
            self.outcome = "error"
            raise
        self.outcome = "done" if self.exchange.complete else "ok"
        return reply

    def answered(self, api_key: int, error_code: int) -> None:
        """The answer to a request the gate served has been sent with ``error_code``: move
        on as :data:`AFTER` says.  A failed exchange answered with error 0 (a broker that
        accepts what it should refuse) ends as the answer says: authenticated."""
        if self.state == "complete":
            return
        if api_key == API_VERSIONS:
            if error_code == 0:
                self.state = AFTER.get((self.state, api_key, "ok"), "failed")
            return
        outcome = self.outcome
        if error_code != 0:
            outcome = "error"
        elif outcome == "error":
            outcome = "done"
        self.state = AFTER.get((self.state, api_key, outcome), "failed")

    def token(self, token: bytes) -> bytes | None:
        """A bare token after SaslHandshake v0: the bare token to answer, or None (the
        exchange failed: close unanswered)."""
        try:
            reply = self.authenticate(token)
        except AuthenticationFailed:
            self.state = "failed"
            return None
        self.answered(0, 0)
        return reply
