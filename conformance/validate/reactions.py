"""What a client did next after a fault, read from the events that followed it.

Each event after a fault (up to :data:`conformance.validate.ledger.FOLLOW` of them, on the
faulted connection and on connections opened after it) gives next-step *tags*; a protocol's
:class:`Expectation` lists the tags that count as coping.  Generic tags:

``retried``                a request of the same kind about the same thing (topic-partition,
                           group, ...) as the one the fault hit, and, when both say what
                           they carry (``identity``), the same (else it is new work)
``re-sent the same``       ... carrying the same identity (a producer batch's sequence)
``went on``                a request of another kind on the same connection
``reconnected``            a new connection
``closed the connection``  the client closed the connection the fault hit
``sent something illegal`` a request that broke a client requirement
``sent nothing more``      no event followed before the broker stopped

and the protocol's own, named by request kind (:attr:`Validation.next_steps`:
``Metadata`` -> ``refreshed metadata``, ``JoinGroup`` -> ``re-joined``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from conformance.validate.ledger import Fired

RETRIED = "retried"
RESENT = "re-sent the same"
WENT_ON = "went on"
RECONNECTED = "reconnected"
CLOSED = "closed the connection"
ILLEGAL = "sent something illegal"
NOTHING = "sent nothing more"

# Tags seen after another fault fired are kept apart (``Reaction.later``): on the faulted
# connection once another fault fired there, elsewhere once another fault fired at all.


@dataclass(frozen=True)
class Reaction:
    tags: tuple[str, ...]
    """Every next-step tag before another fault fired, in the order first seen: what the
    client did about this fault (what its expectation is judged on)."""
    steps: tuple[str, ...]
    """The events, one line each: ``conn 3: Metadata v12 corr 9 (refreshed metadata)``."""
    later: tuple[str, ...] = ()
    """Tags seen only after another fault fired (shown, not judged: they may answer it)."""

    def met(self, expect: tuple[str, ...]) -> bool:
        return any(tag in self.tags for tag in expect)


def react(fired: Fired, next_steps: Mapping[str, str]) -> Reaction:
    tags: list[str] = []
    later: list[str] = []
    steps: list[str] = []

    def tag(name: str) -> str:
        # judged: what came before another fault fired (on this connection: before another
        # fault fired on it); the rest may answer that other fault
        judged = not (here if event.conn == fired.conn else elsewhere)
        into = tags if judged else later
        if name not in into and name not in tags:
            into.append(name)
        return name

    here = elsewhere = False
    for event in fired.after:
        if event.what == "fault":
            elsewhere = True
            here = here or event.conn == fired.conn
            steps.append(f"conn {event.conn}: {event.by} fired")
            continue
        if event.what == "open":
            steps.append(f"conn {event.conn}: opened ({tag(RECONNECTED)})")
            continue
        if event.what == "close":
            if event.by is not None:
                steps.append(f"conn {event.conn}: {event.by}")
            elif event.conn == fired.conn:
                steps.append(f"conn {event.conn}: closed by the client ({tag(CLOSED)})")
            else:
                steps.append(f"conn {event.conn}: closed")
            continue
        seen = event.seen
        if seen is None:
            continue
        meant = []
        same = seen.kind == fired.seen.kind and (
            seen.target is None or fired.seen.target is None or seen.target == fired.seen.target
        )
        other = (
            None not in (seen.identity, fired.seen.identity)
            and seen.identity != fired.seen.identity
        )
        if same and not other:
            meant.append(tag(RETRIED))
            if seen.identity is not None and seen.identity == fired.seen.identity:
                meant.append(tag(RESENT) + f" ({seen.identity})")
        elif same and event.conn == fired.conn:  # the same kind, something else: new work
            meant.append(tag(WENT_ON))
        elif seen.kind in next_steps:
            meant.append(tag(next_steps[seen.kind]))
        elif event.conn == fired.conn:
            meant.append(tag(WENT_ON))
        if seen.violations:
            broken = ", ".join(sorted({v.requirement for v in seen.violations}))
            meant.append(tag(ILLEGAL) + f": {broken}")
        note = f" ({'; '.join(meant)})" if meant else ""
        steps.append(f"conn {event.conn}: {seen.summary}{note}")
    if all(e.what == "fault" or e.by is not None for e in fired.after):
        tags.append(NOTHING)  # nothing of the client's: no request, connection or close
    return Reaction(tuple(tags), tuple(steps), tuple(later))
