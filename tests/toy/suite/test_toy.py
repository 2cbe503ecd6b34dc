"""Toy cases: they use the shared client, the session opener and the verdict plumbing."""

from __future__ import annotations

from conformance.suite.case import case, require
from conformance.suite.target import CaseContext
from tests.toy.protocol import frame


@case("toy/login/1", "TOY-LOGIN-1")
def test_a_request_before_hello_is_refused(target: CaseContext) -> None:
    """A request before a successful HELLO is refused with ERR.

    TOY-LOGIN-1: "a request before a successful `HELLO <password>` is refused with `ERR` ..."
    """
    conn = target.connect(open_session=False)
    conn.send(frame(b"PING"))
    reply = conn.recv_frame()
    require(reply.startswith(b"ERR"), "TOY-LOGIN-1", f"PING before HELLO got {reply!r}, not ERR")


@case("toy/data/1", "TOY-PUT-1", "TOY-GET-1")
def test_get_reads_what_put_stored(target: CaseContext) -> None:
    """PUT answers OK <offset>; GET at that offset answers VAL <value>.

    TOY-PUT-1: "`PUT <topic> <value>` answers `OK <offset>`, offsets counting from 0 per topic."

    TOY-GET-1: "`GET <topic> <offset>` answers `VAL <value>` with the value put at that offset."
    """
    conn, topic = target.connect(), target.name("t").encode()
    offsets = []
    for value in (b"one", b"two"):
        conn.send(frame(b"PUT %s %s" % (topic, value)))
        offsets.append(conn.recv_frame())
    require(offsets == [b"OK 0", b"OK 1"], "TOY-PUT-1", f"PUTs got {offsets}, not OK 0, OK 1")
    conn.send(frame(b"GET %s 0" % topic))
    got = conn.recv_frame()
    require(got == b"VAL one", "TOY-GET-1", f"GET at offset 0 got {got!r}, expected b'VAL one'")
