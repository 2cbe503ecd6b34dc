"""The Kafka message declarations: every version of every body round-trips, agrees with
two independent implementations (kafka-python 3's and aiokafka's ``protocol``
packages), survives hostile bytes, and annotates its frames field by field.

The peers: kafka-python's JSON-driven classes (Kafka 4.x definitions, each from its own
lowest valid version), kafka-python's hand-written ``kafka.protocol.old`` classes and
aiokafka's hand-written classes (the older versions).  For each API version a peer
knows, a value with non-default fields is built in the peer's own classes, encoded by
the peer, decoded by us and compared field by field, then encoded by us again to the
same bytes; and our encoding is read back by the peer to the same values.  With
kafka-python's JSON classes the header each body travels with is checked too.
"""

from __future__ import annotations

import importlib
import inspect
import itertools
import pkgutil
import random
import re
import tracemalloc
import uuid
import warnings
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any

import pytest

from conformance.errors import ProtocolError
from conformance.protocols.kafka.apis import (
    APIS,
    BY_NAME,
    REQUEST_HEADER,
    RESPONSE_HEADER,
    Api,
    request_header_version,
    response_header_version,
)
from conformance.wire.schema import (
    BOOL,
    FLOAT64,
    UUID,
    Array,
    Bytes,
    Field,
    Fixed,
    Message,
    String,
    Struct,
    Type,
    Varint,
)

# ------------------------------------------------------------------ the registry

CAPS = {
    "ApiVersions": 4,
    "Metadata": 12,
    "Produce": 12,
    "Fetch": 16,
    "ListOffsets": 9,
    "FindCoordinator": 5,
    "JoinGroup": 9,
    "SyncGroup": 5,
    "Heartbeat": 4,
    "LeaveGroup": 5,
    "OffsetCommit": 9,
    "OffsetFetch": 9,
    "CreateTopics": 7,
    "DeleteTopics": 6,
    "InitProducerId": 5,
    "AddPartitionsToTxn": 5,
    "AddOffsetsToTxn": 4,
    "EndTxn": 5,
    "TxnOffsetCommit": 5,
    "DescribeGroups": 5,
    "ListGroups": 5,
    "DeleteRecords": 2,
    "OffsetForLeaderEpoch": 4,
    "DescribeConfigs": 4,
    "CreatePartitions": 3,
    "IncrementalAlterConfigs": 1,
    "DescribeCluster": 1,
    "ConsumerGroupHeartbeat": 1,
    "ConsumerGroupDescribe": 1,
    "SaslHandshake": 1,
    "SaslAuthenticate": 2,
}
KEYS = {
    "Produce": 0,
    "Fetch": 1,
    "ListOffsets": 2,
    "Metadata": 3,
    "OffsetCommit": 8,
    "OffsetFetch": 9,
    "FindCoordinator": 10,
    "JoinGroup": 11,
    "Heartbeat": 12,
    "LeaveGroup": 13,
    "SyncGroup": 14,
    "DescribeGroups": 15,
    "ListGroups": 16,
    "ApiVersions": 18,
    "CreateTopics": 19,
    "DeleteTopics": 20,
    "InitProducerId": 22,
    "AddPartitionsToTxn": 24,
    "AddOffsetsToTxn": 25,
    "EndTxn": 26,
    "TxnOffsetCommit": 28,
    "DeleteRecords": 21,
    "OffsetForLeaderEpoch": 23,
    "DescribeConfigs": 32,
    "CreatePartitions": 37,
    "IncrementalAlterConfigs": 44,
    "DescribeCluster": 60,
    "ConsumerGroupHeartbeat": 68,
    "ConsumerGroupDescribe": 69,
    "SaslHandshake": 17,
    "SaslAuthenticate": 36,
}
# the first flexible version of each API, as Kafka 3.9 declares it
FLEXIBLE_FROM = {
    "Produce": 9,
    "Fetch": 12,
    "ListOffsets": 6,
    "Metadata": 9,
    "OffsetCommit": 8,
    "OffsetFetch": 6,
    "FindCoordinator": 3,
    "JoinGroup": 6,
    "Heartbeat": 4,
    "LeaveGroup": 4,
    "SyncGroup": 4,
    "DescribeGroups": 5,
    "ListGroups": 3,
    "ApiVersions": 3,
    "CreateTopics": 5,
    "DeleteTopics": 4,
    "InitProducerId": 2,
    "AddPartitionsToTxn": 3,
    "AddOffsetsToTxn": 3,
    "EndTxn": 3,
    "TxnOffsetCommit": 3,
    "DeleteRecords": 2,
    "OffsetForLeaderEpoch": 4,
    "DescribeConfigs": 4,
    "CreatePartitions": 2,
    "IncrementalAlterConfigs": 1,
    "DescribeCluster": 0,
    "ConsumerGroupHeartbeat": 0,
    "ConsumerGroupDescribe": 0,
    "SaslHandshake": None,  # never flexible (KAFKA-9577)
    "SaslAuthenticate": 2,
}
NO_PEER = {"ConsumerGroupHeartbeat", "ConsumerGroupDescribe"}
"""APIs neither peer declares (kafka-python 3.0's schemas and aiokafka stop before
KIP-848's): their round trips and hostile-bytes tests still run."""


def test_registry() -> None:
    assert list(APIS) == sorted(KEYS.values())
    assert {api.name: api.key for api in APIS.values()} == KEYS
    assert set(BY_NAME) == set(KEYS)
    for api in APIS.values():
        assert (api.low, api.high) == (0, CAPS[api.name]), api.name
        assert api.versions == api.request.versions == api.response.versions
        assert api.flexible_from == FLEXIBLE_FROM[api.name]
        assert api.request.name == f"{api.name}Request"
        assert api.response.name == f"{api.name}Response"
        for v in range(api.low, api.high + 1):
            since = FLEXIBLE_FROM[api.name]
            flexible = since is not None and v >= since
            assert request_header_version(api.key, v) == (2 if flexible else 1)
            expected = 0 if api.name == "ApiVersions" else (1 if flexible else 0)
            assert response_header_version(api.key, v) == expected
    assert str(REQUEST_HEADER.versions) == "0-2" and str(REQUEST_HEADER.flexible) == "2+"
    assert str(RESPONSE_HEADER.versions) == "0-1" and str(RESPONSE_HEADER.flexible) == "1+"


def test_headers() -> None:
    head = {"request_api_key": 3, "request_api_version": 12, "correlation_id": 7}
    # the client id keeps its int16 length in the flexible header v2
    v2 = REQUEST_HEADER.encode({**head, "client_id": "ab"}, 2)
    assert v2 == bytes.fromhex("0003 000c 00000007 0002") + b"ab" + b"\x00"
    assert REQUEST_HEADER.encode({**head, "client_id": None}, 1).endswith(b"\xff\xff")
    assert REQUEST_HEADER.decode(v2, 2) == {**head, "client_id": "ab"}
    assert REQUEST_HEADER.encode(head, 0) == bytes.fromhex("0003 000c 00000007")
    assert RESPONSE_HEADER.encode({"correlation_id": 7}, 1) == bytes.fromhex("00000007 00")


# ------------------------------------------------------------------ values


def fields_at(struct: Struct, version: int) -> list[Field]:
    return [fl for fl in struct.fields if version in fl.versions]


def defaults(struct: Struct, version: int) -> dict[str, Any]:
    """What decoding the encoding of ``{}`` must give: every field's default."""
    out: dict[str, Any] = {}
    for fl in fields_at(struct, version):
        value = fl.default_at(version)
        if isinstance(value, tuple):
            value = list(value)
        elif isinstance(fl.type, Struct) and isinstance(value, Mapping):
            value = {**defaults(fl.type, version), **value}
        out[fl.name] = value
    return out


class Sampler:
    """Values with no field at its default, deterministic; ``nulls`` makes every
    nullable field null instead; ``tagged`` False leaves tagged fields at their
    defaults (for peers that cannot name them)."""

    def __init__(self, nulls: bool = False, tagged: bool = True) -> None:
        self.n = itertools.count(1)
        self.nulls = nulls
        self.tagged = tagged

    def struct(self, struct: Struct, version: int, flexible: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for fl in fields_at(struct, version):
            if flexible and version in fl.tagged and not self.tagged:
                value = fl.default_at(version)
                out[fl.name] = dict(value) if isinstance(value, Mapping) else value
            elif self.nulls and version in fl.nullable:
                out[fl.name] = None
            else:
                out[fl.name] = self.value(fl.type, fl.default_at(version), version, flexible)
        return out

    def value(self, typ: Type, default: Any, version: int, flexible: bool) -> Any:
        n = next(self.n)
        if isinstance(typ, Struct):
            return self.struct(typ, version, flexible)
        if isinstance(typ, Array):
            return [self.value(typ.element, None, version, flexible) for _ in range(2)]
        if typ is BOOL:
            return not default
        if typ is UUID:
            return str(uuid.UUID(int=0x1234_0000_0000_0000_0000_0000_0000_0000 + n))
        if isinstance(typ, String):
            return f"s{n}-é"
        if isinstance(typ, Bytes):
            return bytes([n % 256, 0, 255]) * 2
        if typ is FLOAT64:
            return n + 0.5
        if isinstance(typ, Fixed | Varint):
            value = 1 + n % 100 if typ.name in ("int8", "uint8") else n * 3 + 1
            return value if value != default else value + 1
        raise AssertionError(f"no sample for {typ.name}")


def bodies(api: Api) -> Iterator[tuple[str, Message, int]]:
    for v in range(api.low, api.high + 1):
        yield "request", api.request, v
        yield "response", api.response, v


ALL = [
    pytest.param(kind, msg, v, id=f"{msg.name}-v{v}")
    for api in APIS.values()
    for kind, msg, v in bodies(api)
]
HEADERS = [
    pytest.param("header", REQUEST_HEADER, v, id=f"RequestHeader-v{v}") for v in range(3)
] + [pytest.param("header", RESPONSE_HEADER, v, id=f"ResponseHeader-v{v}") for v in range(2)]


@pytest.mark.parametrize(("kind", "msg", "version"), ALL + HEADERS)
def test_defaults_round_trip(kind: str, msg: Message, version: int) -> None:
    data = msg.encode({}, version)
    decoded = msg.decode(data, version)
    assert decoded == defaults(msg.body, version)
    assert msg.encode(decoded, version) == data
    assert msg.encode(defaults(msg.body, version), version) == data


@pytest.mark.parametrize("nulls", [False, True], ids=["values", "nulls"])
@pytest.mark.parametrize(("kind", "msg", "version"), ALL + HEADERS)
def test_values_round_trip(kind: str, msg: Message, version: int, nulls: bool) -> None:
    value = Sampler(nulls=nulls).struct(msg.body, version, msg.is_flexible(version))
    data = msg.encode(value, version)
    assert msg.decode(data, version) == value
    assert msg.encode(msg.decode(data, version), version) == data


def test_tagged_struct_defaults_are_left_out() -> None:
    """A tagged struct equal to Kafka's default struct is not written (Kafka's rule), and
    an absent one decodes to that default."""
    produce = BY_NAME["Produce"].response

    def body(**partition: Any) -> dict[str, Any]:
        return {"responses": [{"name": "t", "partition_responses": [{"index": 1, **partition}]}]}

    plain = produce.encode(body(), 10)
    unset = {"leader_id": -1, "leader_epoch": -1}
    assert produce.encode(body(current_leader=unset), 10) == plain
    decoded = produce.decode(plain, 10)
    assert decoded["responses"][0]["partition_responses"][0]["current_leader"] == unset
    moved = produce.encode(body(current_leader={"leader_id": 2, "leader_epoch": 5}), 10)
    assert len(moved) == len(plain) + 2 + 8 + 1  # tag, size, two int32, its own tags
    leader = produce.decode(moved, 10)["responses"][0]["partition_responses"][0]
    assert leader["current_leader"] == {"leader_id": 2, "leader_epoch": 5}


# ------------------------------------------------------------------ peers


def _peer_fit(msg: Message, version: int, value: dict[str, Any]) -> None:
    """Adjust a sample to what the peers can express."""
    if msg.name == "MetadataRequest" and version == 0 and value["topics"] is None:
        value["topics"] = []  # v0 cannot say "every topic"; both peers send [] then
    if msg.name == "ApiVersionsResponse":
        # both peers read an ApiVersions response with an error as v0 (what a broker
        # answers to a version it does not know), so only a success is compared
        value["error_code"] = 0


def _bits(value: int) -> set[int]:
    return {i for i in range(32) if (value & 0xFFFFFFFF) >> i & 1}


# field names that differ between a peer and Kafka's definitions: (message, peer's) -> ours
KP_ALIASES = {
    ("MetadataResponse", "authorized_operations"): (
        "cluster_authorized_operations",
        "topic_authorized_operations",
    ),
    ("DescribeClusterResponse", "authorized_operations"): ("cluster_authorized_operations",),
}


def _ours(struct: Struct, version: int, name: str, msg: str, aliases: Mapping[Any, Any]) -> Field:
    here = {fl.name: fl for fl in fields_at(struct, version)}
    for candidate in (name, *aliases.get((msg, name), ())):
        if candidate in here:
            return here[candidate]
    raise AssertionError(f"{msg} v{version}: the peer's field {name!r} is not ours ({list(here)})")


# kafka-python's JSON-driven classes --------------------------------------------

# kafka-python 3.0.12 reads its JSON with importlib.resources.read_text (deprecated)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.protocol import admin as kp_admin
    from kafka.protocol import consumer as kp_consumer
    from kafka.protocol import metadata as kp_metadata
    from kafka.protocol import producer as kp_producer
    from kafka.protocol import sasl as kp_sasl
    from kafka.protocol.schemas.fields.codecs import UUID as KpUUID
    from kafka.protocol.schemas.fields.codecs import BitField as KpBitField

KP_CLASSES: dict[str, Any] = {
    name: getattr(mod, name)
    for mod in (kp_admin, kp_consumer, kp_metadata, kp_producer)
    for name in mod.__all__
    if name.endswith(("Request", "Response"))
}
KP_CLASSES.update(  # kafka.protocol.sasl has no __all__
    {n: getattr(kp_sasl, n) for n in vars(kp_sasl) if n.startswith(("SaslHandshake", "SaslAuth"))}
)


def _kp_versions(cls: Any) -> range:
    low, _, high = cls.json["validVersions"].partition("-")
    return range(int(low), int(high) + 1)


KP_CASES = [
    pytest.param(msg, v, id=f"{msg.name}-v{v}")
    for api in APIS.values()
    for _, msg, v in bodies(api)
    if msg.name in KP_CLASSES and v in _kp_versions(KP_CLASSES[msg.name])
]


def _kp_kwargs(
    pstruct: Any, ours: Struct, value: Mapping[str, Any], v: int, msg: str
) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    for pf in pstruct.fields.values():
        if not pf.for_version_q(v):
            continue
        fl = _ours(ours, v, pf.name, msg, KP_ALIASES)
        kwargs[pf.name] = _kp_value(pf, fl.type, value[fl.name], v, msg)
    return kwargs


def _kp_value(pf: Any, typ: Type, value: Any, v: int, msg: str) -> Any:
    if value is None:
        return None
    if pf.is_struct():
        assert isinstance(typ, Struct)
        return pf.data_class(**_kp_kwargs(pf, typ, value, v, msg))
    if pf.is_struct_array():
        assert isinstance(typ, Array) and isinstance(typ.element, Struct)
        element = typ.element
        return [pf.data_class(**_kp_kwargs(pf, element, x, v, msg)) for x in value]
    if pf.is_array():
        return [_kp_simple(pf.array_of, x) for x in value]
    return _kp_simple(pf, value)


def _kp_simple(pf: Any, value: Any) -> Any:
    if pf._type is KpBitField:
        return _bits(value)
    if pf._type is KpUUID:
        return uuid.UUID(value)
    return value


def _kp_values(pstruct: Any, obj: Any, v: int) -> dict[str, Any]:
    """The fields of a peer object that exist in version ``v``, as plain values."""
    out: dict[str, Any] = {}
    for pf in pstruct.fields.values():
        if pf.for_version_q(v):
            value = getattr(obj, pf.name)
            if value is not None and pf.is_struct():
                value = _kp_values(pf, value, v)
            elif value is not None and pf.is_struct_array():
                value = [_kp_values(pf, x, v) for x in value]
            out[pf.name] = value
    return out


@pytest.mark.parametrize("nulls", [False, True], ids=["values", "nulls"])
@pytest.mark.parametrize(("msg", "version"), KP_CASES)
def test_kafka_python(msg: Message, version: int, nulls: bool) -> None:
    cls = KP_CLASSES[msg.name]
    value = Sampler(nulls=nulls).struct(msg.body, version, msg.is_flexible(version))
    _peer_fit(msg, version, value)
    peer = cls(version=version, **_kp_kwargs(cls._struct, msg.body, value, version, msg.name))
    data = bytes(peer.encode())
    assert msg.decode(data, version) == value
    assert msg.encode(value, version) == data
    # and the other way: the peer reads our bytes to the values it was built with
    back = cls.decode(msg.encode(value, version), version=version)
    assert _kp_values(cls._struct, back, version) == _kp_values(cls._struct, peer, version)


@pytest.mark.parametrize(("msg", "version"), KP_CASES)
def test_kafka_python_headers(msg: Message, version: int) -> None:
    """The peer frames a body with the header version our registry names (requests: v2
    when flexible, else v1; responses: v1 when flexible, else v0, ApiVersions always v0)."""
    cls = KP_CLASSES[msg.name]
    value = Sampler().struct(msg.body, version, msg.is_flexible(version))
    _peer_fit(msg, version, value)
    peer = cls(version=version, **_kp_kwargs(cls._struct, msg.body, value, version, msg.name))
    peer.with_header(correlation_id=7, client_id="cid")
    key = msg.extra["api_key"]
    if msg.name.endswith("Request"):
        head = {"request_api_key": key, "request_api_version": version, "correlation_id": 7}
        header = REQUEST_HEADER.encode(
            {**head, "client_id": "cid"}, request_header_version(key, version)
        )
    else:
        header = RESPONSE_HEADER.encode(
            {"correlation_id": 7}, response_header_version(key, version)
        )
    assert bytes(peer.encode(header=True)) == header + msg.encode(value, version)


# Where kafka-python's defaults differ from Kafka's definitions (we keep the definitions'):
KP_DEFAULT_DIFFERENCES: dict[str, dict[str, Any]] = {
    # kafka-python patches the default to -1, what a consumer sends; the definition has
    # no default (0)
    "ListOffsetsRequest": {"replica_id": -1},
}


@pytest.mark.parametrize(("msg", "version"), KP_CASES)
def test_kafka_python_defaults(msg: Message, version: int) -> None:
    """A peer object built with no field set encodes as our ``{}`` does."""
    peer = bytes(KP_CLASSES[msg.name](version=version).encode())
    assert peer == msg.encode(KP_DEFAULT_DIFFERENCES.get(msg.name, {}), version)


# the hand-written classes: kafka-python's kafka.protocol.old and aiokafka.protocol ------

_NAME = re.compile(r"^\w+?(Request|Response)_v(\d+)$")


def _hand_written(package: str) -> dict[tuple[str, int], Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pkg = importlib.import_module(package)
        modules: list[ModuleType] = [pkg]
        for info in pkgutil.iter_modules(pkg.__path__):
            modules.append(importlib.import_module(f"{package}.{info.name}"))
    # by API key, not name: aiokafka says OffsetRequest and ApiVersionRequest
    found: dict[tuple[str, int], Any] = {}
    for module in modules:
        for name, obj in vars(module).items():
            m = _NAME.match(name)
            key = getattr(obj, "API_KEY", None)
            if m and inspect.isclass(obj) and isinstance(key, int) and key in APIS:
                found[(f"{APIS[key].name}{m.group(1)}", int(m.group(2)))] = obj
    return found


HAND_PEERS = {
    "kafka-python (kafka.protocol.old)": _hand_written("kafka.protocol.old"),
    "aiokafka": _hand_written("aiokafka.protocol"),
}

# Where a hand-written peer's body differs from Kafka's definitions we keep the
# definitions; each difference is an expected failure here, so a fixed peer shows up.
# (Also, both packages' ListGroupsRequest_v2 says API_VERSION = 1, a slip only a header
# would show: the v1 and v2 bodies are the same, empty.)
_AIO_EPOCH = (
    "aiokafka's OffsetRequest_v4/v5 declare current_leader_epoch as Int64; Kafka's "
    "definition (and kafka-python) make it int32 (aiokafka does not use v4/v5)"
)
_GROUPED = (
    "the peer groups a topic's count and assignments in one struct (new_partitions); the "
    "bytes are Kafka's, only the positional grouping differs from the definition"
)
HAND_PEER_DIFFERENCES: dict[tuple[str, str, int], str] = {
    ("aiokafka", "ListOffsetsRequest", 4): _AIO_EPOCH,
    ("aiokafka", "ListOffsetsRequest", 5): _AIO_EPOCH,
    **{
        (peer, "CreatePartitionsRequest", v): _GROUPED
        for peer in ("kafka-python (kafka.protocol.old)", "aiokafka")
        for v in (0, 1)
    },
}


def _hand_case(peer: str, msg: Message, v: int) -> Any:
    why = HAND_PEER_DIFFERENCES.get((peer, msg.name, v))
    marks = [pytest.mark.xfail(raises=AssertionError, strict=True, reason=why)] if why else []
    short = "aiokafka" if "aio" in peer else "kp-old"
    return pytest.param(peer, msg, v, id=f"{short}-{msg.name}-v{v}", marks=marks)


HAND_CASES = [
    _hand_case(peer, msg, v)
    for peer, classes in HAND_PEERS.items()
    for api in APIS.values()
    for _, msg, v in bodies(api)
    if (msg.name, v) in classes
]


def _is(obj: Any, kind: str) -> bool:
    return type(obj).__name__ == kind or (inspect.isclass(obj) and obj.__name__ == kind)


_KINDS = {
    "Int8": "int8",
    "Int16": "int16",
    "Int32": "int32",
    "Int64": "int64",
    "BitField": "int32",
    "Boolean": "bool",
    "UUID": "uuid",
    "String": "string",
    "CompactString": "string",
    "Bytes": "bytes",
    "CompactBytes": "bytes",
    "Array": "array",
    "CompactArray": "array",
    "Schema": "struct",
}


def _peer_kind(ptype: Any) -> str:
    name = ptype.__name__ if inspect.isclass(ptype) else type(ptype).__name__
    return _KINDS.get(name, name)


def _our_kind(typ: Type) -> str:
    if isinstance(typ, Struct):
        return "struct"
    if isinstance(typ, Array):
        return "array"
    if isinstance(typ, Bytes):
        return "bytes"
    return typ.name


def _hand_tuple(
    schema: Any, ours: Struct, value: Mapping[str, Any], v: int, flexible: bool, where: str
) -> tuple[Any, ...]:
    """Our value as the peer's tuple: the hand-written schemas are positional, with their
    own field names, so fields are matched by position and their types must agree."""
    mine = [fl for fl in fields_at(ours, v) if not (flexible and v in fl.tagged)]
    theirs = [(n, t) for n, t in zip(schema.names, schema.fields, strict=True)]
    tags = [n for n, t in theirs if _peer_kind(t) == "TaggedFields"]
    theirs = [(n, t) for n, t in theirs if _peer_kind(t) != "TaggedFields"]
    assert len(tags) == (1 if flexible else 0), (
        f"{where}: tagged fields {tags}, flexible {flexible}"
    )
    assert len(theirs) == len(mine), (
        f"{where}: the peer has {[n for n, _ in theirs]}, we have {[fl.name for fl in mine]}"
    )
    out: list[Any] = []
    for (name, ptype), fl in zip(theirs, mine, strict=True):
        at = f"{where}.{fl.name}"
        out.append(_hand_value(ptype, fl.type, value[fl.name], v, flexible, f"{at} ({name})"))
    if flexible:
        out.append({})
    return tuple(out)


def _hand_value(ptype: Any, typ: Type, value: Any, v: int, flexible: bool, where: str) -> Any:
    kind = _peer_kind(ptype)
    flat = (
        kind == "array"
        and isinstance(typ, Array)
        and isinstance(typ.element, Struct)
        and _peer_kind(ptype.array_of) != "struct"
    )
    assert kind == _our_kind(typ) or (kind == "struct" and flat), f"{where}: {kind} != {typ.name}"
    if value is None:
        return None
    if isinstance(typ, Struct):
        return _hand_tuple(ptype, typ, value, v, flexible, where)
    if isinstance(typ, Array):
        element = typ.element
        if flat:  # a one-field struct the peer declares as its field's type
            assert isinstance(element, Struct)
            (only,) = fields_at(element, v)
            return [
                _hand_value(ptype.array_of, only.type, x[only.name], v, flexible, where)
                for x in value
            ]
        return [_hand_value(ptype.array_of, element, x, v, flexible, where) for x in value]
    if _is(ptype, "BitField"):
        return _bits(value)
    return value


@pytest.mark.parametrize("nulls", [False, True], ids=["values", "nulls"])
@pytest.mark.parametrize(("peer", "msg", "version"), HAND_CASES)
def test_hand_written_peer(peer: str, msg: Message, version: int, nulls: bool) -> None:
    cls = HAND_PEERS[peer][(msg.name, version)]
    value = Sampler(nulls=nulls, tagged=False).struct(msg.body, version, msg.is_flexible(version))
    _peer_fit(msg, version, value)
    flexible = msg.is_flexible(version)
    data = cls(*_hand_tuple(cls.SCHEMA, msg.body, value, version, flexible, msg.name)).encode()
    assert msg.decode(data, version) == value
    assert msg.encode(value, version) == data
    assert cls.decode(msg.encode(value, version)).encode() == data


def test_peer_coverage() -> None:
    """Every version of every body we declare is checked against at least one peer."""
    covered = {
        (msg.name, v)
        for api in APIS.values()
        for _, msg, v in bodies(api)
        if (msg.name in KP_CLASSES and v in _kp_versions(KP_CLASSES[msg.name]))
        or any((msg.name, v) in classes for classes in HAND_PEERS.values())
    }
    declared = {
        (msg.name, v)
        for api in APIS.values()
        if api.name not in NO_PEER
        for _, msg, v in bodies(api)
    }
    assert declared - covered == set()


# ------------------------------------------------------------------ hostile bytes

HOSTILE = [
    ("MetadataRequest", 0),
    ("MetadataResponse", 12),
    ("ProduceRequest", 3),
    ("FetchResponse", 12),
    ("ApiVersionsResponse", 3),
    ("JoinGroupRequest", 9),
    ("OffsetFetchResponse", 8),
]


def _message(name: str) -> Message:
    api = BY_NAME[name.removesuffix("Request").removesuffix("Response")]
    return api.request if name.endswith("Request") else api.response


@pytest.mark.parametrize(("name", "version"), HOSTILE)
def test_truncated_everywhere(name: str, version: int) -> None:
    msg = _message(name)
    data = msg.encode(Sampler().struct(msg.body, version, msg.is_flexible(version)), version)
    for cut in range(len(data)):
        with pytest.raises(ProtocolError):
            msg.decode(data[:cut], version)


@pytest.mark.parametrize(("name", "version"), HOSTILE)
def test_mutated_bytes_raise_only_protocol_errors(name: str, version: int) -> None:
    msg = _message(name)
    data = msg.encode(Sampler().struct(msg.body, version, msg.is_flexible(version)), version)
    rng = random.Random(f"{name}-{version}")
    for _ in range(300):
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            mutated[rng.randrange(len(mutated))] = rng.choice(
                (0, 0x7F, 0x80, 0xFF, rng.randrange(256))
            )
        try:
            decoded = msg.decode(bytes(mutated), version)
        except ProtocolError:
            continue
        assert msg.decode(msg.encode(decoded, version), version) == decoded


HUGE_COUNTS: list[tuple[str, int, bytes]] = [
    # int32 counts (non-flexible): a topic array, then a few bytes
    ("MetadataRequest", 0, b"\x7f\xff\xff\xff\x00\x01a"),
    ("DescribeGroupsRequest", 0, b"\x7f\xff\xff\xff\x00"),
    ("ProduceRequest", 0, b"\x00\x01\x00\x00\x00\x10\x7f\xff\xff\xff\x00\x01t"),
    # compact counts (flexible): uvarint 0x7fffffff + 1
    ("MetadataRequest", 9, b"\x80\x80\x80\x80\x08\x00"),
    ("ListGroupsRequest", 4, b"\x80\x80\x80\x80\x08\x00"),
    # a tagged-field count far beyond the bytes left
    ("ApiVersionsRequest", 3, b"\x02a\x02b\xff\xff\xff\xff\x07"),
]


@pytest.mark.parametrize(("name", "version", "data"), HUGE_COUNTS)
def test_huge_counts_do_not_allocate(name: str, version: int, data: bytes) -> None:
    msg = _message(name)
    tracemalloc.start()
    try:
        with pytest.raises(ProtocolError):
            msg.decode(data, version)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 256 * 1024


# ------------------------------------------------------------------ annotation


def _spans(msg: Message, data: bytes, version: int) -> dict[str, tuple[int, int, Any]]:
    return {s.name: (s.start, s.end, s.value) for s in msg.annotate(data, version)}


def test_annotate_metadata_v0() -> None:
    msg = BY_NAME["Metadata"].request
    data = msg.encode({"topics": [{"name": "a"}, {"name": "bc"}]}, 0)
    assert data == b"\x00\x00\x00\x02\x00\x01a\x00\x02bc"
    assert _spans(msg, data, 0) == {
        "topics count": (0, 4, 2),
        "topics[0].name length": (4, 6, 1),
        "topics[0].name": (6, 7, "a"),
        "topics[1].name length": (7, 9, 2),
        "topics[1].name": (9, 11, "bc"),
    }
    count = next(s for s in msg.annotate(data, 0) if s.name == "topics count")
    assert count.items == ((4, 7), (7, 11))


def test_annotate_api_versions_v3() -> None:
    msg = BY_NAME["ApiVersions"].request
    value = {"client_software_name": "py", "client_software_version": "1.0"}
    data = msg.encode(value, 3)
    assert data == b"\x03py\x041.0\x00"
    assert _spans(msg, data, 3) == {
        "client_software_name length": (0, 1, 2),  # compact: the varint is named, not counted
        "client_software_name": (1, 3, "py"),
        "client_software_version length": (3, 4, 3),
        "client_software_version": (4, 7, "1.0"),
        "tagged fields": (7, 8, 0),
    }
    length = next(s for s in msg.annotate(data, 3) if s.name == "client_software_name length")
    assert length.counts is None, "a varint length cannot be rewritten in place"


def test_annotate_stops_at_the_damage() -> None:
    msg = BY_NAME["Metadata"].request
    data = b"\x00\x00\x00\x02\x00\x01a\x00\x09bc"
    names = [s.name for s in msg.annotate(data, 0)]
    assert names == ["topics[0].name length", "topics[0].name"]


@pytest.mark.parametrize("version", [0, 3])
def test_a_response_is_annotated_as_the_answer_to_its_request(version: int) -> None:
    from conformance.protocols.kafka import codec

    asked = codec.encode_request(18, version, {}, correlation_id=7)  # ApiVersions
    other = codec.encode_request(18, 0, {}, correlation_id=8)
    body = {"error_code": 35, "api_keys": [{"api_key": 1, "min_version": 0, "max_version": 16}]}
    reply = codec.encode_response(18, version, 7, body)
    spans = {s.name: s for s in codec.annotate_reply(reply, [asked, other])}
    assert spans["error_code"].value == 35
    assert reply[spans["error_code"].start : spans["error_code"].end] == (35).to_bytes(2, "big")
    assert spans["api_keys[0].max_version"].value == 16
    assert spans["header.correlation_id"].value == 7
    alone = codec.annotate_reply(reply, [other])  # no request with correlation id 7
    assert [s.name for s in alone] == ["header.correlation_id"]
    said = f"ApiVersions v{version} response #7 ({len(reply)} bytes)"
    assert codec.describe_reply(reply, [asked, other]) == said
    assert codec.describe_reply(reply, [other]) == f"response #7 ({len(reply)} bytes)"
