"""The topic and broker configurations the Kafka front-end describes, as data.

Each :class:`ConfigDef` is one of Apache Kafka's topic configs (``LogConfig``'s
definitions in Kafka 3.9: name, type, default, validator, and the broker config it
falls back to), with what this broker does with it (``honoured``: empty when it only
stores and describes the value).  The reference broker stores every topic config a
client sets (IncrementalAlterConfigs, CreateTopics) and describes it back, but honours
only a few: a broker with one in-memory or journaled log per partition has no segments,
retention, compaction or replicas to apply the others to.  What is honoured:

* ``max.message.bytes``: Produce refuses a batch larger than it with MESSAGE_TOO_LARGE,
  as Kafka's ``UnifiedLog.analyzeAndValidateRecords`` does (handlers/produce.py asks
  :func:`conformance.protocols.kafka.topic_configs.max_message_bytes`);
* ``cleanup.policy``: DeleteRecords refuses a topic whose policy lacks ``delete`` with
  POLICY_VIOLATION, as Kafka's ``Partition.deleteRecordsOnLeader`` does.
* ``compression.type``: Produce stores a batch in the topic's codec, recompressed
  unless ``producer`` or the batch's own, as Kafka's ``LogValidator`` does
  (:mod:`conformance.protocols.kafka.stored_batches`).

Validation follows Kafka's ``ConfigDef``: a value is trimmed, parsed by type (a bad
number or boolean is a ``ConfigError``, which the handlers answer INVALID_CONFIG) and
checked by the validator (at least, between, one of, a list of).  Values are rendered
as Kafka's ``ConfigDef.convertToString`` renders them.  Kafka's cross-field checks (for
instance min.compaction.lag.ms against max.compaction.lag.ms) are not made.

Rules: data and pure functions only; nothing here touches the engine.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST = 1, 2, 3, 4, 5, 6, 7
"""Kafka's config types as DescribeConfigs v3+ numbers them (``ConfigType``)."""

TOPIC, BROKER = 2, 4
"""Resource types (Kafka's ``ConfigResource.Type``): the two this broker serves."""

TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
"""Config sources (DescribeConfigs v1+, Kafka's ``ConfigSource``)."""

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
"""IncrementalAlterConfigs operations (Kafka's ``AlterConfigOp.OpType``)."""

INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1


class ConfigError(ValueError):
    """A value a config does not accept (Kafka's ConfigException: INVALID_CONFIG)."""


Check = Callable[[object], str | None]
"""A validator: None if the parsed value passes, else why not."""


def at_least(low: float) -> Check:
    return lambda v: None if isinstance(v, int | float) and v >= low else f"at least {low}"


def between(low: float, high: float) -> Check:
    return lambda v: (
        None if isinstance(v, int | float) and low <= v <= high else f"in [{low},...,{high}]"
    )


def one_of(*options: str) -> Check:
    return lambda v: None if v in options else f"one of {', '.join(options)}"


def list_of(*options: str) -> Check:
    def check(v: object) -> str | None:
        bad = [x for x in v if x not in options] if isinstance(v, list) else [v]
        return None if not bad else f"a list of {', '.join(options)}"

    return check


@dataclass(frozen=True)
class ConfigDef:
    name: str
    type: int
    default: str | None
    """Kafka's default, rendered as DescribeConfigs renders it."""
    check: Check | None = None
    synonym: str | None = None
    """The broker config that supplies the default (described as a DEFAULT_CONFIG
    synonym when synonyms are asked for), when Kafka's broker has a default for it."""
    honoured: str = ""
    """What this broker does with the value; empty: stored and described only."""
    doc: str = ""

    def parse(self, raw: str) -> object:
        """The value ``raw`` stands for; ConfigError if the type or validator refuses it."""
        text = raw.strip()
        value: object
        try:
            if self.type in (INT, LONG):
                if not _INTEGER.fullmatch(text):  # Java's parseInt: no "_", no spaces inside
                    raise ValueError(text)
                value = int(text)
                low, high = (INT_MIN, INT_MAX) if self.type == INT else (LONG_MIN, LONG_MAX)
                if not low <= value <= high:
                    raise ValueError(text)
            elif self.type == DOUBLE:
                if not _DECIMAL.fullmatch(text):
                    raise ValueError(text)
                value = float(text)
            elif self.type == BOOLEAN:
                if text.lower() not in ("true", "false"):
                    raise ValueError(text)
                value = text.lower() == "true"
            elif self.type == LIST:
                value = [x.strip() for x in text.split(",")] if text else []
            else:
                value = text
        except ValueError:
            raise ConfigError(
                f"Invalid value {raw} for configuration {self.name}: not a {TYPE_NAMES[self.type]}"
            ) from None
        why = self.check(value) if self.check is not None else None
        if why is not None:
            raise ConfigError(f"Invalid value {raw} for configuration {self.name}: must be {why}")
        return value

    def render(self, raw: str) -> str:
        """``raw`` (already accepted) as Kafka describes it: parsed, then written again."""
        value = self.parse(raw)
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, list):
            return ",".join(value)
        return str(value)


TYPE_NAMES = {
    BOOLEAN: "boolean",
    STRING: "string",
    INT: "int",
    SHORT: "short",
    LONG: "long",
    DOUBLE: "double",
    LIST: "list",
}

_DAY_MS, _WEEK_MS = 86_400_000, 604_800_000
_COMPRESSION = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

TOPIC_CONFIGS: dict[str, ConfigDef] = {
    c.name: c
    for c in (
        ConfigDef(
            "cleanup.policy",
            LIST,
            "delete",
            list_of("compact", "delete"),
            "log.cleanup.policy",
            honoured="DeleteRecords refuses a policy without delete (POLICY_VIOLATION)",
            doc="How old segments are cleaned up: delete, compact or both. Only DeleteRecords "
            "looks at it here; nothing is ever deleted or compacted by time or size.",
        ),
        ConfigDef(
            "compression.type",
            STRING,
            "producer",
            one_of(*_COMPRESSION),
            "compression.type",
            honoured="Produce stores a batch in this codec (recompressed unless producer)",
            doc="The codec stored batches are given; producer keeps the producer's.",
        ),
        ConfigDef(
            "compression.gzip.level",
            INT,
            "-1",
            lambda v: None if v == -1 or v in range(1, 10) else "-1 or in [1,...,9]",
            doc="gzip level.",
        ),
        ConfigDef("compression.lz4.level", INT, "9", between(1, 17), doc="lz4 level."),
        ConfigDef("compression.zstd.level", INT, "3", between(-131072, 22), doc="zstd level."),
        ConfigDef(
            "delete.retention.ms",
            LONG,
            str(_DAY_MS),
            at_least(0),
            "log.cleaner.delete.retention.ms",
            doc="How long delete tombstones are kept in a compacted topic.",
        ),
        ConfigDef(
            "file.delete.delay.ms",
            LONG,
            "60000",
            at_least(0),
            "log.segment.delete.delay.ms",
            doc="How long a removed segment file is kept.",
        ),
        ConfigDef(
            "flush.messages",
            LONG,
            str(LONG_MAX),
            at_least(1),
            "log.flush.interval.messages",
            doc="Records between forced flushes.",
        ),
        ConfigDef("flush.ms", LONG, str(LONG_MAX), at_least(0), doc="Time between flushes."),
        ConfigDef(
            "index.interval.bytes",
            INT,
            "4096",
            at_least(0),
            "log.index.interval.bytes",
            doc="Bytes between offset index entries.",
        ),
        ConfigDef(
            "max.compaction.lag.ms",
            LONG,
            str(LONG_MAX),
            at_least(1),
            "log.cleaner.max.compaction.lag.ms",
            doc="The longest a record stays uncompacted.",
        ),
        ConfigDef(
            "max.message.bytes",
            INT,
            "1048588",
            at_least(0),
            "message.max.bytes",
            honoured="Produce refuses a larger batch (MESSAGE_TOO_LARGE)",
            doc="The largest record batch the topic accepts, in bytes.",
        ),
        ConfigDef(
            "message.timestamp.type",
            STRING,
            "CreateTime",
            one_of("CreateTime", "LogAppendTime"),
            "log.message.timestamp.type",
            doc="Whether a record keeps the producer's timestamp or gets the broker's.",
        ),
        ConfigDef(
            "message.timestamp.before.max.ms",
            LONG,
            str(LONG_MAX),
            at_least(0),
            "log.message.timestamp.before.max.ms",
            doc="How far in the past a record's timestamp may be.",
        ),
        ConfigDef(
            "message.timestamp.after.max.ms",
            LONG,
            str(LONG_MAX),
            at_least(0),
            "log.message.timestamp.after.max.ms",
            doc="How far in the future a record's timestamp may be.",
        ),
        ConfigDef(
            "min.cleanable.dirty.ratio",
            DOUBLE,
            "0.5",
            between(0, 1),
            "log.cleaner.min.cleanable.ratio",
            doc="The dirty share of a log that triggers compaction.",
        ),
        ConfigDef(
            "min.compaction.lag.ms",
            LONG,
            "0",
            at_least(0),
            "log.cleaner.min.compaction.lag.ms",
            doc="The shortest a record stays uncompacted.",
        ),
        ConfigDef(
            "min.insync.replicas",
            INT,
            "1",
            at_least(1),
            "min.insync.replicas",
            doc="Replicas that must acknowledge an acks=all write.",
        ),
        ConfigDef(
            "preallocate", BOOLEAN, "false", None, "log.preallocate", doc="Preallocate segments."
        ),
        ConfigDef(
            "retention.bytes",
            LONG,
            "-1",
            None,
            "log.retention.bytes",
            doc="The most bytes a partition keeps before old segments go (-1: no limit).",
        ),
        ConfigDef(
            "retention.ms",
            LONG,
            str(_WEEK_MS),
            at_least(-1),
            doc="How long records are kept (-1: forever). Not applied here.",
        ),
        ConfigDef(
            "segment.bytes",
            INT,
            str(1 << 30),
            at_least(14),
            "log.segment.bytes",
            doc="The size of a log segment file.",
        ),
        ConfigDef(
            "segment.index.bytes",
            INT,
            str(10 << 20),
            at_least(4),
            "log.index.size.max.bytes",
            doc="The size of a segment's offset index.",
        ),
        ConfigDef("segment.jitter.ms", LONG, "0", at_least(0), doc="Jitter of segment rolls."),
        ConfigDef("segment.ms", LONG, str(_WEEK_MS), at_least(1), doc="Time between rolls."),
        ConfigDef(
            "unclean.leader.election.enable",
            BOOLEAN,
            "false",
            None,
            "unclean.leader.election.enable",
            doc="Whether an out-of-sync replica may become leader.",
        ),
        ConfigDef(
            "remote.storage.enable", BOOLEAN, "false", None, doc="Tiered storage for the topic."
        ),
        ConfigDef(
            "local.retention.ms", LONG, "-2", at_least(-2), doc="Local retention with tiering."
        ),
        ConfigDef(
            "local.retention.bytes", LONG, "-2", at_least(-2), doc="Local bytes with tiering."
        ),
    )
}
"""Kafka's topic configs, by name, in the order DescribeConfigs lists them."""


@dataclass(frozen=True)
class BrokerConfig:
    name: str
    value: str
    type: int
    source: int
    doc: str


def broker_configs(node_id: int, default_partitions: int, auto_create: bool) -> list[BrokerConfig]:
    """The broker resource as this broker describes it: the static configs it has (each
    read-only, as Kafka's non-dynamic broker configs are)."""
    return [
        BrokerConfig("node.id", str(node_id), INT, STATIC_BROKER_CONFIG, "This node's id."),
        BrokerConfig("broker.id", str(node_id), INT, STATIC_BROKER_CONFIG, "Same as node.id."),
        BrokerConfig(
            "process.roles", "broker,controller", LIST, STATIC_BROKER_CONFIG, "The node's roles."
        ),
        BrokerConfig(
            "num.partitions",
            str(default_partitions),
            INT,
            STATIC_BROKER_CONFIG,
            "Partitions of an auto-created topic.",
        ),
        BrokerConfig(
            "auto.create.topics.enable",
            "true" if auto_create else "false",
            BOOLEAN,
            STATIC_BROKER_CONFIG,
            "Whether Metadata creates a topic it is asked about.",
        ),
        BrokerConfig(
            "default.replication.factor", "1", INT, DEFAULT_CONFIG, "Replicas of a new topic."
        ),
    ]
