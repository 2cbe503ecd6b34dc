"""Kafka's request and response bodies, one module per API, declared in the schema
language of :mod:`conformance.wire.schema`.

Each is declared with :func:`message`, in Kafka's encoding (:data:`KAFKA`).  Each API
module exports ``REQUEST`` and ``RESPONSE`` (:class:`~conformance.wire.schema.Message`,
with ``extra["api_key"]``); :mod:`.headers` exports the two headers.  The facts (field
names, types, version ranges, tags, defaults) are those of Apache Kafka 3.9's message
definitions, with field names in snake_case and each API's versions capped where a toy
broker could not serve the newer ones (:mod:`conformance.protocols.kafka.apis` lists them).

Two conventions carry Kafka's defaults where the schema language's implicit ones differ:

* a nullable string or array field whose definition gives no ``null`` default defaults
  to the empty value, as in Kafka (``default=""`` or ``default=EMPTY``); a nullable
  ``records`` field defaults to null, as in Kafka;
* a tagged struct field whose own fields default to non-zero values has the whole
  default struct as its default (:func:`frozen`), so that a value equal to it is left
  out of the tagged section, as Kafka does, and an absent one decodes to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from conformance.wire import schema
from conformance.wire.encoding import Encoding

KAFKA = Encoding(
    name="kafka",
    byte_order="big",
    string_length="i16",
    bytes_length="i32",
    array_count="i32",
    null_length=-1,
    flexible=True,
)
"""Kafka's encoding: big-endian, int16 string lengths, int32 bytes lengths and array
counts, -1 for null, compact lengths and tagged fields in flexible versions."""


def message(
    name: str,
    versions: str,
    flexible: str,
    fields: Sequence[schema.Field],
    doc: str = "",
    **extra: Any,
) -> schema.Message:
    """A Kafka message declaration: :func:`conformance.wire.schema.message` in
    :data:`KAFKA`'s encoding."""
    return schema.message(name, versions, flexible, fields, doc, encoding=KAFKA, **extra)


EMPTY: tuple[Any, ...] = ()
"""The default of a nullable array that Kafka defaults to empty rather than null."""


def frozen(**values: Any) -> Mapping[str, Any]:
    """A read-only struct value (compares equal to the plain dict with the same items)."""
    return MappingProxyType(dict(values))
