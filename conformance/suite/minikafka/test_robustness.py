"""Mini-Kafka robustness: after a request it cannot handle, a broker goes on serving (SPEC.md,
area "robustness").

Each bad input goes on a connection a FLUSH was just answered on; an error reply, a close
or nothing there is allowed, and the case closes it, then requires a FLUSH on a NEW
connection to be answered (the real server serves one connection at a time, so the first is
closed before the second is opened).  The real server stops serving everyone after each of
them while its port still accepts: these SHOULDs WARN it, decided on that silence
(:func:`.steps.goes_on_serving`), and the robustness cases after the first one that stops it
are UNSUPPORTED at once ("not checked"): this file sorts last, so no other case meets the
stopped target."""

from __future__ import annotations

from conformance.suite.case import case
from conformance.suite.minikafka.steps import goes_on_serving
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
