"""Cursus gzip compression of batch bodies (SPEC.md, area "compression").

These cases need a target configured for gzip (``--compression gzip``); against any
other they are UNSUPPORTED.
"""

from __future__ import annotations

import zlib

from conformance.protocols.cursus import codec
from conformance.protocols.cursus.messages import FRAME_LIMIT, GZIP_MAGIC
from conformance.suite.case import Violation, case, require, unsupported
from conformance.suite.cursus.verify import (
    batch,
    consume_all,
    create_topic,
    expect_close_or_error,
    kind_of_payload,
    messages,
    reply_payload,
    send,
    shown,
)
from conformance.suite.shown import show_all
from conformance.suite.target import CaseContext


def _needs_gzip(target: CaseContext) -> None:
    if target.options.get("compression") != "gzip":
        unsupported("the target is not configured for gzip (--compression gzip)", "CUR-COMP-1")


@case("cursus/compression/1", "CUR-COMP-1")
def test_a_gzip_batch_is_inflated_and_stored(target: CaseContext) -> None:
    """A gzip body (1F 8B ...) is inflated and the batch inside it processed.

    CUR-COMP-1: "a broker configured for gzip inflates a batch payload that begins with the gzip
    magic 0x1F 0x8B and processes the batch inside it."
    """
    _needs_gzip(target)
    with target.connect() as conn:
        topic = create_topic(target, conn, "gz")
        send(conn, batch(topic, messages(b"compressed-1", b"compressed-2")), gzip=True)
        read = reply_payload(target, conn, "CUR-COMP-1", "a gzip batch")
        require(
            b'"OK"' in read.payload,
            "CUR-COMP-1",
            f"a gzip batch got {shown(read, 120)}, expected an OK ack",
            read.at(*kind_of_payload(read.payload), asked=("gzip body",)),
        )
        got = consume_all(target, conn, topic)
        require(
            got.payloads() == [b"compressed-1", b"compressed-2"],
            "CUR-COMP-1",
            f"stored payloads {show_all(got.payloads())}, expected 'compressed-1', 'compressed-2'",
            got.at("payload"),
        )


@case("cursus/compression/2", "CUR-COMP-2")
def test_the_ack_to_a_gzip_batch_is_plain_json(target: CaseContext) -> None:
    """Replies are never compressed: the ack to a compressed batch is plain UTF-8 JSON.

    CUR-COMP-2: "replies are never compressed: the ack to a compressed batch is plain UTF-8 JSON."
    """
    _needs_gzip(target)
    with target.connect() as conn:
        topic = create_topic(target, conn, "gzack")
        send(conn, batch(topic, messages(b"x" * 1000)), gzip=True)
        read = reply_payload(target, conn, "CUR-COMP-2", "a gzip batch")
        if read.payload[:2] == GZIP_MAGIC:
            raise Violation(
                "CUR-COMP-2",
                "the ack to a gzip batch is itself gzip-compressed (1F 8B), expected plain JSON",
                read.at("gzip body"),
            )
        require(
            read.payload[:1] == b"{" and b'"OK"' in read.payload,
            "CUR-COMP-1",
            f"a gzip batch got {shown(read, 120)}, expected an OK ack",
            read.at(*kind_of_payload(read.payload), asked=("gzip body",)),
        )


@case("cursus/compression/3", "CUR-COMP-3")
def test_gzip_without_the_magic_inside_is_refused(target: CaseContext) -> None:
    """A gzip body whose inflated content does not begin with 0xBA7C is refused.

    CUR-COMP-3: "a gzip body that ... whose inflated content does not begin with 0xBA7C, is refused
    with an error."
    """
    _needs_gzip(target)
    with target.connect() as conn:
        send(conn, codec.gzip_body(b"LIST"))
        expect_close_or_error(target, conn, "CUR-COMP-3", "gzip of 'LIST'")


@case("cursus/compression/4", "CUR-COMP-3")
def test_a_corrupt_gzip_body_is_refused(target: CaseContext) -> None:
    """A gzip body that does not inflate is refused with an error.

    CUR-COMP-3: "a gzip body that does not inflate ... is refused with an error."
    """
    _needs_gzip(target)
    with target.connect() as conn:
        topic = target.name("corrupt")
        good = codec.gzip_body(codec.encode_batch(batch(topic, messages(b"x"))))
        send(conn, good[:10] + bytes(b ^ 0x5A for b in good[10:]))
        expect_close_or_error(target, conn, "CUR-COMP-3", "a corrupt gzip body")


@case("cursus/compression/5", "CUR-COMP-4")
def test_a_body_inflating_past_the_frame_limit_is_refused(target: CaseContext) -> None:
    """Inflation is capped at 64 MiB: a body that inflates past it is refused.

    CUR-COMP-4: "inflation is capped at the 64 MiB frame limit: a body that inflates past it is
    refused, not expanded."
    """
    _needs_gzip(target)
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = codec.encode_batch(batch(target.name("bomb"), ()))
    bomb = c.compress(head) + c.compress(bytes(FRAME_LIMIT)) + c.flush()  # 64 MiB + header
    with target.connect() as conn:
        send(conn, bomb)
        expect_close_or_error(target, conn, "CUR-COMP-4", f"a {len(bomb)}-byte gzip bomb")
