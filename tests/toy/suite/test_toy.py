"""Toy cases: they use the shared client, the session opener and the verdict plumbing."""

from __future__ import annotations

from conformance.client import BadFraming, PeerClosed, ReplyTimeout
from conformance.evidence import Evidence
from conformance.suite.case import Violation, case, require
from conformance.suite.target import CaseContext
from tests.toy.protocol import frame


@case("toy/framing/1", "TOY-FRAME-1")
def test_frames_are_u32_le_lengths_counting_their_own_four_bytes(target: CaseContext) -> None:
    """Two requests framed by hand in one write get one reply each, framed the same way.

    TOY-FRAME-1: "every frame is a u32 little-endian length that counts its own four bytes, then
    the payload; replies are framed the same way."
    """
    conn, put = target.connect(), b"PUT %s v" % target.name("f").encode()
    # 08000000 'PING', then (4 + len) 'PUT <topic> v': a target that reads the length
    # otherwise (big-endian, or not counting itself) runs the two requests together
    wire = (8).to_bytes(4, "little") + b"PING" + (4 + len(put)).to_bytes(4, "little") + put
    conn.send(wire, summary="PING and PUT, framed by hand, in one write")
    replies, evidence = [], Evidence()
    for what in ("PING", "PUT"):
        try:
            replies.append(conn.recv_frame())
        except ReplyTimeout as exc:
            target.silence("TOY-FRAME-1", f"the reply to {what}", exc.evidence)
        except (BadFraming, PeerClosed) as exc:
            raise Violation("TOY-FRAME-1", f"the reply to {what}: {exc}", exc.evidence) from None
        evidence += conn.exchange().on("word0")
    want = [b"PONG", b"OK 0"]
    require(replies == want, "TOY-FRAME-1", f"replies {replies}, expected {want}", evidence)


@case("toy/login/1", "TOY-LOGIN-1")
def test_a_request_before_hello_is_refused(target: CaseContext) -> None:
    """A request before a successful HELLO is refused with ERR.

    TOY-LOGIN-1: "a request before a successful `HELLO <password>` is refused with `ERR` ..."
    """
    conn = target.connect(open_session=False)
    conn.send(frame(b"PING"))
    reply = conn.recv_frame()
    require(
        reply.startswith(b"ERR"),
        "TOY-LOGIN-1",
        f"PING before HELLO got {reply!r}, expected ERR",
        conn.exchange().on("word0"),
    )


@case("toy/data/1", "TOY-PUT-1", "TOY-GET-1")
def test_get_reads_what_put_stored(target: CaseContext) -> None:
    """PUT answers OK <offset>; GET at that offset answers VAL <value>.

    TOY-PUT-1: "`PUT <topic> <value>` answers `OK <offset>`, offsets counting from 0 per topic."

    TOY-GET-1: "`GET <topic> <offset>` answers `VAL <value>` with the value put at that offset."
    """
    conn, topic = target.connect(), target.name("t").encode()
    offsets, evidence = [], Evidence()
    for value in (b"one", b"two"):
        conn.send(frame(b"PUT %s %s" % (topic, value)))
        offsets.append(conn.recv_frame())
        evidence += conn.exchange().on("word0", "word1")
    require(
        offsets == [b"OK 0", b"OK 1"],
        "TOY-PUT-1",
        f"PUTs got {offsets}, expected [b'OK 0', b'OK 1']",
        evidence,
    )
    conn.send(frame(b"GET %s 0" % topic))
    got = conn.recv_frame()
    require(
        got == b"VAL one",
        "TOY-GET-1",
        f"GET at offset 0 got {got!r}, expected b'VAL one'",
        conn.exchange().on("word0", "word1"),
    )
