"""The SASL gate of the Kafka session (broker.py, sasl_session.py, handlers/sasl.py),
sans-IO: frames in, outcomes out, as Apache Kafka's SaslServerAuthenticator answers."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.engine import Engine
from conformance.protocols.kafka import codec, scram
from conformance.protocols.kafka.broker import KafkaConfig, KafkaFrontend, KafkaSession
from conformance.protocols.kafka.sasl_opening import plain_token
from conformance.protocols.kafka.sasl_session import GATE, OTHERWISE, SaslConnection, SaslUsers
from conformance.server import Outcome

API_VERSIONS, HANDSHAKE, AUTHENTICATE, METADATA = 18, 17, 36, 3
USERS = (("alice", "s3cret"), ("bob", "hunter2"))


def _session(quirks: tuple[str, ...] = (), **config: Any) -> KafkaSession:
    config.setdefault("sasl_users", USERS)
    kafka = KafkaConfig(revision="apache", quirks=quirks, **config)
    return KafkaFrontend(Engine(), kafka).new_session("127.0.0.1:5555")


def _req(key: int, version: int, body: dict[str, Any], corr: int = 7) -> bytes:
    return codec.encode_request(key, version, body, correlation_id=corr)


def _answer(out: Outcome, key: int, version: int) -> dict[str, Any]:
    assert len(out.replies) == 1, out
    _, body = codec.decode_response(out.replies[0][4:], key, version)
    return body


def _shake(s: KafkaSession, mechanism: str, version: int = 1) -> dict[str, Any]:
    return _answer(s.handle(_req(HANDSHAKE, version, {"mechanism": mechanism})), HANDSHAKE, version)


def _auth(s: KafkaSession, token: bytes, version: int = 2) -> tuple[dict[str, Any], Outcome]:
    out = s.handle(_req(AUTHENTICATE, version, {"auth_bytes": token}))
    return _answer(out, AUTHENTICATE, version), out


def _served(s: KafkaSession) -> bool:
    out = s.handle(_req(METADATA, 12, {"topics": []}))
    return len(out.replies) == 1 and not out.close


def test_api_versions_then_plain_then_everything_is_served() -> None:
    s = _session()
    versions = _answer(s.handle(_req(API_VERSIONS, 3, {})), API_VERSIONS, 3)
    assert versions["error_code"] == 0
    shake = _shake(s, "PLAIN")
    assert shake == {"error_code": 0, "mechanisms": ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]}
    body, out = _auth(s, plain_token("alice", "s3cret"))
    assert body["error_code"] == 0 and body["auth_bytes"] == b"" and not out.close
    assert body["session_lifetime_ms"] == 0
    assert _served(s)
    # after authentication: KafkaApis answers both ILLEGAL_SASL_STATE (no re-authentication)
    assert _shake(s, "PLAIN")["error_code"] == 34
    assert _auth(s, plain_token("alice", "s3cret"))[0]["error_code"] == 34


@pytest.mark.parametrize(
    "token",
    [
        plain_token("alice", "wrong"),
        plain_token("nobody", "s3cret"),
        plain_token("alice", "s3cret", authzid="bob"),
        plain_token("alice", ""),
        b"alice\x00s3cret",
        b"\x00al\xffice\x00s3cret",
    ],
)
def test_plain_refusals_answer_58_with_a_message_and_close(token: bytes) -> None:
    s = _session()
    _shake(s, "PLAIN")
    body, out = _auth(s, token)
    assert body["error_code"] == 58 and body["error_message"]
    assert out.close
    assert s.sasl is not None and s.sasl.state == "failed"


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_over_sasl_authenticate(mechanism: str) -> None:
    s = _session()
    _shake(s, mechanism)
    client = scram.ScramClient(mechanism, "bob", "hunter2")
    first, out = _auth(s, client.first(), version=1)
    assert first["error_code"] == 0 and not out.close
    last, out = _auth(s, client.final(first["auth_bytes"]), version=1)
    assert last["error_code"] == 0 and not out.close
    client.verify(last["auth_bytes"])
    assert _served(s)


def test_scram_with_a_wrong_password_fails_at_the_final_message() -> None:
    s = _session()
    _shake(s, "SCRAM-SHA-256")
    client = scram.ScramClient("SCRAM-SHA-256", "bob", "wrong")
    first, _ = _auth(s, client.first())
    body, out = _auth(s, client.final(first["auth_bytes"]))
    assert body["error_code"] == 58 and "SCRAM-SHA-256" in body["error_message"]
    assert out.close


def test_scram_with_an_unknown_user_fails_at_the_first_message() -> None:
    s = _session()
    _shake(s, "SCRAM-SHA-512")
    body, out = _auth(s, scram.ScramClient("SCRAM-SHA-512", "nobody", "x").first())
    assert body["error_code"] == 58 and out.close


def test_an_unknown_mechanism_lists_the_enabled_ones_and_closes() -> None:
    s = _session(sasl_mechanisms=("SCRAM-SHA-512",))
    out = s.handle(_req(HANDSHAKE, 1, {"mechanism": "PLAIN"}))
    assert _answer(out, HANDSHAKE, 1) == {"error_code": 33, "mechanisms": ["SCRAM-SHA-512"]}
    assert out.close


@pytest.mark.parametrize("first", [METADATA, AUTHENTICATE, 0])
def test_other_requests_before_the_handshake_close_unanswered(first: int) -> None:
    s = _session()
    body: dict[str, Any] = {"auth_bytes": b""} if first == AUTHENTICATE else {}
    out = s.handle(_req(first, 1 if first != 0 else 3, body))
    assert out.close and out.replies == []


def test_a_second_api_versions_closes() -> None:
    s = _session()
    s.handle(_req(API_VERSIONS, 0, {}))
    out = s.handle(_req(API_VERSIONS, 0, {}))
    assert out.close and out.replies == []


def test_an_api_versions_of_an_unknown_version_is_answered_and_changes_nothing() -> None:
    s = _session()
    v99 = API_VERSIONS.to_bytes(2, "big") + b"\x00\x63" + b"\x00\x00\x00\x03" + b"\x00\x00"
    out = s.handle(v99)  # key, version 99, correlation id 3, client id ""
    assert len(out.replies) == 1 and not out.close
    assert s.sasl is not None and s.sasl.state == "start"


def test_a_request_after_the_v1_handshake_is_refused_with_34_or_closed() -> None:
    s = _session()
    _shake(s, "PLAIN")
    out = s.handle(_req(METADATA, 12, {"topics": []}))
    assert out.close
    for reply in out.replies:
        assert b"\x00\x22" in reply  # ILLEGAL_SASL_STATE in the error answer


def test_handshake_v0_then_bare_plain_tokens() -> None:
    s = _session()
    assert _shake(s, "PLAIN", version=0)["error_code"] == 0
    out = s.handle(plain_token("alice", "s3cret"))
    assert out.replies == [b"\x00\x00\x00\x00"] and not out.close
    assert _served(s)


def test_handshake_v0_then_bare_scram_tokens() -> None:
    s = _session()
    _shake(s, "SCRAM-SHA-256", version=0)
    client = scram.ScramClient("SCRAM-SHA-256", "alice", "s3cret")
    first = s.handle(client.first()).replies[0][4:]
    final = s.handle(client.final(first)).replies[0][4:]
    client.verify(final)
    assert _served(s)


def test_a_bare_token_that_fails_closes_unanswered() -> None:
    s = _session()
    _shake(s, "PLAIN", version=0)
    out = s.handle(plain_token("alice", "wrong"))
    assert out.close and out.replies == []


def test_without_users_no_sasl_is_required_and_both_apis_answer_34() -> None:
    s = _session(sasl_users=())
    assert s.sasl is None and _served(s)
    assert _shake(s, "PLAIN") == {"error_code": 34, "mechanisms": []}
    assert _auth(s, b"")[0]["error_code"] == 34


def test_the_session_forgets_its_sasl_state_when_closed() -> None:
    s = _session()
    assert s.broker.sasl_connections["127.0.0.1:5555"] is s.sasl
    s.closed()
    assert "127.0.0.1:5555" not in s.broker.sasl_connections


def test_quirk_any_password_lets_a_wrong_password_in() -> None:
    s = _session(quirks=("sasl-any-password",))
    _shake(s, "PLAIN")
    body, out = _auth(s, plain_token("alice", "wrong"))
    assert body["error_code"] == 0 and not out.close
    assert _served(s)


def test_quirk_wrong_server_signature_fails_the_client_check() -> None:
    s = _session(quirks=("scram-server-signature-wrong",))
    _shake(s, "SCRAM-SHA-256")
    client = scram.ScramClient("SCRAM-SHA-256", "alice", "s3cret")
    first, _ = _auth(s, client.first())
    last, _ = _auth(s, client.final(first["auth_bytes"]))
    with pytest.raises(scram.ScramError, match="does not verify"):
        client.verify(last["auth_bytes"])


def test_the_gate_table_names_every_state() -> None:
    states = {state for state, _ in GATE} | set(OTHERWISE)
    assert states == {"start", "handshake", "authenticate", "complete", "failed"}
    conn = SaslConnection(SaslUsers(USERS), ["PLAIN"])
    assert conn.admit(METADATA) == "close" and conn.admit(API_VERSIONS) == "serve"
