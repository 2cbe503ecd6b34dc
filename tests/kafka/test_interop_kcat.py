"""kcat (Debian's, librdkafka inside) against the reference broker, revision apache:
``kcat -P`` produces, ``kcat -L`` lists the broker and the topic, ``kcat -C`` reads the
records back with their keys and headers.  With CI=true a missing kcat fails."""

from __future__ import annotations

import subprocess
import uuid

import pytest

from tests.kafka.conftest import need_tool
from tests.support.broker import Broker

pytestmark = pytest.mark.slow


def _kcat(*args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        [need_tool("kcat"), *args], input=stdin, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, f"kcat {' '.join(args)}: {done.stderr.strip()[-800:]}"
    return done.stdout


def test_kcat_lists_produces_and_reads(kafka: Broker) -> None:
    topic = f"kcat-{uuid.uuid4().hex[:8]}"
    lines = "".join(f"k{i}:v{i}\n" for i in range(10))
    _kcat("-b", kafka.address, "-P", "-t", topic, "-K:", "-H", "via=kcat", stdin=lines)

    listing = _kcat("-b", kafka.address, "-L", "-t", topic)
    assert f"broker 1 at {kafka.address}" in listing, listing
    assert f'topic "{topic}" with 1 partitions' in listing, listing

    read = _kcat(
        "-b", kafka.address, "-C", "-t", topic, "-o", "beginning", "-e", "-f", "%k=%s %h\n"
    )
    assert read.splitlines() == [f"k{i}=v{i} via=kcat" for i in range(10)]
