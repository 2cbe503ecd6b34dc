"""A stateful comparison: the reference broker, driven over Cursus, against a small model.

Hypothesis drives one broker subprocess (for the whole module, started with a long session
timeout so no member expires during a run) through CREATE, produced batches (acks 0, 1, -1
and others; idempotent ones sometimes skipping sequence numbers, sometimes at a lower epoch,
sometimes sent twice), CONSUME at any offset (past the end: an empty batch), COMMIT,
BATCH_COMMIT and FETCH_OFFSET (offsets past the end included), and JOIN_GROUP / SYNC_GROUP /
HEARTBEAT / LEAVE_GROUP, and requests that cannot be carried out (an offset or partition
below 0, CREATE of a topic that exists), which must be refused and change nothing.  Every
reply is checked against the model: offsets are
consecutive, CONSUME returns what was produced, every batch the document allows is stored,
a re-sent idempotent batch is not stored twice, committed offsets read back, each join and leave
moves the group to a higher generation, and the assignments of one generation partition
the topic's partitions among the members.  Names carry a per-run uuid, so runs sharing the
broker never meet.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule, run_state_machine_as_test

from conformance.protocols.cursus import strategies as cs
from conformance.protocols.cursus.messages import (
    GEN_MISMATCH,
    REBALANCE_REQUIRED,
    Batch,
    BatchAck,
    Command,
    ErrorReply,
    Message,
    OkReply,
    Reply,
    SpecialReply,
    TopicList,
)
from tests.support import broker
from tests.support.cursus_client import CursusTestClient

MAX_POLL = 100  # the broker's default --max-poll-records
MAX_TOPICS = 3
MAX_MEMBERS = 4


@dataclass
class Producer:
    """An idempotent producer of one partition: its next sequence and its last batch."""

    producer_id: str
    next_seq: int = 0
    epoch: int | None = None  # the highest epoch sent: the one the broker tracks (CUR-ACK-8)
    last_batch: Batch | None = None
    last_offset: int = -1


@dataclass
class Member:
    consumer_id: str
    member_id: str
    generation: int  # the generation this member last learned


@dataclass
class Group:
    name: str
    topic: str
    generation: int = 0  # the latest generation the broker told us about
    members: list[Member] = field(default_factory=list)


def generation_in(text: str) -> int:
    for token in text.split():
        if token.startswith("generation="):
            return int(token.split("=", 1)[1])
    raise AssertionError(f"no generation=<n> in {text!r}")


def ok_fields(reply: Reply, what: str) -> dict[str, str]:
    assert isinstance(reply, OkReply), f"{what}: expected OK, got {reply}"
    return dict(reply.fields)


class CursusModel(RuleBasedStateMachine):
    def __init__(self, target: broker.Broker) -> None:
        super().__init__()
        self.client = CursusTestClient(target.host, target.port)
        self.run = uuid.uuid4().hex[:12]
        self.logs: dict[str, list[list[Message]]] = {}  # topic -> partition -> messages
        self.producers: dict[tuple[str, int], Producer] = {}
        self.commits: dict[tuple[str, str, int], int] = {}
        self.groups: dict[str, Group] = {}  # by topic: one consumer group per topic
        self.counter = 0

    def teardown(self) -> None:
        self.client.close()

    def send(self, req: Command | Batch) -> Reply:
        return self.client.request(req)

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.run}-{self.counter}"

    # ----------------------------------------------------------------- topics

    @precondition(lambda self: len(self.logs) < MAX_TOPICS)
    @rule(partitions=st.integers(1, 4))
    def create_topic(self, partitions: int) -> None:
        topic = self.fresh("t")
        got = ok_fields(self.send(Command("CREATE", (topic, partitions))), "CREATE")
        assert got == {"topic": topic, "partitions": str(partitions)}
        self.logs[topic] = [[] for _ in range(partitions)]
        listed = self.send(Command("LIST"))
        assert isinstance(listed, TopicList), listed
        assert set(self.logs) <= set(listed.topics), listed

    def pick_partition(self, data: st.DataObject) -> tuple[str, int]:
        topic = data.draw(st.sampled_from(sorted(self.logs)), label="topic")
        return topic, data.draw(st.integers(0, len(self.logs[topic]) - 1), label="partition")

    # ---------------------------------------------------------------- produce

    @precondition(lambda self: self.logs)
    @rule(
        data=st.data(),
        acks=st.sampled_from(("0", "1", "-1", "all", "")),
        idempotent=st.booleans(),
        gap=st.sampled_from((0, 0, 7)),
        epoch_step=st.sampled_from((0, 0, 1, -1)),
    )
    def produce(
        self, data: st.DataObject, acks: str, idempotent: bool, gap: int, epoch_step: int
    ) -> None:
        """The document states no sequence or epoch rule: a gap or a lower epoch is stored."""
        topic, partition = self.pick_partition(data)
        msgs = data.draw(st.lists(cs.messages(), min_size=1 if idempotent else 0, max_size=3))
        tracked = 0
        if idempotent:
            key = (topic, partition)
            producer = self.producers.setdefault(key, Producer(self.fresh("p")))
            first = producer.next_seq + gap
            epoch = 1 if producer.epoch is None else producer.epoch + epoch_step
            msgs = [
                replace(m, producer_id=producer.producer_id, epoch=epoch, seq_num=first + i)
                for i, m in enumerate(msgs)
            ]
            seq_start, seq_end = first, first + len(msgs) - 1
            tracked = epoch if producer.epoch is None else max(producer.epoch, epoch)
            producer.epoch = tracked
        else:
            seq_start, seq_end = data.draw(st.integers(0, 999)), data.draw(st.integers(0, 999))
        batch = Batch(topic, str(partition), acks, idempotent, seq_start, seq_end, tuple(msgs))
        log = self.logs[topic][partition]
        expected_last = len(log) + len(msgs) - 1 if msgs else -1
        ack = self.send(batch)
        assert isinstance(ack, BatchAck), f"a batch got {ack} instead of an ack"
        assert (ack.status, ack.error) == ("OK", ""), ack
        assert ack.last_offset == expected_last, (ack, len(log), len(msgs))
        assert (ack.seq_start, ack.seq_end) == (seq_start, seq_end), ack
        assert ack.producer_id == (msgs[0].producer_id if msgs else ""), ack
        want_epoch = tracked if idempotent else msgs[0].epoch if msgs else 0
        assert ack.producer_epoch == want_epoch, ack
        assert ack.leader, "the ack names no leader"
        log.extend(msgs)
        if idempotent:
            producer.next_seq = seq_end + 1
            producer.last_batch, producer.last_offset = batch, expected_last

    @precondition(lambda self: any(p.last_batch for p in self.producers.values()))
    @rule(data=st.data())
    def resend_idempotent_batch(self, data: st.DataObject) -> None:
        sent = [p for p in self.producers.values() if p.last_batch is not None]
        producer = data.draw(st.sampled_from(sent), label="producer")
        assert producer.last_batch is not None
        ack = self.send(producer.last_batch)
        assert isinstance(ack, BatchAck) and ack.status == "OK", ack
        assert ack.last_offset == producer.last_offset, f"a duplicate got new offsets: {ack}"
        b = producer.last_batch
        hwm = len(self.logs[b.topic][int(b.partition)])
        tail = self.send(Command("CONSUME", (b.topic, int(b.partition), hwm)))
        assert isinstance(tail, Batch) and tail.messages == (), f"the duplicate was stored: {tail}"

    # ---------------------------------------------------------------- consume

    @precondition(lambda self: self.logs)
    @rule(data=st.data())
    def consume(self, data: st.DataObject) -> None:
        topic, partition = self.pick_partition(data)
        log = self.logs[topic][partition]
        offset = data.draw(st.integers(0, len(log) + 3), label="offset")
        got = self.send(Command("CONSUME", (topic, partition, offset)))
        assert isinstance(got, Batch), got  # past the end: an empty batch (CUR-CONV-3)
        assert (got.topic, got.partition) == (topic, str(partition))
        want = [
            replace(m, offset=offset + i) for i, m in enumerate(log[offset : offset + MAX_POLL])
        ]
        assert list(got.messages) == want

    # ---------------------------------------------------------------- offsets

    @precondition(lambda self: self.logs)
    @rule(data=st.data(), group=st.sampled_from(("a", "b")))
    def commit(self, data: st.DataObject, group: str) -> None:
        topic, partition = self.pick_partition(data)
        offset = data.draw(st.integers(0, len(self.logs[topic][partition]) + 3), label="offset")
        name = f"o{self.run}-{group}"
        ok_fields(self.send(Command("COMMIT", (topic, name, partition, offset))), "COMMIT")
        self.commits[(name, topic, partition)] = offset

    @precondition(lambda self: self.logs)
    @rule(data=st.data())
    def fetch_offset(self, data: st.DataObject) -> None:
        topic, partition = self.pick_partition(data)
        names = [f"o{self.run}-a", f"o{self.run}-b"]
        if topic in self.groups:
            names.append(self.groups[topic].name)
        name = data.draw(st.sampled_from(names), label="group")
        got = ok_fields(self.send(Command("FETCH_OFFSET", (topic, name, partition))), "FETCH")
        assert got == {"offset": str(self.commits.get((name, topic, partition), -1))}

    # ---------------------------------------------------------------- refused

    @precondition(lambda self: self.logs)
    @rule(
        data=st.data(),
        below=st.integers(-(2**63), -1),
        what=st.sampled_from(("consume", "stream", "commit", "partition", "create")),
    )
    def refused_request(self, data: st.DataObject, below: int, what: str) -> None:
        """Refused (CUR-ERR-6, CUR-CONV-12), and nothing changes: the other rules go on
        checking the same model."""
        topic, partition = self.pick_partition(data)
        group = f"o{self.run}-a"
        requests = {
            "consume": (Command("CONSUME", (topic, partition, below)), "OFFSET_OUT_OF_RANGE"),
            "stream": (Command("STREAM", (topic, partition, below)), "OFFSET_OUT_OF_RANGE"),
            "commit": (Command("COMMIT", (topic, group, partition, below)), "OFFSET_OUT_OF_RANGE"),
            "partition": (Command("FETCH_OFFSET", (topic, group, below)), "UNKNOWN_PARTITION"),
            "create": (Command("CREATE", (topic, len(self.logs[topic]) + 1)), "TOPIC_EXISTS"),
        }
        req, code = requests[what]
        got = self.send(req)
        assert isinstance(got, ErrorReply) and got.code == code, f"{req}: {got}, expected {code}"
        if what == "create":  # the topic kept its partitions: the next one is still unknown
            beyond = Command("CONSUME", (topic, len(self.logs[topic]), 0))
            got = self.send(beyond)
            assert isinstance(got, ErrorReply) and got.code == "UNKNOWN_PARTITION", got

    # ----------------------------------------------------------------- groups

    def pick_member(self, data: st.DataObject) -> tuple[Group, Member]:
        groups = [g for g in self.groups.values() if g.members]
        group = data.draw(st.sampled_from(groups), label="group")
        return group, data.draw(st.sampled_from(group.members), label="member")

    def has_members(self) -> bool:
        return any(g.members for g in self.groups.values())

    @precondition(lambda self: self.logs)
    @rule(data=st.data())
    def join(self, data: st.DataObject) -> None:
        topic = data.draw(st.sampled_from(sorted(self.logs)), label="topic")
        group = self.groups.setdefault(topic, Group(f"g{self.run}-{len(self.groups)}", topic))
        if len(group.members) >= MAX_MEMBERS:
            return
        consumer = self.fresh("c")
        got = ok_fields(self.send(Command("JOIN_GROUP", (topic, group.name, consumer))), "JOIN")
        generation = int(got["generation"])
        assert generation > group.generation, f"JOIN did not raise the generation: {got}"
        assert got["member"] and " " not in got["member"], got
        assert got["member"] not in {m.member_id for m in group.members}
        group.generation = generation
        group.members.append(Member(consumer, got["member"], generation))

    @precondition(has_members)
    @rule(data=st.data())
    def leave(self, data: st.DataObject) -> None:
        group, member = self.pick_member(data)
        cmd = Command("LEAVE_GROUP", (group.topic, group.name, member.consumer_id))
        ok_fields(self.send(cmd), "LEAVE")
        group.members.remove(member)
        if group.members:  # the others learn of the new generation through a heartbeat
            self.heartbeat_member(group, group.members[0], moved=True)

    def heartbeat_member(self, group: Group, member: Member, *, moved: bool = False) -> None:
        """HEARTBEAT; ``moved``: the group went to a generation the model has not seen yet."""
        args = (group.topic, group.name, member.consumer_id, member.member_id, member.generation)
        got = self.send(Command("HEARTBEAT", args))
        if member.generation == group.generation and not moved:
            assert isinstance(got, OkReply), f"HEARTBEAT at the current generation gave {got}"
            return
        assert isinstance(got, SpecialReply), f"HEARTBEAT at a stale generation gave {got}"
        assert got.kind in (REBALANCE_REQUIRED, GEN_MISMATCH), got
        current = generation_in(got.text)
        if moved:
            assert current > group.generation, f"the generation did not go up: {got}"
        else:
            assert current == group.generation, f"expected generation {group.generation}: {got}"
        group.generation = member.generation = current

    @precondition(has_members)
    @rule(data=st.data())
    def heartbeat(self, data: st.DataObject) -> None:
        group, member = self.pick_member(data)
        self.heartbeat_member(group, member)

    def sync_member(self, group: Group, member: Member) -> list[int]:
        args = (group.topic, group.name, member.member_id, member.generation)
        got = self.send(Command("SYNC_GROUP", args))
        if member.generation != group.generation:
            assert isinstance(got, SpecialReply) and got.kind == GEN_MISMATCH, got
            assert generation_in(got.text) == group.generation, got
            member.generation = group.generation
            return []
        fields = ok_fields(got, "SYNC_GROUP")
        assert fields["generation"] == str(group.generation), fields
        parts = [int(p) for p in fields["assignment"].split(",") if p]
        assert set(parts) <= set(range(len(self.logs[group.topic]))), fields
        return parts

    @precondition(has_members)
    @rule(data=st.data())
    def sync(self, data: st.DataObject) -> None:
        group, member = self.pick_member(data)
        self.sync_member(group, member)

    @precondition(has_members)
    @rule(data=st.data())
    def sync_everyone(self, data: st.DataObject) -> None:
        group = data.draw(st.sampled_from([g for g in self.groups.values() if g.members]))
        owners: dict[int, str] = {}
        for member in group.members:
            member.generation = group.generation
            for p in self.sync_member(group, member):
                assert p not in owners, f"partition {p} given to {owners[p]} and {member.member_id}"
                owners[p] = member.member_id
        assert sorted(owners) == list(range(len(self.logs[group.topic])))

    @precondition(has_members)
    @rule(data=st.data())
    def batch_commit(self, data: st.DataObject) -> None:
        group, member = self.pick_member(data)
        logs = self.logs[group.topic]
        chosen = data.draw(
            st.lists(st.integers(0, len(logs) - 1), min_size=1, max_size=len(logs), unique=True)
        )
        offsets = tuple((p, data.draw(st.integers(0, len(logs[p]) + 3))) for p in chosen)
        args = (group.topic, group.name, member.member_id, member.generation, offsets)
        got = self.send(Command("BATCH_COMMIT", args))
        if member.generation != group.generation:
            assert isinstance(got, SpecialReply) and got.kind == GEN_MISMATCH, got
            member.generation = generation_in(got.text)
            return
        assert ok_fields(got, "BATCH_COMMIT") == {"committed": str(len(offsets))}
        for p, o in offsets:
            self.commits[(group.name, group.topic, p)] = o


@pytest.fixture(scope="module")
def target() -> Iterator[broker.Broker]:
    with broker.running("--session-timeout", "600") as b:
        yield b


def test_reference_broker_agrees_with_the_model(target: broker.Broker) -> None:
    run_state_machine_as_test(
        lambda: CursusModel(target), settings=settings(stateful_step_count=20)
    )
