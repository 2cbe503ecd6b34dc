"""Mini-Kafka errors: the error path's layout and topics that are not UTF-8, refused
(``doc``) or read with U+FFFD (``real``) (SPEC.md, area "errors").  Requests cut short
(minikafka/errors/2) are judged with the robustness cases, whose rule for a target that
stops serving they share (test_robustness.py).  Frames sent raw are decoded in a comment."""

from __future__ import annotations

from conformance.protocols.minikafka import codec
from conformance.protocols.minikafka import messages as m
from conformance.suite.case import Violation, case, require, unsupported
from conformance.suite.minikafka.steps import consume, produce
from conformance.suite.minikafka.verify import (
    Reply,
    call,
    doc,
    frame_hex,
    require_failure,
    require_framed,
    require_type,
)
from conformance.suite.shown import show
from conformance.suite.target import CaseContext


def require_error_layout(reply: Reply, request_type: int, what: str) -> None:
    """An error reply (success byte 0) reads whole as ``[type][0x00][int32 error length]
    [error UTF-8]`` with a message that is not empty (MK-ERR-1); its type byte is
    MK-FRAME-4's, bytes after it that do not frame MK-FRAME-1's."""
    want = m.REPLY_TYPE[request_type]
    require_type(reply, request_type, what)
    if not isinstance(reply.reply, codec.Failure):
        require_framed(reply, what)
        raise Violation(
            "MK-ERR-1",
            f"{what}: answered the error path as {frame_hex(reply.payload)}, which does not read"
            f" as [0x{want:02x}][0x00][int32 error length][error UTF-8] filling its frame"
            f" ({reply.problem})",
            reply.at("type", "success", "error length", "error"),
        )
    require(
        reply.reply.error != "",
        "MK-ERR-1",
        f"{what}: an error reply with error length 0, expected a message",
        reply.at("error length", "error"),
    )


@case("minikafka/errors/1", "MK-ERR-1")
def test_an_error_reply_is_type_0_length_and_a_message(target: CaseContext) -> None:
    """Every error reply the target gives to an empty topic or (in doc) an offset of -1 reads as
    type, 0x00, error length and a message.

    MK-ERR-1: "an error reply is `[reply type][0x00][int32 error length][error UTF-8]`, filling
    its frame exactly, with a non-empty message."

    Whether these are refused is not this case's business (the real server accepts them
    all): only the error replies are judged, and a target that gives none is UNSUPPORTED.
    """
    tries: list[tuple[codec.Request, str]] = [(codec.Produce("", b"x"), "PRODUCE to topic ''")]
    if doc(target):  # in real, a negative offset is an empty success (MK-CONS-10)
        topic = target.name("errors")
        with target.connect() as conn:
            produce(target, conn, topic, b"x")
        tries.append((codec.Consume(topic, -1, 5), f"CONSUME {show(topic)} offset=-1 batch=5"))
    errors = 0
    for request, what in tries:
        with target.connect() as conn:  # a target may close on either: each on its own
            try:
                reply = call(target, conn, request, "MK-FRAME-3", what)
            except Violation as exc:
                if exc.evidence.ending == "close":
                    continue  # no reply to judge
                raise
            if reply.failure:
                errors += 1
                require_error_layout(reply, request.type, what)
    if not errors:
        unsupported(
            f"the target answered none of {', '.join(w for _, w in tries)} with its error path:"
            " no error reply to judge",
            "MK-ERR-1",
        )


BAD_UTF8 = b"\xff\xfe"


@case("minikafka/errors/3", "MK-ERR-3")
def test_a_topic_that_is_not_utf8_is_refused(target: CaseContext) -> None:
    """In doc, PRODUCE and CONSUME of a topic holding bytes ff fe are refused with the error path.

    MK-ERR-3: "a request whose topic is not valid UTF-8 is refused with the error path of its
    reply."
    """
    topic = target.name("utf8").encode() + BAD_UTF8
    shown = show(topic)
    for request, what in (
        (codec.Produce(topic, b"x"), f"PRODUCE to the topic {shown}"),
        (codec.Consume(topic, 0, 1), f"CONSUME of the topic {shown}"),
    ):
        # each on a connection of its own: serving on after an error reply is MK-ERR-2's
        with target.connect() as conn:
            try:
                reply = call(target, conn, request, "MK-ERR-3", what)
            except Violation as exc:  # a close is no error reply: say so
                if exc.evidence.ending != "close":
                    raise
                raise Violation(
                    "MK-ERR-3",
                    f"{what}: the target closed the connection instead of an error reply",
                    exc.evidence,
                ) from None
            require_failure(reply, request.type, "MK-ERR-3", what)


@case("minikafka/errors/4", "MK-ERR-4")
def test_bytes_that_are_not_utf8_read_as_u_fffd(target: CaseContext) -> None:
    """In real, a topic ending in ff and one ending in fe are one topic, as the real server reads
    both bytes as U+FFFD.

    MK-ERR-4: "bytes of a topic that are not valid UTF-8 are each read as U+FFFD, so topics that
    differ only in such bytes are the same topic."
    """
    base = target.name("fffd").encode()
    ff, fe = base + b"\xff", base + b"\xfe"
    with target.connect() as conn:
        put = produce(target, conn, ff, b"via ff", "MK-ERR-4")
        got, reply = consume(target, conn, fe, put.offset, 1, "MK-ERR-4")
        datas = [c.data for c in got.messages[:1]]
        require(
            datas == [b"via ff"],
            "MK-ERR-4",
            f"CONSUME {show(fe)} offset={put.offset} batch=1 after PRODUCE 'via ff' to"
            f" {show(ff)}: {show(datas[0]) if datas else 'no messages'}, expected 'via ff'"
            " (the same topic)",
            put.reply.at("offset") + reply.at("messages count", "messages[0].data"),
        )
        again = produce(target, conn, fe, b"via fe", "MK-ERR-4")
        require(
            again.offset == put.offset + 1,
            "MK-ERR-4",
            f"PRODUCE to {show(fe)} after one to {show(ff)} at offset {put.offset}: offset"
            f" {again.offset}, expected {put.offset + 1} (the same topic)",
            put.reply.at("offset") + again.reply.at("offset"),
        )
