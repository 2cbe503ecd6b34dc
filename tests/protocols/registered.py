"""The protocols the tests in this folder run over, and how they are reached.

:data:`NAMES` is every protocol :func:`conformance.protocols.names` lists while the
test-only protocols (:data:`TEST_ONLY`: the toy) are registered the way a third-party
package registers one: an entry point in a throw-away ``*.dist-info`` put on ``sys.path``.
They are registered only while :func:`extra_protocols_registered` is active (at
collection, and around each test by this folder's ``conftest.py``), because elsewhere the
project checks that the toy is unknown without its entry point.  A protocol added to
:mod:`conformance.protocols` is in :data:`NAMES` with no change here.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from conformance import protocols
from conformance.plugin import Plugin
from conformance.spec import requirements

ROOT = Path(__file__).resolve().parents[2]
TEST_ONLY = {"toy": "tests.toy.plugin:PLUGIN"}
"""Protocols registered only by these tests: name -> ``module:attribute``."""


@contextmanager
def extra_protocols_registered() -> Iterator[str]:
    """Register :data:`TEST_ONLY` for this process; yield the PYTHONPATH a subprocess
    needs to see them too.  Afterwards this process forgets them."""
    with tempfile.TemporaryDirectory(prefix="conformance-protocols-") as tmp:
        info = Path(tmp) / "conformance_test_protocols-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            "Metadata-Version: 2.1\nName: conformance-test-protocols\nVersion: 1.0\n"
        )
        lines = "".join(f"{name} = {where}\n" for name, where in TEST_ONLY.items())
        (info / "entry_points.txt").write_text(f"[{protocols.ENTRY_POINT_GROUP}]\n{lines}")
        sys.path.insert(0, tmp)
        try:
            yield os.pathsep.join(filter(None, [tmp, str(ROOT), os.environ.get("PYTHONPATH")]))
        finally:
            sys.path.remove(tmp)
            for name in TEST_ONLY:  # the registry caches a plug-in once asked for
                protocols._loaded.pop(name, None)


with extra_protocols_registered():
    NAMES: tuple[str, ...] = protocols.names()
    assert set(TEST_ONLY) <= set(NAMES), f"the test-only protocols are not registered: {NAMES}"


def spec_quirk_revision(plugin: Plugin, quirk: str | None = None) -> str:
    """The revision the spec quirks of ``plugin`` (only ``quirk``, when named) are run in: one
    in which every requirement they break applies (Kafka: apache; a Cursus quirk of revision
    real: real), the default revision if it is one."""
    reqs = requirements(plugin.name)
    quirks = [plugin.quirks[quirk]] if quirk else list(plugin.quirks.values())
    broken = {r for q in quirks if q.kind == "spec" for r in q.breaks}
    fits = [rev for rev in plugin.revisions if all(rev in reqs[r].revisions for r in broken)]
    if plugin.default_revision in fits:
        return plugin.default_revision
    assert fits, f"no revision of {plugin.name} holds every requirement its spec quirks break"
    return fits[0]
