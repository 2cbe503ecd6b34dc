"""Shared verifiers and steps of the Kafka cases.

A case talks to the target through a :class:`KafkaClient` (one connection, requests
encoded by the project's codec at the version the case chooses) and ends in a verifier:
:meth:`KafkaClient.call` (an answer that decodes), :func:`expect_code` (an error code),
:meth:`KafkaClient.expect_close` (the connection closed).  Every answer is checked for
what every case relies on: the correlation id (KAF-HDR-2), a layout that decodes at the
version asked (the case's own requirement, or KAF-VER-7) and error codes from the
protocol's table (KAF-ERR-1).

Evidence.  An answer is a :class:`~conformance.evidence.Node` tree that knows the request
it answers (by correlation id) and its reply frame: a check names what it judged with
``node.at("error_code")`` (the frame annotator's field name, such as
``responses[0].partition_responses[0].error_code``), and :func:`expect_code` names the
field itself.  A close or a silence carries its event.

Versions.  :func:`advertised` asks the target once per run for its ApiVersions (v0,
which every broker answers) and keeps the answer in ``target.facts``; :func:`need`
makes a case UNSUPPORTED when the target does not serve the version it is about, and
:func:`usable` picks the highest version both sides speak for a step.  A case that runs
at every version of an API is marked :func:`at_every_version` and takes a ``version``
argument; its ID carries the version (``kafka/fetch/3@v12``).

The steps that cases share (topics, produce, fetch, groups) are in :mod:`.steps`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NoReturn, TypeVar

import pytest

from conformance.client import Connection, PeerClosed, ReplyTimeout
from conformance.evidence import Evidence, Node, NodeList, decoded
from conformance.protocols.kafka import codec
from conformance.protocols.kafka.apis import BY_NAME
from conformance.protocols.kafka.errors import CODES
from conformance.suite.case import Unsupported, Violation, require
from conformance.suite.target import CaseContext

F = TypeVar("F", bound=Callable[..., object])

KNOWN_CODES = range(-1, 136)
"""The protocol's error table: UNKNOWN_SERVER_ERROR (-1) to the highest code Kafka 3.9 and
its successors define; a code outside it is no code at all (KAF-ERR-1)."""

_NAMES = {v: k for k, v in CODES.items()}


def name_of(code: int) -> str:
    return f"{_NAMES.get(code, 'error')} ({code})"


# ------------------------------------------------------------------ versions


def at_every_version(api: str, since: int = 0, until: int | None = None) -> Callable[[F], F]:
    """Run the case once per version of ``api`` (from ``since``, to ``until``) that the
    run's revision knows; the case takes the version as its ``version`` argument."""

    def mark(fn: F) -> F:
        marked: F = pytest.mark.conformance_versions(api, since=since, until=until)(fn)
        return marked

    return mark


def known_versions(revision: str, api: str) -> list[int]:
    """The versions of ``api`` the revision knows.  ``apache``: every version the
    codec declares.  ``doc``: pgcdc answers with header v0 everywhere, so only the
    versions whose responses have header v0 (every non-flexible version, and ApiVersions
    0-3, as the document's table says)."""
    a = BY_NAME[api]
    high = a.high
    if revision == "doc":
        high = (
            3
            if a.name == "ApiVersions"
            else (a.high if a.flexible_from is None else a.flexible_from - 1)
        )
    return list(range(a.low, high + 1))


def advertised(ctx: CaseContext) -> dict[int, tuple[int, int]]:
    """``{api_key: (min, max)}`` the target advertises (asked once per run)."""
    facts = ctx.target.facts
    if "kafka_versions" not in facts:
        with KafkaClient(ctx) as k:
            body = k.call("ApiVersions", 0, {}, "KAF-VER-1", "ApiVersions v0")
        expect_code(body, "error_code", "NONE", "KAF-VER-1", "ApiVersions v0")
        facts["kafka_versions"] = {
            int(a["api_key"]): (int(a["min_version"]), int(a["max_version"]))
            for a in body["api_keys"]
        }
    found: dict[int, tuple[int, int]] = facts["kafka_versions"]
    return found


def serves(ctx: CaseContext, api: str, version: int) -> bool:
    span = advertised(ctx).get(BY_NAME[api].key)
    return span is not None and span[0] <= version <= span[1]


def need(ctx: CaseContext, api: str, version: int) -> None:
    """UNSUPPORTED unless the target advertises ``api`` at ``version``."""
    if not serves(ctx, api, version):
        span = advertised(ctx).get(BY_NAME[api].key)
        has = f"advertises {span[0]}-{span[1]}" if span else "does not advertise it"
        raise Unsupported(f"the target does not serve {api} v{version} ({has})")


def usable(ctx: CaseContext, api: str, lowest: int = 0, highest: int | None = None) -> int:
    """The highest version of ``api`` in ``lowest..highest`` that the target advertises
    and the revision knows; UNSUPPORTED when there is none."""
    known = [v for v in known_versions(ctx.target.revision, api) if v >= lowest]
    known = [v for v in known if highest is None or v <= highest]
    for v in reversed(known):
        if serves(ctx, api, v):
            return v
    span = advertised(ctx).get(BY_NAME[api].key)
    has = f"advertises {span[0]}-{span[1]}" if span else "does not advertise it"
    raise Unsupported(
        f"no version {lowest}-{highest if highest is not None else 'max'} of {api} "
        f"usable with the target ({has})"
    )


# ------------------------------------------------------------------ the client


class KafkaClient:
    """One connection to the target; requests at a chosen version, answers checked."""

    def __init__(self, ctx: CaseContext, *, open_session: bool = True) -> None:
        self.ctx = ctx
        # the session opener authenticates (SASL) when the run is given credentials
        self.conn: Connection = ctx.connect(open_session=open_session)
        self.corr = 100
        self.requests: dict[int, int] = {}
        """The wire-log entry of each request sent, by correlation id."""

    def __enter__(self) -> KafkaClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.conn.close()

    @property
    def header_version(self) -> int | None:
        """Response header: v0 everywhere in ``doc`` (pgcdc), Kafka's rule in ``apache``."""
        return 0 if self.ctx.target.revision == "doc" else None

    def send(
        self,
        api: str,
        version: int,
        body: Mapping[str, Any],
        *,
        client_id: str | None = "conformance",
    ) -> int:
        self.corr += 1
        a = BY_NAME[api]
        payload = codec.encode_request(
            a.key, version, body, correlation_id=self.corr, client_id=client_id
        )
        self.requests[self.corr] = self.conn.send(codec.frame(payload))
        return self.corr

    def raw(self, data: bytes, summary: str) -> int:
        """Send raw bytes; their wire-log entry."""
        return self.conn.send(data, summary=summary)

    def payload(self, requirement: str, what: str, timeout: float | None = None) -> bytes:
        """The next response payload; silence or a close is a violation of ``requirement``
        (decided on the request sent last and the event)."""
        try:
            return self.conn.recv_frame(timeout)
        except ReplyTimeout as exc:
            self.ctx.silence(requirement, what, exc.evidence, exc.waited)
        except PeerClosed as exc:
            raise Violation(
                requirement, f"{what}: the target closed the connection instead", exc.evidence
            ) from None

    def exchange(self, corr: int | None = None) -> Evidence:
        """The evidence of the reply read last: the request ``corr`` (default: the one
        sent before the reply) and the reply's frame."""
        ev = self.conn.exchange()
        if corr is None or corr not in self.requests or self.conn.replied is None:
            return ev
        return Evidence.of(self.requests[corr], self.conn.replied[0])

    def answer(
        self,
        api: str,
        version: int,
        corr: int,
        requirement: str,
        what: str,
        timeout: float | None = None,
    ) -> Node:
        """The decoded answer to request ``corr``, as a tree that names its evidence."""
        return self._read(
            api, version, corr, requirement, what, self.payload(requirement, what, timeout)
        )

    def answer_within(
        self, api: str, version: int, corr: int, requirement: str, what: str, wait: float
    ) -> Node | None:
        """The answer to ``corr`` if one comes within ``wait`` seconds, else None (not a
        violation: for an answer that may rightly wait, such as a join a rebalance holds);
        an answer that comes later is read by the next :meth:`answer`."""
        try:
            payload = self.conn.recv_frame(wait)
        except ReplyTimeout:
            return None
        except PeerClosed as exc:
            raise Violation(
                requirement, f"{what}: the target closed the connection instead", exc.evidence
            ) from None
        return self._read(api, version, corr, requirement, what, payload)

    def _read(
        self, api: str, version: int, corr: int, requirement: str, what: str, payload: bytes
    ) -> Node:
        evidence = self.exchange(corr)
        got = codec.correlation_of(payload)
        require(
            got == corr,
            "KAF-HDR-2",
            f"{what}: correlation id {got} in the answer, expected {corr}",
            evidence.on("header.correlation_id"),
        )
        try:
            _, body = codec.decode_response(
                payload, BY_NAME[api].key, version, header_version=self.header_version
            )
        except codec.KafkaError as exc:
            raise Violation(
                requirement,
                f"{what}: the answer does not decode as {api} v{version} ({exc})",
                evidence,
            ) from None
        answer: Node = decoded(body, evidence)
        for node, key in error_codes(answer):
            require(
                node[key] in KNOWN_CODES,
                "KAF-ERR-1",
                f"{what}: error code {node[key]} is not in the protocol's table",
                node.at(key),
            )
        return answer

    def call(
        self,
        api: str,
        version: int,
        body: Mapping[str, Any],
        requirement: str,
        what: str,
        *,
        timeout: float | None = None,
        client_id: str | None = "conformance",
    ) -> Node:
        corr = self.send(api, version, body, client_id=client_id)
        return self.answer(api, version, corr, requirement, what, timeout)

    def expect_close(self, requirement: str, what: str, wait: float | None = None) -> Evidence:
        """The target closes the connection (an answer or silence is a violation); the
        evidence of the close (the request sent last and the close event)."""
        try:
            data = self.conn.recv_frame(wait)
        except PeerClosed as exc:
            return Evidence(exc.evidence.frames)
        except ReplyTimeout as exc:
            self.ctx.silence(
                requirement,
                f"{what}: expected the connection to be closed",
                exc.evidence,
                exc.waited,
            )
        raise Violation(
            requirement,
            f"{what}: answered{_numbered(data)} ({len(data)} bytes), expected the connection "
            "closed",
            self.conn.exchange().on("header.correlation_id"),
        )

    def expect_silence(self, requirement: str, what: str, wait: float) -> None:
        """No answer within ``wait`` seconds (a close is fine too)."""
        try:
            data = self.conn.recv_frame(wait)
        except (ReplyTimeout, PeerClosed):
            return
        raise Violation(
            requirement,
            f"{what}: answered{_numbered(data)} ({len(data)} bytes), expected no answer",
            self.conn.exchange().on("header.correlation_id"),
        )


def _numbered(reply: bytes) -> str:
    """`` #<correlation id>`` of a reply long enough to carry one."""
    return f" #{codec.correlation_of(reply)}" if len(reply) >= 4 else ""


def error_codes(value: Any) -> Iterable[tuple[Node, str]]:
    """Every ``error_code`` anywhere in a decoded answer, as (its struct, the key)."""
    if isinstance(value, Node):
        for key, inner in value.items():
            if key == "error_code" and isinstance(inner, int):
                yield value, key
            else:
                yield from error_codes(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from error_codes(inner)


def expect_code(
    where: Node, key: str, expected: str | Sequence[str], requirement: str, what: str
) -> None:
    """``where[key]`` (an error code of an answer) is the error (or one of the errors)
    named; the field is the evidence, and a missing field is named as missing."""
    names = [expected] if isinstance(expected, str) else list(expected)
    want = [CODES[n] for n in names]
    wanted = " or ".join(name_of(c) for c in want)
    if key not in where:
        place = f" {where.path}" if where.path else ""
        raise Violation(
            requirement, f"{what}: the answer's{place} has no {key}; expected {wanted}", where.at()
        )
    got = where[key]
    require(got in want, requirement, f"{what}: {name_of(got)}, expected {wanted}", where.at(key))


def missing(where: Node | NodeList, thing: str, requirement: str, what: str) -> NoReturn:
    """The answer lacks ``thing`` (a topic, a partition, a field): named as missing, with
    the struct or array that lacks it as the evidence (never a value it does not carry)."""
    place = f" {where.path}" if where.path else ""
    raise Violation(requirement, f"{what}: the answer's{place} has no {thing}", where.at())


def first(items: NodeList, thing: str, requirement: str, what: str) -> Node:
    """The first entry of an answer's array; an empty array is named as missing ``thing``."""
    if not items:
        missing(items, thing, requirement, what)
    node: Node = items[0]
    return node


def find(items: NodeList, key: str, value: Any, thing: str, requirement: str, what: str) -> Node:
    """The entry of ``items`` whose ``key`` is ``value``; none is named as missing ``thing``."""
    for node in items:
        if isinstance(node, Node) and node.get(key) == value:
            return node
    missing(items, thing, requirement, what)


def find_partition(
    topics: NodeList,
    topic: str,
    partition: int,
    requirement: str,
    what: str,
    *,
    entries: str = "partitions",
    key: str = "partition_index",
) -> Node:
    """The entry of partition ``partition`` (its ``key``) in the ``entries`` of the topic
    named ``topic`` among ``topics``; either missing is named as such."""
    t = find(topics, "name", topic, f"topic {topic}", requirement, what)
    return find(t[entries], key, partition, f"partition {partition}", requirement, what)
