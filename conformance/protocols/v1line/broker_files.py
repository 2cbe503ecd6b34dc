"""The V1 broker's ``groups.json`` and ``offsets.json``: a view of the engine's groups.

The engine's journal is what the broker recovers from; the two files (durable.py writes
them atomically) are rewritten from the engine after every change of a group's generation,
members or assignor and after every COMMIT, before the reply is sent (V1L-DUR-1..6).  So a
kill between the journal write and the file write leaves a file one change behind the
journal, never ahead of it.  At start the files are checked against the recovered state:
one that holds a group at a generation the journal has not reached, or an offset the
journal never had (a data directory written by another broker, or a journal removed by
hand, or a journal written without ``--fsync`` that lost its last writes to a power loss,
while the files, always fsynced, kept theirs), stops the broker with one line instead of
being overwritten.

``last_heartbeat_unix_ms`` is written as 0: session times are not durable here (a
restarted broker gives every member a fresh session).  A group is written with its first
topic (a V1 group reads one topic; the engine's may have several).  Each save asks the
engine for every group: its cost grows with the number of groups, which is fine for a
reference broker and costs nothing without a data directory.
"""

from __future__ import annotations

from conformance.engine import Engine
from conformance.exits import UsageError
from conformance.protocols.v1line import durable


class GroupFilesView:
    """``groups.json`` and ``offsets.json`` under the engine's data directory."""

    def __init__(self, engine: Engine, files: durable.GroupFiles) -> None:
        self.engine = engine
        self.files = files
        self._written: tuple[dict[str, durable.Group], durable.Offsets] | None = None

    def view(self) -> tuple[dict[str, durable.Group], durable.Offsets]:
        groups: dict[str, durable.Group] = {}
        offsets: durable.Offsets = {}
        for info in self.engine.list_groups():
            committed = self.engine.committed_all(info.name)
            if committed:
                offsets[info.name] = committed
            if not info.topics:
                continue
            topic = info.topics[0]
            order = [m.member_id for m in info.members]
            groups[info.name] = durable.Group(
                topic=topic,
                generation=info.generation,
                assignor="round_robin" if info.assignor == "roundrobin" else info.assignor,
                member_order=order,
                assignments={m.member_id: list(m.assignment.get(topic, [])) for m in info.members},
                members=[durable.Member(m, 0) for m in order],
            )
        return groups, offsets

    def check(self) -> None:
        """Refuse to start (UsageError, one line) on files ahead of the recovered state."""
        try:
            groups, offsets = self.files.load()
        except durable.DurableStateError as exc:
            raise UsageError(f"cannot start the v1line broker: {exc}") from None
        known = {info.name: info.generation for info in self.engine.list_groups()}
        ahead: list[str] = []
        for name, g in groups.items():
            if known.get(name, -1) < g.generation:
                ahead.append(f"group {name!r} at generation {g.generation}")
        for name, topics in offsets.items():
            for topic, parts in topics.items():
                for partition, offset in parts.items():
                    # the value may differ: a kill between the journal and the file leaves
                    # the file one commit behind (and a commit may lower an offset)
                    if self.engine.committed(name, topic, partition) is None:
                        ahead.append(f"offset {offset} of {name!r} {topic}/{partition}")
        if ahead:
            more = f" and {len(ahead) - 1} more" if len(ahead) > 1 else ""
            raise UsageError(
                f"cannot start the v1line broker: {self.files.data_dir} holds {ahead[0]}{more} "
                "that its journal does not (files of another broker, or a journal that lost "
                "writes to a power loss without --fsync?); move groups.json and offsets.json "
                "away or use another --data-dir"
            )

    def save(self) -> None:
        """Rewrite whichever file no longer matches the engine."""
        groups, offsets = self.view()
        before = self._written
        if before is None or before[0] != groups:
            self.files.save_groups(groups)
        if before is None or before[1] != offsets:
            self.files.save_offsets(offsets)
        self._written = (groups, offsets)
