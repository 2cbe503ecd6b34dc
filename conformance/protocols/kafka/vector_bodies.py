"""A Kafka body's plain form in a vector file, both ways: :func:`to_body`, :func:`to_plain`.

A body is plain data as :mod:`conformance.wire.schema` decodes it; its plain form (what a
vector's ``decoded`` and ``reply`` hold, :mod:`.vectors` describes it) writes bytes as
``{hex: ..}`` and a ``records`` field as ``{batches: [..]}`` when that gives back the same
bytes (uncompressed) or the same records (compressed), else as ``{hex: ..}``.

Rules: a malformed plain form is a ValueError naming what is wrong (the schema check turns
it into a SchemaError); nothing here knows an API, a version or a vector's other keys.
The small readers (:func:`integer`, :func:`only_keys`, :func:`hex_bytes`,
:func:`is_hex`) are shared with :mod:`.vector_messages` and :mod:`.vectors`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from conformance.errors import ProtocolError
from conformance.protocols.kafka.compression import NAMES as COMPRESSIONS
from conformance.protocols.kafka.records import (
    CONTROL_BIT,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
    Header,
    Record,
    RecordBatch,
    decode_batches,
    encode_batch,
)
from conformance.vectors import parse_hex
from conformance.wire.schema import UNKNOWN_TAGS

BATCH_KEYS = (
    "base_offset",
    "partition_leader_epoch",
    "compression",
    "log_append_time",
    "transactional",
    "control",
    "last_offset_delta",
    "base_timestamp",
    "max_timestamp",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "records",
)
RECORD_KEYS = ("offset_delta", "timestamp_delta", "key", "value", "headers", "attributes")
_FLAGS = (("log_append_time", TIMESTAMP_TYPE_BIT), ("transactional", TRANSACTIONAL_BIT),
          ("control", CONTROL_BIT))  # fmt: skip
_KNOWN_ATTRIBUTES = 0x07 | TIMESTAMP_TYPE_BIT | TRANSACTIONAL_BIT | CONTROL_BIT


def integer(d: Mapping[str, Any], key: str, default: int | None = None) -> int:
    """``d[key]``, an integer (not a bool); ``default`` if absent, unless it is None."""
    if key not in d:
        if default is None:
            raise ValueError(f"missing key {key!r}")
        return default
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"key {key!r} must be an integer, got {v!r}")
    return v


def only_keys(d: Mapping[str, Any], allowed: Sequence[str], what: str) -> None:
    """ValueError naming the first key of ``d`` that is not ``allowed``."""
    for key in d:
        if key not in allowed:
            raise ValueError(f"unknown key {key!r} in {what} (allowed: {', '.join(allowed)})")


def hex_bytes(value: Mapping[str, Any]) -> bytes:
    """The bytes of a ``{hex: ..}`` mapping."""
    text = value["hex"]
    if not isinstance(text, str):
        raise ValueError(f"hex must be a string of hex digits, got {text!r}")
    try:
        return parse_hex(text)
    except ValueError as exc:
        raise ValueError(f"hex: {exc}") from None


def is_hex(value: Any) -> bool:
    """Whether ``value`` is a ``{hex: ..}`` mapping (its one key ``hex``)."""
    return isinstance(value, Mapping) and list(value) == ["hex"]


def _data(value: Any, what: str) -> bytes | None:
    """A record key, value or header value: text, {hex} or null."""
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode("utf-8")
    if is_hex(value):
        return hex_bytes(value)
    raise ValueError(f"{what} must be a string, {{hex: ..}} or null, got {value!r}")


def _record(d: Any, index: int) -> Record:
    if not isinstance(d, Mapping):
        raise ValueError(f"record {index} must be a mapping, got {d!r}")
    only_keys(d, RECORD_KEYS, "a record")
    headers = d.get("headers", [])
    if not isinstance(headers, list):
        raise ValueError(f"record {index}: headers must be a list")
    hs = []
    for h in headers:
        if (
            not isinstance(h, Mapping)
            or set(h) != {"key", "value"}
            or not isinstance(h["key"], str)
        ):
            raise ValueError(f"record {index}: a header is {{key: NAME, value: ..}}, not {h!r}")
        hs.append(Header(h["key"], _data(h["value"], "a header value")))
    return Record(
        offset_delta=integer(d, "offset_delta", index),
        timestamp_delta=integer(d, "timestamp_delta", 0),
        key=_data(d.get("key"), "a record key"),
        value=_data(d.get("value"), "a record value"),
        headers=tuple(hs),
        attributes=integer(d, "attributes", 0),
    )


def _batch(d: Any) -> RecordBatch:
    if not isinstance(d, Mapping):
        raise ValueError(f"a batch must be a mapping, got {d!r}")
    only_keys(d, BATCH_KEYS, "a batch")
    records = d.get("records", [])
    if not isinstance(records, list):
        raise ValueError("a batch's records must be a list")
    recs = tuple(_record(r, i) for i, r in enumerate(records))
    compression = d.get("compression", "none")
    if compression not in COMPRESSIONS:
        raise ValueError(f"compression {compression!r} is not one of {', '.join(COMPRESSIONS)}")
    attributes = COMPRESSIONS.index(compression)
    for name, bit in _FLAGS:
        flag = d.get(name, False)
        if not isinstance(flag, bool):
            raise ValueError(f"{name} must be true or false")
        attributes |= bit if flag else 0
    base_ts = integer(d, "base_timestamp", 0)
    return RecordBatch(
        records=recs,
        last_offset_delta=integer(d, "last_offset_delta", recs[-1].offset_delta if recs else 0),
        base_offset=integer(d, "base_offset", 0),
        partition_leader_epoch=integer(d, "partition_leader_epoch", -1),
        attributes=attributes,
        base_timestamp=base_ts,
        max_timestamp=integer(
            d, "max_timestamp", base_ts + max((r.timestamp_delta for r in recs), default=0)
        ),
        producer_id=integer(d, "producer_id", -1),
        producer_epoch=integer(d, "producer_epoch", -1),
        base_sequence=integer(d, "base_sequence", -1),
    )


def _records(value: Any) -> bytes | None:
    if value is None:
        return None
    if is_hex(value):
        return hex_bytes(value)
    if isinstance(value, Mapping) and list(value) == ["batches"]:
        batches = value["batches"]
        if not isinstance(batches, list):
            raise ValueError("batches must be a list")
        try:
            return b"".join(encode_batch(_batch(b)) for b in batches)
        except (TypeError, OverflowError, KeyError) as exc:
            raise ValueError(f"a batch does not encode: {exc}") from None
    raise ValueError(f"records must be null, {{hex: ..}} or {{batches: [..]}}, not {value!r}")


def to_body(plain: Any, key: str = "") -> Any:
    """A body (or any part of one) from its plain form: ``{hex}`` to bytes, batches
    encoded; everything else as it is."""
    if key == "records":
        return _records(plain)
    if isinstance(plain, Mapping):
        if is_hex(plain):
            return hex_bytes(plain)
        out: dict[Any, Any] = {}
        for k, v in plain.items():
            if k == UNKNOWN_TAGS:
                if not isinstance(v, Mapping) or not all(
                    isinstance(t, int) and is_hex(b) for t, b in v.items()
                ):
                    raise ValueError(f"{UNKNOWN_TAGS} must map tag numbers to {{hex: ..}}")
                out[k] = {t: hex_bytes(b) for t, b in v.items()}
            elif not isinstance(k, str):
                raise ValueError(f"field name {k!r} is not a string")
            else:
                out[k] = to_body(v, k)
        return out
    if isinstance(plain, list):
        return [to_body(v) for v in plain]
    if isinstance(plain, bytes):
        raise ValueError("bytes are written {hex: ..}, not !!binary")
    return plain


def _text_or_hex(data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return {"hex": data.hex()}
    return text if text.isprintable() else {"hex": data.hex()}


def _plain_batch(b: RecordBatch) -> dict[str, Any]:
    out: dict[str, Any] = {
        "base_offset": b.base_offset,
        "partition_leader_epoch": b.partition_leader_epoch,
        "compression": b.compression_name,
    }
    for name, bit in _FLAGS:
        if b.attributes & bit:
            out[name] = True
    out.update(
        last_offset_delta=b.last_offset_delta,
        base_timestamp=b.base_timestamp,
        max_timestamp=b.max_timestamp,
        producer_id=b.producer_id,
        producer_epoch=b.producer_epoch,
        base_sequence=b.base_sequence,
    )
    records = []
    for r in b.records:
        rec: dict[str, Any] = {
            "offset_delta": r.offset_delta,
            "timestamp_delta": r.timestamp_delta,
            "key": _text_or_hex(r.key),
            "value": _text_or_hex(r.value),
            "headers": [{"key": h.key, "value": _text_or_hex(h.value)} for h in r.headers],
        }
        if r.attributes:
            rec["attributes"] = r.attributes
        records.append(rec)
    out["records"] = records
    return out


def _plain_records(data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        batches = decode_batches(data, strict=True)
    except ProtocolError:
        return {"hex": data.hex()}
    if any(b.magic != 2 or b.attributes & ~_KNOWN_ATTRIBUTES for b in batches):
        return {"hex": data.hex()}
    plain = [_plain_batch(b) for b in batches]
    try:
        again = _records({"batches": plain})
    except ValueError:  # pragma: no cover - a decoded batch always encodes
        return {"hex": data.hex()}
    compressed = all(b.compression for b in batches)
    if again != data and (not compressed or decode_batches(again or b"") != batches):
        return {"hex": data.hex()}
    return {"batches": plain}


def to_plain(value: Any, key: str = "") -> Any:
    """The plain form of a decoded body (or any part of one)."""
    if key == "records" and (value is None or isinstance(value, bytes | bytearray)):
        return _plain_records(None if value is None else bytes(value))
    if isinstance(value, bytes | bytearray):
        return {"hex": bytes(value).hex()}
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            if k == UNKNOWN_TAGS:
                if v:
                    out[k] = {int(t): {"hex": bytes(b).hex()} for t, b in v.items()}
            else:
                out[k] = to_plain(v, k)
        return out
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    return value
