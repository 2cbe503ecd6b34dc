"""A checker that fails on a frame (a bug of the tool) leaves the frame unchecked, the
broker still answers, and the report counts it."""

from __future__ import annotations

from conformance import protocols
from conformance.engine import Engine
from conformance.plugin import ServeConfig
from conformance.protocols.kafka import codec
from conformance.validate.faults import FaultPlan
from conformance.validate.frontend import CheckingFrontend
from tests.support.inprocess import serving
from tests.support.kafka_client import KafkaConn


class _Broken:
    def __init__(self, inner: object) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def request(self, payload: bytes, now: float) -> object:
        if codec.peek(payload)[2] == 2:
            raise RuntimeError("a checker bug")
        return self.inner.request(payload, now)  # type: ignore[attr-defined]


def test_a_failing_checker_leaves_the_frame_unchecked_and_counted() -> None:
    plugin = protocols.get("kafka")
    config = ServeConfig(revision="apache")
    front = plugin.frontend(Engine(), config)
    assert plugin.validation is not None
    validation = plugin.validation(front, config)
    made = validation.connection

    class Validation:  # the real one, whose checkers fail on correlation id 2
        def __getattr__(self, name: str) -> object:
            return getattr(validation, name)

        def connection(self, conn: int) -> object:
            return _Broken(made(conn))

    checking = CheckingFrontend(front, plugin, Validation(), FaultPlan())  # type: ignore[arg-type]
    with serving(checking) as address:
        host, port = address.rsplit(":", 1)
        k = KafkaConn((host, int(port)))
        for _ in range(3):  # corr 1, 2, 3: every one answered
            assert k.call(3, 12, {"topics": None})["brokers"]
        k.close()
    assert checking.ledger.checker_failures == 1
    summaries = [f.summary for f in checking.ledger.frames if f.dir == "send"]
    assert summaries[1].startswith("not checked") and summaries[2].startswith("Metadata v12")
