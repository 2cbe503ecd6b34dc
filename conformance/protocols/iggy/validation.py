"""Iggy's part of ``serve --validate``: the client checks and the faults (sans-IO).

:class:`IggyValidation` is the :class:`~conformance.validate.contract.Validation` of one
``serve --protocol iggy --validate``, for its revision (``classic`` or ``doc``).  Each
connection gets an :class:`~.validation_checks.IggyChecker`; a request's *kind*, which a
fault plan's ``on`` names, is its command's name as the codec spells it in upper case
(``SEND_MESSAGES``, ``POLL_MESSAGES``, ``LOGIN_USER``), or ``UNKNOWN``.

Errors a plan may inject (``error=NAME``) are statuses a real 0.8 server answers, each
only to the commands whose handlers can answer it (FACTS.md section 5, SPEC.md); the
reply is what the server writes for any error: the status and an empty payload
(FACTS.md section 1, "error reply").  What a client should do next:

* ``UNAUTHENTICATED`` (classic): log in again (IGG-CLI-14); the checker also holds the
  connection logged out from then on (IGG-CLI-7);
* ``CONSUMER_GROUP_MEMBER_NOT_FOUND`` to a group poll or offset store: join the group
  again (IGG-CLI-16);
* every other error: go on to another request, log in or rejoin its group, or end its
  work (close, send nothing more), but not only repeat that kind of request about the
  same thing (IGG-CLI-13).

Transport faults: after a ``slow`` or ``split`` reply the client goes on on the same
connection (IGG-CLI-15: a retry there counts, a reconnect alone does not) or ends its
work; after a ``reset`` it logs in again on a new connection (classic) or reconnects
(doc) (IGG-CLI-14).  A request's *target* names its connection, so that a request on a
new connection is never taken for a retry on the old one.

Ending its work counts because a fault may hit a client's last request, and a close
after reading the reply cannot be told from a close instead of reading it; so a client
that gives up on a split reply, closes and reconnects is not caught by these verdicts
(in classic its new connection must log in again, which IGG-CLI-7 checks).

Not injectable: StaleClient (30) and ClientNotFound (100), which the real server follows
with closing the connection; an ``error`` fault cannot close it after its reply.
There are no protocol actions (``actions`` is empty).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from conformance.protocols.iggy import codec
from conformance.protocols.iggy.errors import NAMES as STATUS_NAMES
from conformance.protocols.iggy.messages import NAMES
from conformance.protocols.iggy.validation_checks import IggyChecker
from conformance.protocols.iggy.validation_fields import Knowledge
from conformance.validate.contract import Expectation
from conformance.validate.reactions import CLOSED, NOTHING, RECONNECTED, RETRIED, WENT_ON

if TYPE_CHECKING:
    from conformance.plugin import ServeConfig
    from conformance.server import Frontend

STATUS = {name: code for code, name in STATUS_NAMES.items()}
LOGGED_IN = "logged in again"
REJOINED = "re-joined the group"
GO_ON = (WENT_ON, LOGGED_IN, REJOINED, CLOSED, NOTHING)
"""After an error: anything but repeating that kind of request about the same thing
(ending its work counts: the error may have come to the client's last request)."""

_STREAMED = (
    "SEND_MESSAGES",
    "POLL_MESSAGES",
    "STORE_CONSUMER_OFFSET",
    "CREATE_TOPIC",
    "DELETE_STREAM",
    "DELETE_TOPIC",
    "CREATE_PARTITIONS",
    "DELETE_PARTITIONS",
    "CREATE_CONSUMER_GROUP",
    "DELETE_CONSUMER_GROUP",
    "JOIN_CONSUMER_GROUP",
    "LEAVE_CONSUMER_GROUP",
)
"""Commands that resolve a stream and answer 1009 when it is missing
(core/server/src/shard/system/utils.rs ``resolve_stream``; GET_* answer empty instead)."""
_TOPICAL = tuple(k for k in _STREAMED if k not in ("CREATE_TOPIC", "DELETE_STREAM"))
_GROUPED = (
    "POLL_MESSAGES",
    "STORE_CONSUMER_OFFSET",
    "DELETE_CONSUMER_GROUP",
    "JOIN_CONSUMER_GROUP",
    "LEAVE_CONSUMER_GROUP",
)

_BOTH: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    # name: (requirement, what the client should do next, the kinds that can carry it)
    "ERROR": ("IGG-CLI-13", GO_ON, ()),
    "STREAM_ID_NOT_FOUND": ("IGG-CLI-13", GO_ON, _STREAMED),
    "TOPIC_ID_NOT_FOUND": ("IGG-CLI-13", GO_ON, _TOPICAL),
    "PARTITION_NOT_FOUND": (
        "IGG-CLI-13",
        GO_ON,
        ("SEND_MESSAGES", "POLL_MESSAGES", "STORE_CONSUMER_OFFSET"),
    ),
    "STREAM_NAME_ALREADY_EXISTS": ("IGG-CLI-13", GO_ON, ("CREATE_STREAM",)),
    "TOPIC_NAME_ALREADY_EXISTS": ("IGG-CLI-13", GO_ON, ("CREATE_TOPIC",)),
    "CONSUMER_GROUP_NAME_ALREADY_EXISTS": ("IGG-CLI-13", GO_ON, ("CREATE_CONSUMER_GROUP",)),
    "CONSUMER_GROUP_ID_NOT_FOUND": ("IGG-CLI-13", GO_ON, _GROUPED),
    "CONSUMER_GROUP_MEMBER_NOT_FOUND": (
        "IGG-CLI-16",
        (REJOINED,),
        ("POLL_MESSAGES", "STORE_CONSUMER_OFFSET"),
    ),
    "INVALID_OFFSET": ("IGG-CLI-13", GO_ON, ("STORE_CONSUMER_OFFSET",)),
}
_CLASSIC: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "UNAUTHENTICATED": ("IGG-CLI-14", (LOGGED_IN,), ()),
    "INVALID_CREDENTIALS": (
        "IGG-CLI-13",
        (WENT_ON, CLOSED, NOTHING),
        ("LOGIN_USER",),
    ),
    "CONSUMER_OFFSET_NOT_FOUND": ("IGG-CLI-13", GO_ON, ("DELETE_CONSUMER_OFFSET",)),
    "NOT_RESOLVED_CONSUMER": (
        "IGG-CLI-13",
        GO_ON,
        ("STORE_CONSUMER_OFFSET", "DELETE_CONSUMER_OFFSET"),
    ),
}
_UNGATED = ("PING", "LOGIN_USER")
_AS_GROUP = (
    "CONSUMER_GROUP_ID_NOT_FOUND",
    "CONSUMER_GROUP_MEMBER_NOT_FOUND",
    "NOT_RESOLVED_CONSUMER",
)
"""Errors a poll or an offset command gets only as a group consumer (its Consumer kind 2;
core/server/src/metadata/reader.rs ``resolve_consumer_group_partition``)."""
_CONSUMING = ("POLL_MESSAGES", "STORE_CONSUMER_OFFSET", "DELETE_CONSUMER_OFFSET")


def _errors(revision: str) -> dict[str, Expectation]:
    table = dict(_BOTH)
    if revision == "classic":
        table.update(_CLASSIC)
    known = {name.upper() for name in codec.tables(revision)[0]}
    out = {}
    for name, (req, expect, kinds) in table.items():
        if name == "UNAUTHENTICATED":
            kinds = tuple(sorted(known - set(_UNGATED)))
        out[name] = Expectation(req, expect, kinds=tuple(k for k in kinds if k in known))
    return out


class IggyValidation:
    """The client checks and faults of one validating Iggy broker (see the module doc)."""

    def __init__(self, revision: str = "classic") -> None:
        codec.tables(revision)  # an unknown revision fails here
        self.revision = revision
        self.known = Knowledge()
        self.errors: Mapping[str, Expectation] = _errors(revision)
        self.actions: Mapping[str, Expectation] = {}
        goes_on = Expectation("IGG-CLI-15", (WENT_ON, RETRIED, CLOSED, NOTHING))
        again = (LOGGED_IN,) if revision == "classic" else (RECONNECTED,)
        self.transport: Mapping[str, Expectation] = {
            "slow": goes_on,
            "split": goes_on,
            "reset": Expectation("IGG-CLI-14", again),
        }
        steps = {"JOIN_CONSUMER_GROUP": REJOINED}
        if revision == "classic":
            steps["LOGIN_USER"] = LOGGED_IN
        self.next_steps: Mapping[str, str] = steps

    def connection(self, conn: int) -> IggyChecker:
        return IggyChecker(conn, self.revision, self.known)

    def error_reply(self, request: bytes, error: str) -> bytes | None:
        expected = self.errors.get(error)
        if expected is None or len(request) < 4:
            return None
        name = NAMES.get(codec.split_request(request)[0])
        if name is None or name not in codec.tables(self.revision)[0]:
            return None
        if expected.kinds and name.upper() not in expected.kinds:
            return None
        if error in _AS_GROUP and name.upper() in _CONSUMING and request[4:5] != b"\x02":
            return None  # a plain consumer (kind 1) is never told about groups
        return codec.U32.pack(STATUS[error])

    def act(self, action: str, request: bytes) -> None:
        raise ValueError(f"Iggy has no fault action {action!r}")


def validation(frontend: Frontend, config: ServeConfig) -> IggyValidation:
    """The plug-in's ``validation`` factory (the front-end is not needed: no actions)."""
    return IggyValidation(config.revision)
