"""Kafka request and response headers (SPEC.md, area "headers")."""

from __future__ import annotations

from conformance.evidence import combined, decoded
from conformance.protocols.kafka import codec
from conformance.suite.case import Violation, case, require
from conformance.suite.kafka.verify import KafkaClient, expect_code, need, usable
from conformance.suite.shown import show_all
from conformance.suite.target import CaseContext


def _header(key: int, version: int, corr: int) -> bytes:
    return (
        key.to_bytes(2, "big") + version.to_bytes(2, "big") + corr.to_bytes(4, "big", signed=True)
    )


@case("kafka/headers/1", "KAF-HDR-1")
def test_header_v1_with_a_client_id_is_read(target: CaseContext) -> None:
    """A request header v1 (key, version, correlation id, int16-length client id) is read.

    KAF-HDR-1: "a request header carries api_key (int16), api_version (int16), correlation_id
    (int32) and, from header v1, client_id (a nullable int16-length string ..."
    """
    with KafkaClient(target) as k:
        # ApiVersions v1, #31, client id "conformance-hdr1" (16 bytes), empty body
        payload = _header(18, 1, 31) + (16).to_bytes(2, "big") + b"conformance-hdr1"
        k.raw(codec.frame(payload), "ApiVersions v1 #31, header v1")
        reply = k.payload("KAF-HDR-1", "ApiVersions v1 with header v1")
        answered = k.exchange()
    _, body = codec.decode_response(reply, 18, 1, header_version=0)
    expect_code(
        decoded(body, answered), "error_code", "NONE", "KAF-HDR-1", "ApiVersions v1 with header v1"
    )


@case("kafka/headers/2", "KAF-HDR-1")
def test_header_v2_with_a_compact_client_id_and_tags_is_read(target: CaseContext) -> None:
    """A flexible request (header v2: int16-length client id, then tagged fields) is read.

    KAF-HDR-1: "... client_id (a nullable int16-length string, also in header v2); header v2
    (flexible request versions) ends with tagged fields."
    """
    need(target, "ApiVersions", 3)
    with KafkaClient(target) as k:
        body = k.call(
            "ApiVersions",
            3,
            {"client_software_name": "conformance", "client_software_version": "1"},
            "KAF-HDR-1",
            "ApiVersions v3 with header v2",
        )
    expect_code(body, "error_code", "NONE", "KAF-HDR-1", "ApiVersions v3 with header v2")


@case("kafka/headers/3", "KAF-HDR-2")
def test_correlation_ids_are_echoed_whatever_their_value(target: CaseContext) -> None:
    """Every response begins with the correlation id of its request: 0, -1, 2^31-1, pipelined.

    KAF-HDR-2: "every response begins with the correlation id of the request it answers."
    """
    ids = [0, -1, 0x7FFFFFFF, -(1 << 31), 12345]
    with KafkaClient(target) as k:
        frames = [codec.frame(_header(18, 0, c) + b"\xff\xff") for c in ids]
        k.raw(b"".join(frames), f"ApiVersions v0 with correlation ids {show_all(ids)}")
        got, seen = [], []
        for c in ids:
            got.append(codec.correlation_of(k.payload("KAF-HDR-2", f"answer to #{c}")))
            seen.append(k.exchange().on("header.correlation_id"))
    require(
        got == ids,
        "KAF-HDR-2",
        f"correlation ids {show_all(got)} answered, expected {show_all(ids)}",
        combined(e for e, c, want in zip(seen, got, ids, strict=True) if c != want),
    )


@case("kafka/headers/4", "KAF-HDR-3")
def test_flexible_responses_have_header_v1_and_api_versions_v0(target: CaseContext) -> None:
    """A response to a flexible version has header v1 (a tag section after the correlation
    id); the ApiVersions response keeps header v0.

    KAF-HDR-3: "a response to a flexible request version has response header v1 (correlation id,
    then tagged fields), except the ApiVersions response, whose header is always v0."
    """
    v = usable(target, "Metadata", lowest=9)
    with KafkaClient(target) as k:
        corr = k.send("Metadata", v, {"topics": [], "allow_auto_topic_creation": False})
        reply = k.payload("KAF-HDR-3", f"Metadata v{v}")
        got = codec.correlation_of(reply)
        require(
            got == corr,
            "KAF-HDR-2",
            f"Metadata v{v}: correlation id {got}, expected {corr}",
            k.exchange(corr).on("header.correlation_id"),
        )
        try:
            codec.decode_response(reply, 3, v, header_version=1)
        except codec.KafkaError as exc:
            raise Violation(
                "KAF-HDR-3",
                f"Metadata v{v} does not decode with header v1: {exc}",
                k.exchange(corr),  # the reply as a whole: its header is what does not decode
            ) from None
        need(target, "ApiVersions", 3)
        corr = k.send("ApiVersions", 3, {})
        reply = k.payload("KAF-HDR-3", "ApiVersions v3")
        try:
            codec.decode_response(reply, 18, 3, header_version=0)
        except codec.KafkaError as exc:
            raise Violation(
                "KAF-HDR-3",
                f"ApiVersions v3 does not decode with header v0: {exc}",
                k.exchange(corr),
            ) from None


@case("kafka/headers/5", "KAF-HDR-4")
def test_every_response_has_header_v0(target: CaseContext) -> None:
    """Every response has header v0, ApiVersions v3's (a flexible body) included.

    KAF-HDR-4: "every response has header v0 (the correlation id alone), whatever the request's
    version."
    """
    with KafkaClient(target) as k:
        corr = k.send("ApiVersions", 3, {})
        reply = k.payload("KAF-HDR-4", "ApiVersions v3")
        answered = k.exchange(corr)
    try:
        codec.decode_response(reply, 18, 3, header_version=0)
    except codec.KafkaError as exc:
        raise Violation(
            "KAF-HDR-4", f"ApiVersions v3 does not decode with header v0: {exc}", answered
        ) from None


@case("kafka/headers/6", "KAF-HDR-5")
def test_a_null_client_id_is_accepted(target: CaseContext) -> None:
    """A null client id (int16 length -1) is accepted.

    KAF-HDR-5: "a null client id (int16 length -1) in a request header is accepted: the request is
    answered as if a client id had been given."
    """
    v = usable(target, "Metadata", highest=8)
    with KafkaClient(target) as k:
        k.call(
            "Metadata",
            v,
            {"topics": []},
            "KAF-HDR-5",
            f"Metadata v{v}, null client id",
            client_id=None,
        )


@case("kafka/headers/7", "KAF-HDR-6")
def test_unknown_tagged_fields_in_header_and_body_are_skipped(target: CaseContext) -> None:
    """Unknown tagged fields in a flexible header and body are skipped.

    KAF-HDR-6: "tagged fields a broker does not know, in a flexible request header or body, are
    skipped: the request is answered as if they were absent."
    """
    v = usable(target, "Metadata", lowest=9)
    with KafkaClient(target) as k:
        plain = codec.encode_request(3, v, {"topics": []}, correlation_id=77, client_id="c")
        # header v2: key, version, #77, client id "c" (int16 length), then the tag section
        head = _header(3, v, 77) + b"\x00\x01c"
        assert plain.startswith(head + b"\x00")
        body = plain[len(head) + 1 :]
        tags = b"\x01" + b"\x63\x03abc"  # one tag: 99, 3 bytes
        assert body.endswith(b"\x00")
        payload = head + tags + body[:-1] + b"\x01" + b"\x64\x02zz"  # body tag 100, 2 bytes
        k.raw(codec.frame(payload), f"Metadata v{v} #77 with unknown tags 99 (header), 100 (body)")
        k.answer("Metadata", v, 77, "KAF-HDR-6", f"Metadata v{v} with unknown tagged fields")
