"""SCRAM (RFC 5802, with SHA-256 and SHA-512 as RFC 7677 and KIP-84 name them): the
server and the client side of one exchange, sans-IO.

Rules of this module: nothing here touches a socket or knows Kafka's framing; a message
goes in as bytes and the answer comes back as bytes.  The exchange is

    client-first   n,[a=authzid],n=NAME,r=CNONCE[,ext=value...]
    server-first   r=CNONCE+SNONCE,s=base64(salt),i=iterations
    client-final   c=base64(gs2 header),r=CNONCE+SNONCE[,ext...],p=base64(ClientProof)
    server-final   v=base64(ServerSignature)

with SaltedPassword = PBKDF2(password, salt, i), ClientKey = HMAC(SaltedPassword,
"Client Key"), StoredKey = H(ClientKey), ServerKey = HMAC(SaltedPassword, "Server Key"),
AuthMessage = client-first-bare "," server-first "," client-final-without-proof,
ClientProof = ClientKey XOR HMAC(StoredKey, AuthMessage) and ServerSignature =
HMAC(ServerKey, AuthMessage).  What the server accepts is what Apache Kafka's
``ScramSaslServer`` and ``ScramMessages`` accept: the gs2 header ``n`` only (no channel
binding), a user it has a credential for (else the exchange fails at the first message),
a final nonce that ends in the server's (Kafka's ``endsWith``; a proof made over any
other nonce does not verify anyway), a proof that verifies.  The channel binding value
is not compared with the gs2 header, as in Kafka.  Every failure is one
:class:`ScramError`, whose text names the rule (for logs; a broker answers its own,
less telling, message).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass

MIN_ITERATIONS = 4096
"""The least iteration count a server may hand out (RFC 7677 section 4; Kafka's
``ScramMechanism.minIterations`` for both mechanisms)."""

HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512", "SCRAM-SHA-1": "sha1"}
"""Mechanism name -> hashlib name.  Kafka enables the first two; SHA-1 is here for the
test vectors of RFC 5802."""

_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"  # printable ASCII but ','
_B64 = r"[A-Za-z0-9+/]*={0,2}"
_NAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"  # saslname: no ',' nor bare '='
_EXT = r"(?:,[A-Za-z]+=[\x01-\x2b\x2d-\x7f]+)*"
CLIENT_FIRST = re.compile(
    rf"(?P<gs2>n,(?:a=(?P<authzid>{_NAME}))?,)(?P<bare>(?:m=[^,]+,)?n=(?P<name>{_NAME}),"
    rf"r=(?P<nonce>{_PRINTABLE})(?P<ext>{_EXT}))"
)
SERVER_FIRST = re.compile(
    rf"(?:m=[^,]+,)?r=(?P<nonce>{_PRINTABLE}),s=(?P<salt>{_B64}),i=(?P<i>[0-9]+){_EXT}"
)
CLIENT_FINAL = re.compile(
    rf"(?P<without>c=(?P<c>{_B64}),r=(?P<nonce>{_PRINTABLE}){_EXT}),p=(?P<proof>{_B64})"
)
SERVER_FINAL = re.compile(rf"(?:e=(?P<e>[^,]+)|v=(?P<v>{_B64})){_EXT}")


class ScramError(Exception):
    """A message that breaks SCRAM, or credentials that do not verify."""


@dataclass(frozen=True)
class Credential:
    """What a server keeps of a password (RFC 5802 section 3), never the password."""

    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes


def _hmac(hash_name: str, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hash_name).digest()


def _keys(hash_name: str, password: str, salt: bytes, iterations: int) -> tuple[bytes, bytes]:
    """(ClientKey, ServerKey) of ``password``."""
    salted = hashlib.pbkdf2_hmac(hash_name, password.encode("utf-8"), salt, iterations)
    return _hmac(hash_name, salted, b"Client Key"), _hmac(hash_name, salted, b"Server Key")


def credential(
    mechanism: str, password: str, salt: bytes | None = None, iterations: int = MIN_ITERATIONS
) -> Credential:
    """The server's credential of ``password`` for ``mechanism`` (a fresh random salt
    unless one is given)."""
    hash_name = HASHES[mechanism]
    salt = secrets.token_bytes(16) if salt is None else salt
    client_key, server_key = _keys(hash_name, password, salt, iterations)
    return Credential(salt, iterations, hashlib.new(hash_name, client_key).digest(), server_key)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ScramError(f"{what} is not base64: {text!r}") from None


def _text(message: bytes, what: str) -> str:
    try:
        return message.decode("utf-8")
    except UnicodeDecodeError:
        raise ScramError(f"the {what} is not UTF-8") from None


def sasl_name(name: str) -> str:
    """A user name as SCRAM writes it (',' as '=2C', '=' as '=3D')."""
    return name.replace("=", "=3D").replace(",", "=2C")


def user_of(saslname: str) -> str:
    return saslname.replace("=2C", ",").replace("=3D", "=")


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


class ScramServer:
    """One server-side exchange: :meth:`step` takes the client's message and returns the
    server's; :attr:`complete` once the proof verified (then :attr:`user` is set).
    ``lookup(user)`` gives the user's credential, None for a user it does not know."""

    def __init__(
        self,
        mechanism: str,
        lookup: Callable[[str], Credential | None],
        nonce: Callable[[], str] = lambda: secrets.token_urlsafe(24),
    ) -> None:
        self.hash = HASHES[mechanism]
        self.mechanism = mechanism
        self._lookup = lookup
        self._nonce = nonce
        self.state = "client-first"
        self.user: str | None = None
        self._first_bare = ""
        self._server_first = ""
        self._credential: Credential | None = None

    @property
    def complete(self) -> bool:
        return self.state == "complete"

    def step(self, message: bytes) -> bytes:
        if self.state == "client-first":
            return self._client_first(message)
        if self.state == "client-final":
            return self._client_final(message)
        raise ScramError(f"no message expected in state {self.state}")

    def _fail(self, why: str) -> ScramError:
        self.state = "failed"
        self._credential = None
        return ScramError(why)

    def _client_first(self, message: bytes) -> bytes:
        text = _text(message, "client-first message")
        m = CLIENT_FIRST.fullmatch(text)
        if m is None:
            raise self._fail(f"not a client-first message (gs2 header 'n' only): {text!r}")
        user = user_of(m["name"])
        found = self._lookup(user)
        if found is None:
            raise self._fail(f"unknown user {user!r}")
        if m["authzid"] is not None and user_of(m["authzid"]) != user:
            raise self._fail("the authorization id differs from the user name")
        if found.iterations < MIN_ITERATIONS:
            raise self._fail(f"{found.iterations} iterations, fewer than {MIN_ITERATIONS}")
        self.user, self._credential, self._first_bare = user, found, m["bare"]
        nonce = m["nonce"] + self._nonce()
        self._server_first = f"r={nonce},s={_b64(found.salt)},i={found.iterations}"
        self.state = "client-final"
        return self._server_first.encode("ascii")

    def _client_final(self, message: bytes) -> bytes:
        text = _text(message, "client-final message")
        m = CLIENT_FINAL.fullmatch(text)
        if m is None:
            raise self._fail(f"not a client-final message: {text!r}")
        expected = SERVER_FIRST.fullmatch(self._server_first)
        assert expected is not None and self._credential is not None
        if not m["nonce"].endswith(expected["nonce"]):  # Kafka's check (RFC 5802: equal)
            raise self._fail("the client-final nonce does not end in the server-first nonce")
        proof = _unb64(m["proof"], "the proof")
        cred = self._credential
        auth = f"{self._first_bare},{self._server_first},{m['without']}".encode()
        signature = _hmac(self.hash, cred.stored_key, auth)
        if len(proof) != len(signature):
            raise self._fail(f"a proof of {len(proof)} bytes, expected {len(signature)}")
        stored = hashlib.new(self.hash, _xor(proof, signature)).digest()
        if not hmac.compare_digest(stored, cred.stored_key):
            raise self._fail("the client proof does not verify (wrong password)")
        self.state = "complete"
        self._credential = None
        return f"v={_b64(_hmac(self.hash, cred.server_key, auth))}".encode("ascii")


class ScramClient:
    """One client-side exchange: :meth:`first`, then :meth:`final` with the server-first
    message, then :meth:`verify` with the server-final message.  Each raises ScramError
    where the server breaks SCRAM (a nonce not extending ours, fewer than
    ``min_iterations``, a signature that does not verify)."""

    def __init__(
        self,
        mechanism: str,
        user: str,
        password: str,
        nonce: str | None = None,
        min_iterations: int = MIN_ITERATIONS,
    ) -> None:
        self.hash = HASHES[mechanism]
        self.user, self.password = user, password
        self.nonce = secrets.token_urlsafe(24) if nonce is None else nonce
        self.min_iterations = min_iterations
        self.first_bare = f"n={sasl_name(user)},r={self.nonce}"
        self._auth = b""
        self._server_key = b""

    def first(self) -> bytes:
        return f"n,,{self.first_bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        text = _text(server_first, "server-first message")
        m = SERVER_FIRST.fullmatch(text)
        if m is None:
            raise ScramError(f"not a server-first message: {text!r}")
        nonce = m["nonce"]
        if not nonce.startswith(self.nonce) or nonce == self.nonce:
            raise ScramError(f"the server nonce {nonce!r} does not extend ours ({self.nonce!r})")
        iterations = int(m["i"])
        if iterations < self.min_iterations:
            raise ScramError(f"{iterations} iterations, fewer than {self.min_iterations}")
        salt = _unb64(m["salt"], "the salt")
        client_key, self._server_key = _keys(self.hash, self.password, salt, iterations)
        without = f"c={_b64(b'n,,')},r={nonce}"
        self._auth = f"{self.first_bare},{text},{without}".encode()
        stored = hashlib.new(self.hash, client_key).digest()
        proof = _xor(client_key, _hmac(self.hash, stored, self._auth))
        return f"{without},p={_b64(proof)}".encode("ascii")

    def verify(self, server_final: bytes) -> None:
        text = _text(server_final, "server-final message")
        m = SERVER_FINAL.fullmatch(text)
        if m is None:
            raise ScramError(f"not a server-final message: {text!r}")
        if m["e"] is not None:
            raise ScramError(f"the server answered error {m['e']!r}")
        expected = _hmac(self.hash, self._server_key, self._auth)
        if not hmac.compare_digest(_unb64(m["v"], "the server signature"), expected):
            raise ScramError("the server signature does not verify")
