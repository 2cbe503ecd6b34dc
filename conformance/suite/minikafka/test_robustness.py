"""Mini-Kafka robustness: after a request it cannot handle, a broker goes on serving (SPEC.md,
area "robustness").

Each bad input goes on a connection a FLUSH was just answered on; an error reply, a close
or nothing there is allowed, and the case closes it, then requires a FLUSH on a NEW
connection to be answered (the real server serves one connection at a time, so the first is
closed before the second is opened).  The real server stops serving everyone after each of
them while its port still accepts: these SHOULDs WARN it, decided on that silence
(:func:`.steps.goes_on_serving`), and the robustness cases after the first one that stops it
are UNSUPPORTED at once ("not checked"): this file sorts last, so no other case meets the
stopped target.

A request cut short is two requirements: MK-ERR-2 (``doc``: answered with its type's error
path, and the connection serves on) and MK-ROBUST-3 (the broker goes on serving).  Both
cases are here and judge a target that goes silent by the same rule: a violation of their
SHOULD decided on that silence (WARN), never an ERROR from a probe that finds the target
gone."""

from __future__ import annotations

from conformance.evidence import Evidence, Judged
from conformance.protocols.minikafka import messages as m
from conformance.suite.case import Violation, case
from conformance.suite.minikafka.steps import (
    goes_on_serving,
    not_after_a_stop,
    serves_new_connections,
)
from conformance.suite.minikafka.verify import answered, read, require_failure, send_raw
from conformance.suite.target import CaseContext


@case("minikafka/robustness/1", "MK-ROBUST-1")
def test_an_unknown_type_byte_does_not_stop_the_broker(target: CaseContext) -> None:
    """After a request of type 0x07, then one of type 0x02, a new connection is answered.

    MK-ROBUST-1: "after a request with a type byte that is no request type (anything but 0x01,
    0x03, 0x05), the broker goes on serving: a new connection is answered."
    """
    # 00000005 07: length 5, type 0x07; 00000005 02: type 0x02 (a reply's, not a request's)
    for kind in (0x07, 0x02):
        bad = bytes.fromhex(f"00000005{kind:02x}")
        goes_on_serving(target, bad, "MK-ROBUST-1", f"a request of type 0x{kind:02x}")


@case("minikafka/robustness/2", "MK-ROBUST-2")
def test_a_length_below_5_does_not_stop_the_broker(target: CaseContext) -> None:
    """After a frame of length 0, then 3, then 4 (no type byte), then 0x7fffffff, a new
    connection is answered.

    MK-ROBUST-2: "after a frame whose length field is below 5 (no room for a type byte, or not
    even for itself), or larger than the broker takes (it may refuse it or close the
    connection), the broker goes on serving: a new connection is answered."
    """
    for length in (0, 3, 4, 0x7FFFFFFF):
        bad = length.to_bytes(4, "big")  # the length field alone: nothing follows it
        goes_on_serving(target, bad, "MK-ROBUST-2", f"a frame of length {length}")


@case("minikafka/robustness/3", "MK-ROBUST-3")
def test_a_request_cut_short_does_not_stop_the_broker(target: CaseContext) -> None:
    """After a PRODUCE whose topic length points past its frame, a new connection is answered.

    MK-ROBUST-3: "after a request cut short inside a field, the broker goes on serving: a new
    connection is answered."
    """
    # 0000000e 03 00000064 'topic': length 14, PRODUCE, topic length 100 with 5 bytes left
    bad = bytes.fromhex("0000000e 03 00000064") + b"topic"
    what = "a PRODUCE whose topic length (100) points past its frame"
    goes_on_serving(target, bad, "MK-ROBUST-3", what)


def cut_short(ctx: CaseContext, bad: bytes, kind: int, what: str) -> None:
    """``bad`` (a request of ``kind`` whose fields end too soon) on a connection of its own
    is answered with the error path, then a FLUSH on that connection is answered (MK-ERR-2).
    Silence instead breaks MK-ERR-2, decided on it, and a new connection then tells whether
    the target stopped serving (as :func:`.steps.goes_on_serving` decides it)."""
    not_after_a_stop(ctx, "MK-ERR-2")
    with ctx.connect() as conn:
        sent = send_raw(conn, bad, what)
        try:
            reply = read(ctx, conn, "MK-ERR-2", what)
            require_failure(reply, kind, "MK-ERR-2", what)
            answered(ctx, conn, "MK-ERR-2", f"FLUSH after {what}")
            return
        except Violation as exc:
            if exc.evidence.ending != "timeout":
                raise
            silence = exc
    serves_new_connections(ctx, "MK-ERR-2", what, sent)
    raise Violation(
        "MK-ERR-2",
        f"{what}: no reply on its connection within {ctx.timeout:g}s, where its error path "
        "was expected (a new connection is still answered)",
        Evidence((Judged(sent), *silence.evidence.frames)),  # decided on the silence
    )


@case("minikafka/errors/2", "MK-ERR-2")
def test_a_request_cut_short_gets_its_error_path(target: CaseContext) -> None:
    """In doc, a PRODUCE whose topic length points past its frame, and a CONSUME without its batch
    size, are answered with their error path, and the connection serves on.

    MK-ERR-2: "a request whose type byte is known but whose fields are cut short (a length
    pointing past the frame) is answered with that type's error path, and the connection goes
    on serving."
    """
    # 0000000e 03 00000064 'topic': length 14, PRODUCE, topic length 100 with 5 bytes left
    produce_bad = bytes.fromhex("0000000e 03 00000064") + b"topic"
    cut_short(target, produce_bad, m.PRODUCE_REQUEST, "a PRODUCE whose topic length is 100")
    # 00000016 01 00000005 'topic' 0000000000000000: CONSUME with no batch size
    consume_bad = bytes.fromhex("00000016 01 00000005") + b"topic" + bytes(8)
    cut_short(target, consume_bad, m.CONSUME_REQUEST, "a CONSUME without its batch size")
