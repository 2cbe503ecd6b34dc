"""The issue's replication story, over TCP against ``conformance serve --protocol v1line``
(replication factor 3, min ISR 2, short timeouts), in both revisions.

Two followers (replicas 1 and 2) report through REPLICA_FETCH; PRODUCE acks=all waits until
both have reported the produced offset, then succeeds (V1L-REPL-9); follower 2 stops and
leaves the ISR once the replica lag timeout has passed, not before (V1L-REPL-11); follower 1
stops too and acks=all answers REPLICATION_TIMEOUT no sooner than the ack timeout
(V1L-REPL-8); SET_PARTITION_ROLE follower makes PRODUCE answer NOT_LEADER and append nothing
(V1L-REPL-4), leader again accepts it (V1L-REPL-5).  A consumer checks after every step that
it never sees past the high watermark (V1L-CONS-2), and a second one polls all along that hw
never goes back while the partition is leader (V1L-REPL-14).  Every reply is compared whole.

The revisions differ only where SPEC says: in ``doc`` a record stays above hw until the
in-sync followers report it (V1L-REPL-13); in ``real`` a lagging follower is out of the ISR
at once, so hw is the leader's last offset (V1L-REPL-16).
"""

from __future__ import annotations

import threading
import time

import pytest

from tests.support import v1line_client
from tests.support.v1line_client import Client, messages

ACK_MS = 500
LAG_MS = 800
OPTIONS = (
    "--replication-factor",
    "3",
    "--min-isr",
    "2",
    "--ack-timeout-ms",
    str(ACK_MS),
    "--replica-lag-timeout-ms",
    str(LAG_MS),
    "--partitions",
    "1",
)
SLACK_S = 2.0
"""How late a timed event may come on a loaded machine (never how early)."""


class Watcher(threading.Thread):
    """CONSUMEs ``orders`` 0 from 0 every few ms on its own connection, keeping each reply."""

    def __init__(self, client: Client) -> None:
        super().__init__(daemon=True)
        self.client = client
        self.stop = threading.Event()
        self.seen: list[tuple[list[tuple[int, str]], int]] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            for n in range(100_000):  # bounded; stopped long before
                if self.stop.wait(0.01):
                    return
                self.seen.append(messages(self.client.call(f"w{n}", "CONSUME", "orders 0 0")))
        except BaseException as exc:  # reported by the test
            self.error = exc


class Story:
    def __init__(self, served: v1line_client.Served) -> None:
        self.served = served
        self.producer = served.connect()
        self.consumer = served.connect()
        self.f1 = served.connect()
        self.f2 = served.connect()
        self.produced: list[str] = []
        self.cid = 0

    def next_cid(self) -> str:
        self.cid += 1
        return str(self.cid)

    def call(self, c: Client, command: str, args: str) -> tuple[str, str]:
        cid = self.next_cid()
        return cid, c.call(cid, command, args)

    def fetch(self, c: Client, replica: int, offset: int) -> str:
        cid, reply = self.call(c, "REPLICA_FETCH", f"orders 0 {replica} {offset}")
        prefix = f"V1|{cid}|OK|"
        assert reply.startswith(prefix), reply
        return reply[len(prefix) :]

    def check_consumer(self, hw: int | None = None) -> int:
        """CONSUME from 0: nothing past hw, offsets consecutive from 0, values as produced."""
        reply = self.call(self.consumer, "CONSUME", "orders 0 0")[1]
        items, got_hw = messages(reply)
        assert got_hw <= len(self.produced) - 1, f"hw {got_hw} past the last record: {reply}"
        expected = list(enumerate(self.produced))[: got_hw + 1]
        assert items == expected, f"CONSUME answered {reply!r}, hw {got_hw}: expected {expected}"
        if hw is not None:
            assert got_hw == hw, f"hw {got_hw}, expected {hw}: {reply}"
        return got_hw

    def close(self) -> None:
        for c in (self.producer, self.consumer, self.f1, self.f2):
            c.close()


@pytest.mark.parametrize("revision", ["doc", "real"])
def test_replication_story(revision: str) -> None:
    doc = revision == "doc"
    with v1line_client.running(*OPTIONS, revision=revision) as served:
        s = Story(served)
        watcher = Watcher(served.connect())
        try:
            _story(s, doc, watcher)
        finally:
            watcher.stop.set()
            watcher.join(v1line_client.DEADLINE_S)
            watcher.client.close()
            s.close()
        assert watcher.error is None, f"the watching consumer failed: {watcher.error!r}"
        assert len(watcher.seen) > 20, f"the watcher saw only {len(watcher.seen)} replies"
        hws = [hw for _, hw in watcher.seen]
        assert hws == sorted(hws), f"hw went back while the partition was leader: {hws}"
        for items, hw in watcher.seen:
            assert all(o <= hw for o, _ in items), f"CONSUME past hw {hw}: {items}"
            assert items == list(enumerate(s.produced))[: hw + 1], f"hw {hw}: {items}"


def _story(s: Story, doc: bool, watcher: Watcher) -> None:
    # 0. Nothing yet: an unknown topic has no committed record.
    assert s.consumer.call("c0", "CONSUME", "orders 0 0") == "V1|c0|OK|messages= hw=-1"
    assert s.producer.call("p0", "PRODUCE", "orders k:v0") == "V1|p0|OK|partition=0 offset=0 hw=0"
    s.produced.append("v0")
    s.check_consumer(hw=0)
    watcher.start()

    # 1. Both followers report offset 0: the ISR is every replica (V1L-REPL-6, -10, -12, -15).
    assert s.fetch(s.f1, 1, 0) == "replica=1 acked_offset=0 hw=0 isr=[0 1] under_replicated=false"
    assert s.fetch(s.f2, 2, 0) == (
        "replica=2 acked_offset=0 hw=0 isr=[0 1 2] under_replicated=false"
    )
    s.check_consumer(hw=0)

    # 2. PRODUCE acks=all waits while the followers have not reported offset 1 (V1L-REPL-9).
    s.producer.send(b"V1|p1|PRODUCE|orders k:v1 acks=all\n")
    s.produced.append("v1")
    assert s.producer.silent_for(0.1), "acks=all answered before any follower reported"
    s.check_consumer(hw=0 if doc else 1)  # doc: the followers in the ISR hold hw at 0
    if doc:
        f1 = s.fetch(s.f1, 1, 1)
        assert f1 == "replica=1 acked_offset=1 hw=0 isr=[0 1 2] under_replicated=false"
        assert s.producer.silent_for(0.03), "acks=all answered while follower 2 was behind"
    else:
        f1 = s.fetch(s.f1, 1, 1)  # real: only caught-up followers are in sync
        assert f1 == "replica=1 acked_offset=1 hw=1 isr=[0 1] under_replicated=false"
    f2 = s.fetch(s.f2, 2, 1)
    last_f2 = time.monotonic()
    assert f2 == "replica=2 acked_offset=1 hw=1 isr=[0 1 2] under_replicated=false"
    assert s.producer.line() == "V1|p1|OK|partition=0 offset=1 hw=1"  # not a timeout
    s.check_consumer(hw=1)

    # 3. Follower 2 stops; follower 1 goes on.  The ISR keeps 2 for the lag timeout, then
    # drops it (V1L-REPL-11); two replicas still meet min ISR (V1L-REPL-12).
    full = "replica=1 acked_offset=1 hw=1 isr=[0 1 2] under_replicated=false"
    shrunk = "replica=1 acked_offset=1 hw=1 isr=[0 1] under_replicated=false"
    before, end = 0, last_f2 + LAG_MS / 1000 + SLACK_S
    while True:
        sent = time.monotonic()
        reply = s.fetch(s.f1, 1, 1)
        if reply == shrunk:
            break
        assert reply == full, f"{sent - last_f2:.3f} s after follower 2's last report: {reply}"
        before += 1
        assert sent < end, f"follower 2 still in the ISR {sent - last_f2:.3f} s after it stopped"
        s.check_consumer(hw=1)
        time.sleep(0.1)
    assert sent - last_f2 >= LAG_MS / 1000 - 0.05, (
        f"follower 2 left the ISR {sent - last_f2:.3f} s after its last report, "
        f"before the lag timeout {LAG_MS} ms"
    )
    assert before >= 3, f"only {before} reports saw follower 2 in the ISR"
    last_f1 = time.monotonic()
    s.check_consumer(hw=1)

    # 4. A record follower 1 has not reported: doc holds hw (V1L-REPL-13), real does not.
    assert s.producer.call("p2", "PRODUCE", "orders k:v2") == (
        f"V1|p2|OK|partition=0 offset=2 hw={1 if doc else 2}"
    )
    s.produced.append("v2")
    s.check_consumer(hw=1 if doc else 2)
    assert s.fetch(s.f1, 1, 2) == "replica=1 acked_offset=2 hw=2 isr=[0 1] under_replicated=false"
    last_f1 = time.monotonic()
    s.check_consumer(hw=2)

    # 5. Follower 1 stops too.  Once its lag timeout has passed the ISR is [0], below min ISR 2:
    # acks=all answers REPLICATION_TIMEOUT, no sooner than the ack timeout (V1L-REPL-8).
    time.sleep(max(0.0, last_f1 + LAG_MS / 1000 + 0.1 - time.monotonic()))
    s.check_consumer(hw=2)
    started = time.monotonic()
    s.producer.send(b"V1|p3|PRODUCE|orders k:v3 acks=all\n")
    s.produced.append("v3")  # appended whatever the answer (FACTS.md, PRODUCE)
    reply = s.producer.line(timeout=ACK_MS / 1000 + SLACK_S)
    waited = time.monotonic() - started
    assert reply == "V1|p3|ERR|REPLICATION_TIMEOUT|acks=all timeout"
    assert waited >= ACK_MS / 1000, f"REPLICATION_TIMEOUT after {waited:.3f} s < {ACK_MS} ms"
    s.check_consumer(hw=3)  # the ISR is the leader alone: hw is its last offset
    # A follower reporting an old offset does not rejoin: the ISR is [0], under-replicated.
    assert s.fetch(s.f1, 1, 2) == "replica=1 acked_offset=2 hw=3 isr=[0] under_replicated=true"
    s.check_consumer(hw=3)

    # 6. Follower role: PRODUCE answers NOT_LEADER and appends nothing (V1L-REPL-1, -4).
    role = s.producer.call("r1", "SET_PARTITION_ROLE", "orders 0 follower")
    assert role == "V1|r1|OK|topic=orders partition=0 role=follower hw=3"
    not_leader = "ERR|NOT_LEADER|partition leader unavailable on this broker"
    assert s.producer.call("p4", "PRODUCE", "orders k:lost") == f"V1|p4|{not_leader}"
    assert s.producer.call("p5", "PRODUCE", "orders k:lost acks=all") == f"V1|p5|{not_leader}"
    assert s.producer.call("p6", "PRODUCE", "orders k:lost acks=0") == f"V1|p6|{not_leader}"
    s.check_consumer(hw=3)
    assert s.consumer.call("c4", "CONSUME", "orders 0 4") == "V1|c4|OK|messages= hw=3"

    # 7. Leader again: PRODUCE appends at the next offset (V1L-REPL-5).
    role = s.producer.call("r2", "SET_PARTITION_ROLE", "orders 0 leader")
    assert role == "V1|r2|OK|topic=orders partition=0 role=leader hw=3"
    assert s.producer.call("p7", "PRODUCE", "orders k:v4") == "V1|p7|OK|partition=0 offset=4 hw=4"
    s.produced.append("v4")
    s.check_consumer(hw=4)
    time.sleep(0.05)  # one more round for the watcher
