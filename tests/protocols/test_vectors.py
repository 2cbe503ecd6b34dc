"""Every registered protocol's golden vectors, checked the same way (h11's rule).

Each protocol's vectors load through the generic loader (conformance/vectors.py), name
requirements its SPEC.md defines, and have unique IDs under the protocol's name.  Each
vector's frame goes through the protocol's deframer for its direction whole, one byte at a
time and followed by the first half of the next frame: a whole frame gives exactly its
payload and nothing before its last byte; a truncated one gives nothing and is kept
waiting, or is refused (with FrameTooLarge for FRAME_TOO_LARGE) on its last byte and not
before, after which the deframer stays refused; the next frame's first half is kept
until its rest arrives, and nothing is left over.  A ``decoded`` message goes to plain data and back
unchanged.  Each payload decodes to its ``decoded`` message (or is refused with the error the
vector names) and each message encodes back to the vector's bytes, through the protocol's
vector schema (:class:`conformance.plugin.VectorSchema`).  What needs a protocol's broker
(replies) or knows its collection stays in its folder (tests/<protocol>/test_vectors.py).
"""

from __future__ import annotations

import pytest

from conformance import protocols
from conformance.errors import FrameTooLarge, ProtocolError
from conformance.spec import requirements
from conformance.vectors import Vector, VectorError, load
from conformance.wire.framing import Deframer
from tests.protocols.registered import NAMES, extra_protocols_registered


def loaded(name: str) -> list[Vector]:
    """The vectors of ``name``, or none if they do not load (test_the_vectors_load says
    why), so one broken file does not stop the collection."""
    try:
        return load(name)
    except (VectorError, protocols.UnknownProtocol):
        return []


with extra_protocols_registered():
    VECTORS = [v for name in NAMES for v in loaded(name)]
FRAMED = [v for v in VECTORS if not v.truncated]
DECODED = [v for v in VECTORS if v.decoded is not None]


def ids(v: Vector) -> str:
    return v.id


def deframer(v: Vector) -> Deframer:
    """A fresh deframer of ``v``'s protocol for frames going ``v.direction``."""
    return protocols.get(v.protocol).framing.deframer(v.direction)


# -------------------------------------------------------------- each protocol


@pytest.mark.parametrize("name", NAMES)
def test_the_vectors_load(name: str) -> None:
    assert load(name), f"{name} has no vectors"


@pytest.mark.parametrize("name", NAMES)
def test_every_vector_cites_requirements_of_spec_md(name: str) -> None:
    known = requirements(name)
    unknown = {(v.id, r) for v in load(name) for r in v.requirements if r not in known}
    assert unknown == set()


@pytest.mark.parametrize("name", NAMES)
def test_vector_ids_are_unique_and_under_the_protocol(name: str) -> None:
    vectors = load(name)
    assert len({v.id for v in vectors}) == len(vectors)
    assert all(v.id.startswith(f"{name}/") and v.protocol == name for v in vectors)


# ---------------------------------------------------------------- the deframer


@pytest.mark.parametrize("v", VECTORS, ids=ids)
def test_deframe_whole(v: Vector) -> None:
    d = deframer(v)
    if v.truncated and v.error:
        with pytest.raises(ProtocolError) as info:
            d.feed(v.frame)
        if v.error == "FRAME_TOO_LARGE":
            assert isinstance(info.value, FrameTooLarge), repr(info.value)
        assert d.error is info.value
        with pytest.raises(ProtocolError):  # poisoned: the stream cannot resynchronise
            d.feed(b"")
    elif v.truncated:
        assert d.feed(v.frame) == []
        assert d.error is None
    else:
        assert d.feed(v.frame) == [v.payload]
        assert d.error is None and d.buffered == 0


@pytest.mark.parametrize("v", VECTORS, ids=ids)
def test_deframe_byte_at_a_time(v: Vector) -> None:
    d = deframer(v)
    got: list[bytes] = []
    last = len(v.frame) - 1
    for i in range(len(v.frame)):
        byte = v.frame[i : i + 1]
        if v.truncated and v.error and i == last:  # refused on its last byte, not before
            with pytest.raises(ProtocolError):
                d.feed(byte)
            return
        got += d.feed(byte)
        assert i == last or got == [], f"a frame came out after {i + 1} of {len(v.frame)} bytes"
    assert got == ([] if v.truncated else [v.payload])


@pytest.mark.parametrize("v", FRAMED, ids=ids)
def test_deframe_followed_by_the_next_frame(v: Vector) -> None:
    d = deframer(v)
    half = len(v.frame) // 2
    assert d.feed(v.frame + v.frame[:half]) == [v.payload]
    assert d.feed(v.frame[half:]) == [v.payload]
    assert d.buffered == 0


# ------------------------------------------------------------------ the schema


@pytest.mark.parametrize("v", DECODED, ids=ids)
def test_plain_data_round_trip(v: Vector) -> None:
    schema = protocols.get(v.protocol).vectors()
    plain = schema.from_message(v.message)
    assert schema.from_message(schema.to_message(plain)) == plain


# ------------------------------------------------------------------- the codec


@pytest.mark.parametrize("v", FRAMED, ids=ids)
def test_decode(v: Vector) -> None:
    """The payload decodes to ``decoded``, or is refused with the error the vector names."""
    schema = protocols.get(v.protocol).vectors()
    if v.error is not None:
        with pytest.raises(ProtocolError) as info:
            schema.decode(v.payload, v.direction, v.extras)
        assert schema.error_name(info.value) == v.error, str(info.value)
    elif v.decoded is not None:
        got = schema.decode(v.payload, v.direction, v.extras)
        assert schema.from_message(got) == schema.from_message(v.message)


@pytest.mark.parametrize("v", DECODED, ids=ids)
def test_encode(v: Vector) -> None:
    """``decoded`` encodes to the vector's bytes; one not ``encode_exact`` (compressed,
    unknown tags, trailing bytes) encodes to bytes that decode to the same message, but
    for what an encoder cannot give back (``not_encoded``)."""
    plugin = protocols.get(v.protocol)
    schema = plugin.vectors()
    payload = schema.encode(v.message, v.direction, v.extras)
    if v.encode_exact:
        assert plugin.framing.frame(payload, v.direction).hex(" ", 4) == v.frame.hex(" ", 4)
        return
    again = schema.from_message(schema.decode(payload, v.direction, v.extras))
    want = schema.from_message(v.message)
    for key in schema.not_encoded:
        again.pop(key, None)
        want.pop(key, None)
    assert again == want
