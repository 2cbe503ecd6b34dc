"""What is derived from a schema declaration agrees with its codec: the Hypothesis values
of :mod:`conformance.wire.schema_strategies` encode, decode to themselves (as the codec
normalises them) and re-encode to the same bytes; the scapy layers of
:mod:`conformance.wire.schema_layers` build exactly the codec's bytes, dissect them back,
put lying lengths and counts on the wire when told to, and survive ``fuzz()``.

Kafka's declarations are the main example (every API, both directions, every version);
a small synthetic message covers the types Kafka does not use (varints, float64, a
nullable struct, arrays of arrays, a field that opts out of flexibility).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.packet import NoPayload, Packet, Raw, fuzz

from conformance.errors import ProtocolError
from conformance.protocols.kafka.apis import APIS, BY_NAME, REQUEST_HEADER, RESPONSE_HEADER
from conformance.protocols.kafka.messages import KAFKA
from conformance.wire.schema import (
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT32,
    STRING,
    UINT16,
    UNKNOWN_TAGS,
    UUID,
    UVARINT,
    VARINT,
    VARLONG,
    Array,
    Bool,
    Bytes,
    Message,
    Struct,
    Uuid,
    array_of,
    f,
    message,
    struct_of,
)
from conformance.wire.schema_layers import NULL, NullList, layer, packet, scapy_name, struct_layer
from conformance.wire.schema_strategies import type_values, values
from conformance.wire.varint import uvarint

SYNTHETIC = message(
    "Synthetic",
    "0-2",
    "2+",
    [
        f("count", VARINT),
        f("big", VARLONG, "1+"),
        f("size", UVARINT),
        f("ratio", FLOAT64),
        f("port", UINT16),
        f("flag", BOOL, default=True),
        f("id", UUID),
        f("legacy_name", STRING, nullable="0+", flexible="none"),
        f("blob", BYTES, nullable="1+"),
        f("matrix", array_of(array_of(INT8))),
        f("names", array_of(STRING), nullable="0+"),
        f("point", struct_of("Point", f("x", INT32), f("y", INT32, default=-1)), nullable="0+"),
        f("origin", struct_of("Origin", f("label", STRING))),
        f("note", STRING, "2+", nullable="2+", tag=0, tagged="2+"),
        f("extra", struct_of("Extra", f("z", VARINT)), "2+", nullable="2+", tag=3, tagged="2+"),
    ],
    encoding=KAFKA,
)
"""Every type and rule the Kafka declarations leave out."""

CASES = [
    (f"{api.name}{side.capitalize()}-v{v}", msg, v)
    for api in APIS.values()
    for side, msg in (("request", api.request), ("response", api.response))
    for v in range(api.low, api.high + 1)
]
CASES += [(f"RequestHeader-v{v}", REQUEST_HEADER, v) for v in range(3)]
CASES += [(f"ResponseHeader-v{v}", RESPONSE_HEADER, v) for v in range(2)]
CASES += [(f"Synthetic-v{v}", SYNTHETIC, v) for v in range(3)]
IDS = [c[0] for c in CASES]
FEW = settings(
    max_examples=5,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example],
)

PRODUCE = BY_NAME["Produce"].request
METADATA = BY_NAME["Metadata"].request
API_VERSIONS_RESPONSE = BY_NAME["ApiVersions"].response


def _topic_produce_data() -> Struct:
    topic_data = next(fl.type for fl in PRODUCE.body.fields if fl.name == "topic_data")
    assert isinstance(topic_data, Array) and isinstance(topic_data.element, Struct)
    return topic_data.element


TOPIC_PRODUCE_DATA = _topic_produce_data()


def normal(struct: Struct, value: Any, version: int, flexible: bool) -> dict[str, Any]:
    """``value`` as decoding its encoding gives it back, worked out from the declaration
    alone: defaults filled in, a tagged field at its default is the default itself."""
    value = {} if value is None else value
    out: dict[str, Any] = {}
    for fl in struct.fields:
        if version not in fl.versions:
            continue
        v = value.get(fl.name, fl.default_at(version))
        fx = flexible if fl.flexible is None else version in fl.flexible
        if flexible and version in fl.tagged and v == fl.default_at(version):
            out[fl.name] = fl.default_at(version)
        else:
            out[fl.name] = _normal_value(fl.type, v, version, fx)
    if flexible and value.get(UNKNOWN_TAGS):
        out[UNKNOWN_TAGS] = dict(value[UNKNOWN_TAGS])
    return out


def _normal_value(typ: Any, v: Any, version: int, flexible: bool) -> Any:
    if v is None and not isinstance(typ, Struct):
        return None
    if isinstance(typ, Struct):
        return None if v is None else normal(typ, v, version, flexible)
    if isinstance(typ, Array):
        return [_normal_value(typ.element, x, version, flexible) for x in v]
    if isinstance(typ, Bool):
        return bool(v)
    if isinstance(typ, Uuid):
        return str(uuid.UUID(str(v)))
    if isinstance(typ, Bytes):
        return bytes(v)
    return v


# ------------------------------------------------------------------ strategies


@pytest.mark.parametrize(("case", "msg", "version"), CASES, ids=IDS)
@FEW
@given(data=st.data())
def test_values_round_trip_through_the_codec(
    case: str, msg: Message, version: int, data: st.DataObject
) -> None:
    value = data.draw(values(msg, version, unknown_tags=True))
    wire = msg.encode(value, version)
    decoded = msg.decode(wire, version)
    assert decoded == normal(msg.body, value, version, msg.is_flexible(version))
    assert msg.encode(decoded, version) == wire


def test_values_are_cached_per_message_and_version() -> None:
    assert values(PRODUCE, 9) is values(PRODUCE, 9)
    assert values(PRODUCE, 9) is not values(PRODUCE, 8)
    assert values(PRODUCE, 9, max_items=1) is not values(PRODUCE, 9)


@FEW
@given(data=st.data())
def test_overrides_by_path_and_by_type_name(data: st.DataObject) -> None:
    overrides = {"records": st.just(b"BATCH"), "topic_data.partition_data.index": st.just(7)}
    value = data.draw(values(PRODUCE, 9, overrides=overrides, max_items=2))
    parts = [p for t in value["topic_data"] for p in t["partition_data"]]
    assert all(p["records"] == b"BATCH" and p["index"] == 7 for p in parts)


@FEW
@given(data=st.data())
def test_type_values_draw_only_what_the_type_holds(data: st.DataObject) -> None:
    text = data.draw(type_values(STRING, 0, False, nullable=True))
    assert text is None or (isinstance(text, str) and len(text) <= 20)
    n = data.draw(type_values(VARLONG, 0, True))
    assert -(2**63) <= n < 2**63
    items = data.draw(type_values(array_of(INT32), 0, False, max_items=2))
    assert len(items) <= 2


def test_strategies_draw_nulls_and_tagged_values_somewhere() -> None:
    seen: dict[str, set[bool]] = {"null": set(), "tagged": set()}

    @settings(max_examples=60, deadline=None, database=None)
    @given(values(API_VERSIONS_RESPONSE, 3), values(PRODUCE, 3))
    def draw(api: dict[str, Any], produce: dict[str, Any]) -> None:
        seen["tagged"].add(api["finalized_features_epoch"] == -1)
        seen["null"].add(produce["transactional_id"] is None)

    draw()
    assert seen == {"null": {True, False}, "tagged": {True, False}}


# ---------------------------------------------------------------------- layers


@pytest.mark.parametrize(("case", "msg", "version"), CASES, ids=IDS)
def test_layer_defaults_build_the_codec_defaults(case: str, msg: Message, version: int) -> None:
    wire = msg.encode({}, version)
    assert bytes(layer(msg, version)()) == wire
    assert bytes(packet(msg, version, {})) == wire


@pytest.mark.parametrize(("case", "msg", "version"), CASES, ids=IDS)
@FEW
@given(data=st.data())
def test_packet_builds_the_codec_bytes_and_dissects_back(
    case: str, msg: Message, version: int, data: st.DataObject
) -> None:
    value = data.draw(values(msg, version, unknown_tags=True))
    wire = msg.encode(value, version)
    assert bytes(packet(msg, version, value)) == wire
    dissected = layer(msg, version)(wire)
    assert isinstance(dissected.payload, NoPayload)  # every byte went into a field
    _forget_lengths(dissected)
    assert bytes(dissected) == wire


def _forget_lengths(pkt: Packet) -> None:
    """Set every length, count and presence field back to None (recomputed on build)."""
    pkt.clear_cache()
    for fld in pkt.fields_desc:
        if hasattr(fld, "how"):
            pkt.setfieldval(fld.name, None)
        value = pkt.getfieldval(fld.name)
        for sub in value if isinstance(value, list) else [value]:
            if isinstance(sub, Packet) and not isinstance(sub, Raw):
                _forget_lengths(sub)


def test_field_names_follow_the_schema_and_dodge_scapy_attributes() -> None:
    assert scapy_name("name") == "name_"
    assert scapy_name("payload") == "payload_"
    assert scapy_name("topic_data") == "topic_data"
    top = layer(PRODUCE, 9)
    assert top.__name__ == "ProduceRequest_v9"
    assert [fl.name for fl in top.fields_desc] == [
        "transactional_id_len",
        "transactional_id",
        "acks",
        "timeout_ms",
        "topic_data_count",
        "topic_data",
        "tagged_fields_count",
        "tagged_fields",
    ]
    topic = top().get_field("topic_data").cls  # type: ignore[union-attr]
    assert topic is struct_layer(TOPIC_PRODUCE_DATA, 9, PRODUCE.ctx(9))
    assert [fl.name for fl in topic.fields_desc][:2] == ["name_len", "name_"]
    assert layer(PRODUCE, 9) is top


def test_a_lying_string_length_goes_on_the_wire_with_the_data_unchanged() -> None:
    value = {"transactional_id": "abc", "acks": 1}
    classic = packet(PRODUCE, 3, value)
    classic.transactional_id_len = 1000
    assert bytes(classic) == b"\x03\xe8abc" + PRODUCE.encode(value, 3)[5:]
    compact = packet(PRODUCE, 9, value)
    compact.transactional_id_len = 1000
    assert bytes(compact) == uvarint(1000) + b"abc" + PRODUCE.encode(value, 9)[4:]


def test_a_lying_count_goes_on_the_wire_with_the_items_unchanged() -> None:
    value = {"topic_data": [{"name": "t", "partition_data": []}]}
    # the count follows transactional_id (null), acks and timeout_ms: 8 bytes in, or 7
    for version, at, honest, lie in ((3, 8, 4, b"\xff" * 4), (9, 7, 1, b"\xff" * 4 + b"\x0f")):
        wire = PRODUCE.encode(value, version)
        pkt = packet(PRODUCE, version, value)
        pkt.topic_data_count = -1
        assert bytes(pkt) == wire[:at] + lie + wire[at + honest :]


def test_nulls_are_computed_and_dissected() -> None:
    pkt = packet(METADATA, 1, {"topics": None})
    assert isinstance(pkt.topics, NullList)
    assert bytes(pkt) == b"\xff\xff\xff\xff" == METADATA.encode({"topics": None}, 1)
    assert isinstance(layer(METADATA, 1)(bytes(pkt)).topics, NullList)
    assert bytes(packet(METADATA, 9, {"topics": None})) == b"\x00\x01\x00\x00\x00"
    pkt = packet(METADATA, 9, {})
    pkt.topics = None  # assigning None means null too
    assert pkt.topics is not NULL and isinstance(pkt.topics, NullList)
    assert bytes(pkt)[0] == 0
    produce = layer(PRODUCE, 3)(PRODUCE.encode({"transactional_id": None}, 3))
    assert produce.transactional_id is None and produce.transactional_id_len == -1


def test_tagged_fields_are_counted_sized_and_dissected() -> None:
    value = {"finalized_features_epoch": 5, UNKNOWN_TAGS: {9: b"xy"}}
    wire = API_VERSIONS_RESPONSE.encode(value, 3)
    pkt = packet(API_VERSIONS_RESPONSE, 3, value)
    assert bytes(pkt) == wire
    assert [t.tag for t in pkt.tagged_fields] == [1, 9]
    back = layer(API_VERSIONS_RESPONSE, 3)(wire)
    assert back.tagged_fields_count == 2
    assert back.tagged_fields[0].value.finalized_features_epoch == 5
    assert back.tagged_fields[1].value.load == b"xy"
    pkt.tagged_fields[0].value_len = 99
    pkt.tagged_fields_count = 7
    lied = bytes(pkt)
    assert len(lied) == len(wire) and lied != wire
    assert lied.endswith(b"\x07\x01\x63" + b"\x00" * 7 + b"\x05\x09\x02xy")


def test_synthetic_types_build_the_codec_bytes() -> None:
    value = {
        "count": -3,
        "big": -(2**40),
        "size": 300,
        "ratio": 1.5,
        "flag": False,
        "legacy_name": None,
        "matrix": [[1, -1], []],
        "names": ["a", "bc"],
        "point": None,
        "extra": {"z": -1},
    }
    for version in range(3):
        wire = SYNTHETIC.encode(value, version)
        assert bytes(packet(SYNTHETIC, version, value)) == wire
        back = layer(SYNTHETIC, version)(wire)
        assert back.count == -3 and back.size == 300 and back.point is None
        assert back.point_present == -1 and back.legacy_name_len == -1
        assert [x.value for x in back.names] == [b"a", b"bc"]
    assert bytes(packet(SYNTHETIC, 2, value))[:2] == b"\x05\xff"  # zigzag -3, then big


@pytest.fixture
def seeded_random() -> Iterator[None]:
    """scapy's ``fuzz`` draws from the module ``random``: seeded here, restored after."""
    state = random.getstate()
    yield
    random.setstate(state)


def _framed(msg: Message, version: int, data: bytes) -> None:
    """Lengths and counts were left computed: the codec reads the message or refuses a
    value (bad UTF-8), never the framing, and the layer dissects it to the same bytes."""
    try:
        msg.decode(data, version)
    except ProtocolError as exc:
        assert "not valid UTF-8" in str(exc), exc
    dissected = layer(msg, version)(data)
    assert isinstance(dissected.payload, NoPayload)
    assert bytes(dissected) == data


@pytest.mark.usefixtures("seeded_random")
def test_fuzz_builds_bytes_that_frame_as_the_message() -> None:
    picks = [(PRODUCE, 3), (PRODUCE, 9), (METADATA, 12), (API_VERSIONS_RESPONSE, 3)]
    picks += [(BY_NAME["Fetch"].response, 16), (SYNTHETIC, 0), (SYNTHETIC, 2)]
    example: Mapping[str, Any] = {"topic_data": [{"name": "t", "partition_data": [{}]}]}
    for seed, (msg, version) in enumerate(picks * 3):
        random.seed(seed)
        _framed(msg, version, bytes(fuzz(layer(msg, version)())))
        built = packet(msg, version, example if msg is PRODUCE else {})
        fuzzed = fuzz(built)
        if msg is PRODUCE:
            fuzzed.topic_data[0] = fuzz(
                struct_layer(TOPIC_PRODUCE_DATA, version, PRODUCE.ctx(version))()
            )
        _framed(msg, version, bytes(fuzzed))
    random.seed(1)
    changed = {bytes(fuzz(layer(SYNTHETIC, 2)())) for _ in range(5)}
    assert len(changed) > 1


def test_a_dissected_packet_keeps_its_field_values() -> None:
    value = {"acks": -1, "topic_data": [{"name": "t", "partition_data": [{"index": 4}]}]}
    for version in (3, 9):
        pkt = layer(PRODUCE, version)(PRODUCE.encode(value, version))
        assert pkt.acks == -1 and pkt.topic_data_count == (1 if version == 3 else 2)
        part = pkt.topic_data[0].partition_data[0]
        assert pkt.topic_data[0].name_ == b"t" and part.index == 4 and part.records is None
