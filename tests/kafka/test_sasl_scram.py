"""SCRAM, sans-IO (conformance/protocols/kafka/scram.py): the test vectors of RFC 5802
(SCRAM-SHA-1) and RFC 7677 (SCRAM-SHA-256) both ways, a client against the server for
each Kafka mechanism, and every rule each side refuses."""

from __future__ import annotations

import base64

import pytest

from conformance.protocols.kafka import scram

# RFC 7677 section 3 (user "user", password "pencil")
SHA256 = {
    "mechanism": "SCRAM-SHA-256",
    "client_nonce": "rOprNGfwEbeRWgbNEkqO",
    "server_nonce": "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
    "salt": "W22ZaJ0SNY7soEsUEjb6gQ==",
    "client_first": b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
    "server_first": b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
    "client_final": b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
    "server_final": b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
}
# RFC 5802 section 5
SHA1 = {
    "mechanism": "SCRAM-SHA-1",
    "client_nonce": "fyko+d2lbbFgONRv9qkxdawL",
    "server_nonce": "3rfcNHYJY1ZVvWVs7j",
    "salt": "QSXCR+Q6sek8bf92",
    "client_first": b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL",
    "server_first": b"r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096",
    "client_final": b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,"
    b"p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
    "server_final": b"v=rmF9pqV8S7suAoZWja4dJRkFsKQ=",
}
RFC = [pytest.param(SHA1, id="rfc5802-sha1"), pytest.param(SHA256, id="rfc7677-sha256")]


def _server(v: dict[str, object], password: str = "pencil") -> scram.ScramServer:
    mechanism = str(v["mechanism"])
    cred = scram.credential(mechanism, password, base64.b64decode(str(v["salt"])))
    return scram.ScramServer(
        mechanism, lambda u: cred if u == "user" else None, nonce=lambda: str(v["server_nonce"])
    )


@pytest.mark.parametrize("v", RFC)
def test_the_client_writes_the_rfc_messages(v: dict[str, object]) -> None:
    client = scram.ScramClient(str(v["mechanism"]), "user", "pencil", str(v["client_nonce"]))
    assert client.first() == v["client_first"]
    assert client.final(bytes(v["server_first"])) == v["client_final"]  # type: ignore[arg-type]
    client.verify(bytes(v["server_final"]))  # type: ignore[arg-type]


@pytest.mark.parametrize("v", RFC)
def test_the_server_answers_the_rfc_messages(v: dict[str, object]) -> None:
    server = _server(v)
    assert server.step(bytes(v["client_first"])) == v["server_first"]  # type: ignore[arg-type]
    assert not server.complete
    assert server.step(bytes(v["client_final"])) == v["server_final"]  # type: ignore[arg-type]
    assert server.complete and server.user == "user"


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_client_and_the_server_agree(mechanism: str) -> None:
    cred = scram.credential(mechanism, "s3cret, with = signs")
    server = scram.ScramServer(mechanism, lambda u: cred if u == "al,i=ce" else None)
    client = scram.ScramClient(mechanism, "al,i=ce", "s3cret, with = signs")
    assert b"n=al=2Ci=3Dce" in client.first()
    client.verify(server.step(client.final(server.step(client.first()))))
    assert server.complete and server.user == "al,i=ce"


def test_a_wrong_password_fails_at_the_final_message() -> None:
    server = _server(SHA256, password="not pencil")
    server.step(bytes(SHA256["client_first"]))  # type: ignore[arg-type]
    with pytest.raises(scram.ScramError, match="does not verify"):
        server.step(bytes(SHA256["client_final"]))  # type: ignore[arg-type]
    assert server.state == "failed"
    with pytest.raises(scram.ScramError, match="no message expected"):
        server.step(b"anything")


@pytest.mark.parametrize(
    ("first", "why"),
    [
        (b"n,,n=nobody,r=abc", "unknown user"),
        (b"y,,n=user,r=abc", "not a client-first"),
        (b"p=tls-unique,,n=user,r=abc", "not a client-first"),
        (b"n,,n=user", "not a client-first"),
        (b"n,,n=us=er,r=abc", "not a client-first"),
        (b"n,a=other,n=user,r=abc", "authorization id"),
        (b"n,,n=user,r=a\xffb", "not UTF-8"),
    ],
)
def test_a_bad_client_first_fails(first: bytes, why: str) -> None:
    with pytest.raises(scram.ScramError, match=why):
        _server(SHA256).step(first)


def test_fewer_than_4096_iterations_are_not_handed_out() -> None:
    cred = scram.credential("SCRAM-SHA-256", "pencil", iterations=4095)
    server = scram.ScramServer("SCRAM-SHA-256", lambda u: cred)
    with pytest.raises(scram.ScramError, match="4095 iterations"):
        server.step(b"n,,n=user,r=abc")


@pytest.mark.parametrize(
    ("final", "why"),
    [
        (b"c=biws,r=rOprNGfwEbeRWgbNEkqO,p=AAAA", "nonce"),
        (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0", "not a client-final"),
        (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=AAAA", "proof of 3"),
    ],
)
def test_a_bad_client_final_fails(final: bytes, why: str) -> None:
    server = _server(SHA256)
    server.step(bytes(SHA256["client_first"]))  # type: ignore[arg-type]
    with pytest.raises(scram.ScramError, match=why):
        server.step(final)


@pytest.mark.parametrize(
    ("server_first", "why"),
    [
        (b"r=someoneelse123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "does not extend"),
        (b"r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "does not extend"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4095", "4095 iterations"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=W22Z*J0SNY7soEsUEjb6gQ==,i=4096", "not a server-first"),
        (b"e=other-error", "not a server-first"),
    ],
)
def test_the_client_refuses_a_bad_server_first(server_first: bytes, why: str) -> None:
    client = scram.ScramClient("SCRAM-SHA-256", "user", "pencil", "rOprNGfwEbeRWgbNEkqO")
    with pytest.raises(scram.ScramError, match=why):
        client.final(server_first)


@pytest.mark.parametrize(
    ("server_final", "why"),
    [
        (b"v=AAAA" + SHA256["server_final"][6:], "does not verify"),  # type: ignore[index]
        (b"e=invalid-proof", "answered error 'invalid-proof'"),
        (b"x=1", "not a server-final"),
    ],
)
def test_the_client_refuses_a_bad_server_final(server_final: bytes, why: str) -> None:
    client = scram.ScramClient("SCRAM-SHA-256", "user", "pencil", "rOprNGfwEbeRWgbNEkqO")
    client.final(bytes(SHA256["server_first"]))  # type: ignore[arg-type]
    with pytest.raises(scram.ScramError, match=why):
        client.verify(server_final)
