"""The broker's handler table (handlers/__init__.py) agrees with the API registry (apis.py).

Rules checked by :func:`table_breaches`:

1. every API of :data:`~conformance.protocols.kafka.apis.APIS` has a handler, and every
   key of :data:`~conformance.protocols.kafka.handlers.HANDLERS` is a declared API;
2. each handler is the one of its API: it is named after the API in snake_case (the
   function, or its module when the function is ``handle``: ``offsets.offset_commit``
   for OffsetCommit, ``produce.handle`` for Produce), and its module's docstring names
   the API with its key (``Produce (key 0)``, ``OffsetCommit (8)``);
3. each handler takes ``(broker, request, peer)``;
4. the versions agree: what ApiVersions advertises in each revision lists exactly the
   handled keys, each from the API's lowest declared version to its highest
   (``apache``) or to its last non-flexible one (``doc``, whose header v0 everywhere a
   flexible version would contradict; ApiVersions itself excepted), and every advertised
   version is declared by both the request and the response body.

The checker is tested on planted breaches: a table with an entry removed, one added, one
swapped, a handler of the wrong shape, and an advertised range past the declarations.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from conformance.protocols.kafka.apis import APIS, Api
from conformance.protocols.kafka.context import REVISIONS
from conformance.protocols.kafka.handlers import HANDLERS
from conformance.protocols.kafka.handlers.api_versions import supported

API_VERSIONS_KEY = 18
Advertised = Mapping[str, list[dict[str, Any]]]
"""What ApiVersions lists, by revision: ``[{api_key, min_version, max_version}]``."""


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _expected_high(api: Api, revision: str) -> int:
    if revision == "doc" and api.key != API_VERSIONS_KEY and api.flexible_from is not None:
        return min(api.high, api.flexible_from - 1)
    return api.high


def table_breaches(
    handlers: Mapping[int, Callable[..., Any]],
    apis: Mapping[int, Api],
    advertised: Advertised,
) -> list[str]:
    """Every way ``handlers``, ``apis`` and ``advertised`` disagree (rules 1-4)."""
    found = [f"{apis[k].name} (key {k}) has no handler" for k in sorted(set(apis) - set(handlers))]
    found += [f"key {k} has a handler but no API" for k in sorted(set(handlers) - set(apis))]
    for key in sorted(set(handlers) & set(apis)):
        handler, api = handlers[key], apis[key]
        module = inspect.getmodule(handler)
        where = f"{getattr(module, '__name__', '?')}.{handler.__name__}"
        own = handler.__name__ if handler.__name__ != "handle" else where.split(".")[-2]
        if own != _snake(api.name):
            found.append(f"key {key} ({api.name}) is served by {where}, named for another API")
        doc = " ".join((getattr(module, "__doc__", None) or "").split())
        if not re.search(rf"\b{api.name} \((key )?{key}\)", doc):
            found.append(f"{where}: its module docstring does not name '{api.name} (key {key})'")
        params = list(inspect.signature(handler).parameters)
        if len(params) != 3:
            found.append(f"{where} takes {params}, not (broker, request, peer)")
    for revision, listed in advertised.items():
        keys = [entry["api_key"] for entry in listed]
        # revision doc (header v0 only) cannot serve an API flexible from its first version
        servable = [
            k for k in handlers if k not in apis or _expected_high(apis[k], revision) >= apis[k].low
        ]
        if sorted(keys) != sorted(servable) or len(set(keys)) != len(keys):
            found.append(
                f"ApiVersions ({revision}) lists keys {keys}, the handlers {sorted(handlers)}"
            )
        for entry in listed:
            if entry["api_key"] not in apis:
                continue
            api = apis[entry["api_key"]]
            low, high = entry["min_version"], entry["max_version"]
            want = (api.low, _expected_high(api, revision))
            if (low, high) != want:
                found.append(
                    f"ApiVersions ({revision}) advertises {api.name} v{low}-{high}, "
                    f"expected v{want[0]}-{want[1]}"
                )
            for v in range(low, high + 1):
                if v not in api.request.versions or v not in api.response.versions:
                    found.append(f"ApiVersions ({revision}) advertises {api.name} v{v}, undeclared")
    return found


def _advertised() -> dict[str, list[dict[str, Any]]]:
    return {revision: supported(revision) for revision in REVISIONS}


def test_the_handler_table_matches_the_api_registry() -> None:
    assert table_breaches(HANDLERS, APIS, _advertised()) == []


# ----------------------------------------------------------------- planted breaches


def test_a_missing_handler_is_found() -> None:
    table = {k: h for k, h in HANDLERS.items() if k != 22}
    found = table_breaches(table, APIS, _advertised())
    assert "InitProducerId (key 22) has no handler" in found
    assert any("ApiVersions (apache) lists keys" in f for f in found)


def test_a_handler_without_an_api_is_found() -> None:
    found = table_breaches({**HANDLERS, 99: HANDLERS[0]}, APIS, {})
    assert found == ["key 99 has a handler but no API"]


def test_a_missing_api_is_found() -> None:
    apis = {k: a for k, a in APIS.items() if k != 3}
    assert table_breaches(HANDLERS, apis, {}) == ["key 3 has a handler but no API"]


def test_swapped_handlers_are_found() -> None:
    table = {**HANDLERS, 8: HANDLERS[9], 9: HANDLERS[8]}
    found = table_breaches(table, APIS, {})
    assert len(found) == 2 and all("named for another API" in f for f in found)


def test_a_handler_of_another_module_is_found() -> None:
    found = table_breaches({**HANDLERS, 0: HANDLERS[1]}, APIS, {})
    assert any("key 0 (Produce)" in f for f in found)
    assert any("does not name 'Produce (key 0)'" in f for f in found)


def test_a_handler_of_the_wrong_shape_is_found() -> None:
    def produce(broker: Any, request: Any) -> dict[str, Any]:
        return {}

    found = table_breaches({**HANDLERS, 0: produce}, APIS, {})
    assert any("not (broker, request, peer)" in f for f in found)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"max_version": 99}, ["expected", "v99, undeclared"]),
        ({"min_version": 1}, ["v1-"]),
        ({"api_key": 99}, ["lists keys"]),
    ],
    ids=["past-the-highest", "from-the-wrong-lowest", "unknown-key"],
)
def test_a_wrong_advertised_range_is_found(change: dict[str, int], words: list[str]) -> None:
    listed = [dict(e) for e in supported("apache")]
    listed[0].update(change)
    found = table_breaches(HANDLERS, APIS, {"apache": listed})
    assert found, f"{change} was not found"
    for word in words:
        assert any(word in f for f in found), f"{word!r} not in {found}"
