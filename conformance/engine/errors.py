"""Engine refusals: one exception type whose ``code`` names the rule that was broken.

Front-ends map ``code`` to their own protocol's error names; the message is written for
a person and says what was asked and why it cannot be done.  It never repeats the code.
"""

from __future__ import annotations

UNKNOWN_TOPIC = "UNKNOWN_TOPIC"
TOPIC_EXISTS = "TOPIC_EXISTS"
INVALID_PARTITIONS = "INVALID_PARTITIONS"
UNKNOWN_PARTITION = "UNKNOWN_PARTITION"
OFFSET_OUT_OF_RANGE = "OFFSET_OUT_OF_RANGE"
INVALID_ARGUMENT = "INVALID_ARGUMENT"
UNKNOWN_GROUP = "UNKNOWN_GROUP"
GROUP_EXISTS = "GROUP_EXISTS"
UNKNOWN_MEMBER = "UNKNOWN_MEMBER"
GENERATION_MISMATCH = "GENERATION_MISMATCH"
PARTITION_NOT_OWNED = "PARTITION_NOT_OWNED"
OUT_OF_ORDER_SEQUENCE = "OUT_OF_ORDER_SEQUENCE"
PRODUCER_FENCED = "PRODUCER_FENCED"
CLOSED = "CLOSED"


class EngineError(Exception):
    """A request the engine refuses; ``code`` is an upper-case word such as UNKNOWN_TOPIC."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code

    @property
    def message(self) -> str:
        return str(self)

    def __repr__(self) -> str:
        return f"EngineError({self.code!r}, {str(self)!r})"
