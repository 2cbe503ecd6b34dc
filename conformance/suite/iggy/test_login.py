"""Iggy login (classic only): the gate before LOGIN_USER, logging in and out (SPEC.md,
area "login").  Every connection here is opened without the session opener."""

from __future__ import annotations

from typing import Any

from conformance.client import Connection
from conformance.protocols.iggy.plugin import SDK_VERSION
from conformance.suite.case import case, require
from conformance.suite.iggy.malformed import refuse_malformed
from conformance.suite.iggy.verify import (
    Reply,
    call,
    expect_empty,
    expect_ok,
    expect_status,
    require_status,
)
from conformance.suite.target import CaseContext

GATED: tuple[tuple[str, dict[str, Any]], ...] = (
    ("get_streams", {}),
    ("get_stats", {}),
    ("get_me", {}),
    ("get_stream", {"stream": {"kind": 1, "value": 0}}),
)


def credentials(ctx: CaseContext) -> tuple[str, str]:
    return str(ctx.options.get("username") or "iggy"), str(ctx.options.get("password") or "")


def login(
    ctx: CaseContext, conn: Connection, username: str, password: str, req: str, what: str
) -> Reply:
    body = {"username": username, "password": password, "version": SDK_VERSION, "context": ""}
    return call(ctx, conn, "login_user", body, req, what)


def gate_holds(ctx: CaseContext, conn: Connection, when: str) -> None:
    """A gated command (GET_STREAMS) is answered 40 (IGG-LOGIN-2)."""
    expect_status(ctx, conn, "get_streams", {}, 40, "IGG-LOGIN-2", f"GET_STREAMS {when}")


@case("iggy/login/1", "IGG-LOGIN-1")
def test_ping_is_answered_before_login(target: CaseContext) -> None:
    """PING on a connection that has not logged in is answered status 0, empty.

    IGG-LOGIN-1: "PING sent before any login is answered with status 0 and an empty payload."
    """
    with target.connect(open_session=False) as conn:
        expect_empty(target, conn, "ping", {}, "IGG-LOGIN-1", "PING before login")


@case("iggy/login/2", "IGG-LOGIN-2")
def test_gated_commands_are_answered_40_before_login(target: CaseContext) -> None:
    """GET_STREAMS, GET_STATS, GET_ME and GET_STREAM before login are each answered 40.

    IGG-LOGIN-2: "before a successful LOGIN_USER on the same connection, every command other
    than PING and LOGIN_USER is answered with status 40 (Unauthenticated) and the connection
    stays open; a login made on another connection does not count."
    """
    with target.connect() as other, target.connect(open_session=False) as conn:
        expect_ok(target, other, "ping", {}, "IGG-LOGIN-2", "PING on a logged-in connection")
        for name, body in GATED:
            expect_status(
                target, conn, name, body, 40, "IGG-LOGIN-2", f"{name.upper()} before login"
            )
        expect_empty(target, conn, "ping", {}, "IGG-LOGIN-2", "PING after the refusals")


@case("iggy/login/3", "IGG-LOGIN-3")
def test_a_valid_login_answers_a_user_id_and_opens_the_gate(target: CaseContext) -> None:
    """LOGIN_USER with valid credentials answers 0, a u32 user id; GET_STREAMS then works.

    IGG-LOGIN-3: "... with valid credentials is answered with status 0 and a u32 user id; gated
    commands sent afterwards on that connection are served."
    """
    user, password = credentials(target)
    with target.connect(open_session=False) as conn:
        reply = login(target, conn, user, password, "IGG-LOGIN-3", f"LOGIN_USER {user}")
        require_status(reply, 0, "IGG-LOGIN-3", f"LOGIN_USER {user} with its password")
        require(
            reply.body is not None and isinstance(reply.body.get("user_id"), int),
            "IGG-LOGIN-3",
            f"LOGIN_USER {user}: no u32 user id in the reply",
            reply.at("user_id"),
        )
        expect_ok(target, conn, "get_streams", {}, "IGG-LOGIN-3", "GET_STREAMS after login")


@case("iggy/login/4", "IGG-LOGIN-4", "IGG-LOGIN-2")
def test_a_wrong_password_or_unknown_user_is_answered_42(target: CaseContext) -> None:
    """A wrong password and an unknown user are each answered 42, and the gate stays shut.

    IGG-LOGIN-4: "LOGIN_USER with a wrong password, or naming a user that does not exist, is
    answered with status 42 (InvalidCredentials); a connection that was not logged in stays so
    (its next gated command gets 40)."

    IGG-LOGIN-2: "before a successful LOGIN_USER on the same connection, every command other
    than PING and LOGIN_USER is answered with status 40 ..."
    """
    user, password = credentials(target)
    with target.connect(open_session=False) as conn:
        gate_holds(target, conn, "before any login")
        wrong = password + "-wrong"
        reply = login(target, conn, user, wrong, "IGG-LOGIN-4", f"LOGIN_USER {user} wrong password")
        require_status(reply, 42, "IGG-LOGIN-4", f"LOGIN_USER {user} with a wrong password")
        ghost = target.name("nobody")[:40]
        reply = login(target, conn, ghost, password, "IGG-LOGIN-4", f"LOGIN_USER {ghost}")
        require_status(reply, 42, "IGG-LOGIN-4", f"LOGIN_USER of unknown user {ghost}")
        expect_status(target, conn, "get_streams", {}, 40, "IGG-LOGIN-4", "GET_STREAMS after both")


@case("iggy/login/5", "IGG-LOGIN-5", "IGG-LOGIN-2")
def test_logout_is_answered_0_and_shuts_the_gate(target: CaseContext) -> None:
    """LOGOUT_USER is answered 0, and GET_STREAMS after it is answered 40.

    IGG-LOGIN-5: "LOGOUT_USER (39, empty payload) on a logged-in connection is answered with
    status 0 and an empty payload; from then on gated commands on that connection are answered
    40 until it logs in again."

    IGG-LOGIN-2: "before a successful LOGIN_USER on the same connection, every command other
    than PING and LOGIN_USER is answered with status 40 ..."
    """
    user, password = credentials(target)
    with target.connect(open_session=False) as conn:
        gate_holds(target, conn, "before login")
        reply = login(target, conn, user, password, "IGG-LOGIN-3", f"LOGIN_USER {user}")
        require_status(reply, 0, "IGG-LOGIN-3", f"LOGIN_USER {user} with its password")
        expect_empty(target, conn, "logout_user", {}, "IGG-LOGIN-5", "LOGOUT_USER")
        expect_status(
            target, conn, "get_streams", {}, 40, "IGG-LOGIN-5", "GET_STREAMS after logout"
        )


@case("iggy/login/6", "IGG-LOGIN-6")
def test_credential_lengths_out_of_range_are_43_and_44(target: CaseContext) -> None:
    """Usernames of 2 and 51 bytes are answered 43, passwords of 2 and 101 bytes 44.

    IGG-LOGIN-6: "LOGIN_USER whose username is not 3 to 50 bytes long is answered with status 43
    (InvalidUsername), and one whose password is not 3 to 100 bytes long with status 44
    (InvalidPassword) ..."
    """
    user, password = credentials(target)
    good = password if 3 <= len(password.encode()) <= 100 else "secret"
    tries = (
        ("ab", good, 43, "a username of 2 bytes"),
        ("u" * 51, good, 43, "a username of 51 bytes"),
        (user, "pw", 44, "a password of 2 bytes"),
        (user, "p" * 101, 44, "a password of 101 bytes"),
    )
    with target.connect(open_session=False) as conn:
        for name, secret, status, what in tries:
            reply = login(target, conn, name, secret, "IGG-LOGIN-6", f"LOGIN_USER with {what}")
            require_status(reply, status, "IGG-LOGIN-6", f"LOGIN_USER with {what}")


@case("iggy/login/7", "IGG-LOGIN-7")
def test_a_malformed_payload_before_login_is_3_or_4(target: CaseContext) -> None:
    """Malformed GET_STREAM, POLL_MESSAGES and CREATE_STREAM payloads sent before login are
    each answered 3 or 4 as after it, not 40.

    IGG-LOGIN-7: "before login, a request whose payload cannot be decoded is answered 3 or 4 as
    in IGG-FRAME-8, not 40, because the payload is decoded before the login check ..."
    """
    with target.connect(open_session=False) as conn:
        refuse_malformed(target, conn, "IGG-LOGIN-7")


@case("iggy/login/8", "IGG-LOGIN-8")
def test_a_login_on_a_logged_in_connection_replaces_the_first(target: CaseContext) -> None:
    """A second valid LOGIN_USER is answered 0 with the same user id and the connection is
    still served; after a wrong password (42) and a username of 2 bytes (43) it is too.

    IGG-LOGIN-8: "LOGIN_USER on a connection that is already logged in is served as a first
    login is: with valid credentials it is answered with status 0 and the user id, and the
    connection is from then on logged in as that user (the first login ends); refused (42, 43
    or 44) it leaves the connection logged in as it was."
    """
    req = "IGG-LOGIN-8"
    user, password = credentials(target)
    with target.connect(open_session=False) as conn:
        first = login(target, conn, user, password, "IGG-LOGIN-3", f"LOGIN_USER {user}")
        require_status(first, 0, "IGG-LOGIN-3", f"LOGIN_USER {user} with its password")
        again = login(target, conn, user, password, req, f"a second LOGIN_USER {user}")
        require_status(again, 0, req, f"a second LOGIN_USER {user} on the logged-in connection")
        want = first.body["user_id"] if first.body is not None else None
        have = again.body["user_id"] if again.body is not None else None
        require(
            have == want,
            req,
            f"the second LOGIN_USER {user} answered user id {have}, the first {want}",
            first.at("user_id") + again.at("user_id"),
        )
        expect_ok(target, conn, "get_streams", {}, req, "GET_STREAMS after the second login")
        refusals = (  # each refusal is its own requirement's; what follows is this one's
            (user, password + "-wrong", 42, "IGG-LOGIN-4", f"LOGIN_USER {user}, wrong password"),
            ("ab", password, 43, "IGG-LOGIN-6", "LOGIN_USER of a 2-byte username"),
        )
        for name, secret, status, rule, what in refusals:
            reply = login(target, conn, name, secret, rule, f"{what}, logged in")
            require_status(reply, status, rule, f"{what} on a logged-in connection")
            expect_ok(target, conn, "get_streams", {}, req, f"GET_STREAMS after {what}")
