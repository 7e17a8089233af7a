"""Every configuration key a user can set, defined once: its name, type, default and meaning.

A :class:`ConfigKey` is a key's definition and its typed reader: ``TASK_COMMIT_MS.get(config)``
is the int the job runs with (the default when the key is unset or blank), and a bad value is a
:class:`ConfigError` naming the key. The typed views (``JobConfig``, ``TaskConfig``, ...) and the
modules that read a key of their own read it through its definition here, so a name, a default
or a meaning is written once; ``docs/reference.md`` lists every definition and
``tests/config/test_config_keys.py`` checks the two agree.

Names with ``<...>`` parts are patterns: ``stores.<store>.factory`` is one key per store.
A stream property (:data:`STREAM_PROPERTIES`) may be set three ways, as in Samza:
``streams.<stream-id>.<property>``, ``systems.<system>.streams.<stream>.<property>`` or, for every
stream of a system, ``systems.<system>.default.stream.<property>``.

:data:`PLUGIN_PREFIXES` are namespaces whose keys belong to someone else (Kafka clients, Spark,
a user's serde factory): the engine passes them on and never calls one unknown. The pre-flight
(:mod:`samza_dagster.config.preflight`) uses these definitions to warn about a key that nothing
reads and to check every typed value before a job runs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar, overload

from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError

#: the type of a key's value (``int`` for ``task.commit.ms``; ``str | None`` for a key without a default)
T = TypeVar("T")
V = TypeVar("V")
#: covariant: a ``Kind[int]`` reads what a ``Kind[int | None]`` may read, and a ``ConfigKey[int]``
#: is a ``ConfigKey[object]`` (what a reader of any key's raw spellings takes)
T_co = TypeVar("T_co", covariant=True)

# -- value types -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Kind(Generic[T_co]):
    """How a key's value is read: ``read(config, key)`` is the typed value of a set key."""

    describe: str
    read: Callable[[Config, str], T_co | None]


def _str(config: Config, key: str) -> str | None:
    return config.get_str(key)


def _int(minimum: int | None = None) -> Kind[int]:
    def read(config: Config, key: str) -> int | None:
        value = config.get_int(key)
        if minimum is not None and value is not None and value < minimum:
            raise ConfigError(f"config key {key!r} must be at least {minimum}, got {value}", key=key)
        return value

    return Kind("integer" if minimum is None else f"integer >= {minimum}", read)


def _choice(*choices: str, normalize: Callable[[str], str] | None = None) -> Kind[str]:
    def read(config: Config, key: str) -> str | None:
        if normalize is not None:  # the value as its reader sees it (case, blanks)
            return Config({key: normalize(config.get_str(key) or "")}).get_choice(key, choices)
        return config.get_choice(key, choices)

    return Kind("one of " + ", ".join(f"`{c}`" for c in choices), read)


def _class_path(config: Config, key: str) -> str:
    value = (config.get_str(key) or "").strip()
    module, sep, attr = value.partition(":")
    if not sep:
        module, _, attr = value.rpartition(".")
    if not module or not attr:
        raise ConfigError(f"config key {key!r}: expected module:Class, got {value!r}", key=key)
    return value


def _system_streams(config: Config, key: str) -> list[str]:
    entries = config.get_list(key)
    for entry in entries:
        system, sep, stream = entry.partition(".")
        if not sep or not system or not stream:
            raise ConfigError(f"config key {key!r}: expected system.stream, got {entry!r}", key=key)
    return entries


def _bool(config: Config, key: str) -> bool:
    return config.get_bool(key)


def _list(config: Config, key: str) -> list[str]:
    return config.get_list(key)


STR: Kind[str] = Kind("string", _str)
INT = _int()
BOOL: Kind[bool] = Kind("`true` or `false`", _bool)
LIST: Kind[list[str]] = Kind("comma-separated list", _list)
CLASS: Kind[str] = Kind("`module:Class`", _class_path)
SYSTEM_STREAMS: Kind[list[str]] = Kind("`system.stream,...`", _system_streams)
#: a serde name: built in (json, string, bytes, integer, long, noop, msgpack, pickle) or
#: registered with ``serializers.registry.<name>.class``; the pre-flight resolves it
SERDE: Kind[str] = Kind("serde name", _str)
OFFSET_DEFAULT = _choice("oldest", "upcoming")

# -- definitions -------------------------------------------------------------------------------

_PART = re.compile(r"<([a-z-]+)>")


@dataclass(frozen=True, slots=True)
class ConfigKey(Generic[T_co]):
    """One key (or one pattern of keys): name, type, default, meaning.

    ``T`` is the type :meth:`get` returns: the value's type for a key with a default
    (``ConfigKey[int]``), with ``None`` added for one without (``ConfigKey[str | None]``), so a
    caller's use of the value is checked by mypy. ``default`` is the value a reader gets when the
    key is unset or blank (None: no value; the reader decides, and ``doc`` says what happens then).
    """

    name: str
    kind: Kind[T_co]
    default: T_co
    doc: str
    #: other spellings of the same key (a stream property's per-system forms)
    forms: tuple[str, ...] = ()

    @property
    def prop(self) -> str:
        """A stream property's own name: ``samza.bounded`` of ``streams.<stream-id>.samza.bounded``."""
        return self.name.split("<stream-id>.", 1)[1]

    def key(self, **parts: object) -> str:
        """The concrete key: ``STORE_FACTORY.key(store="counts")`` is ``stores.counts.factory``."""
        return _fill(self.name, parts)

    def system_stream_key(self, system: str, stream: str) -> str:
        """A stream property's per-system spelling for one stream:
        ``systems.<system>.streams.<stream>.<property>``."""
        return _fill(self._form("systems.<system>.streams.<stream>."), {"system": system, "stream": stream})

    def system_default_key(self, system: str) -> str:
        """A stream property's spelling for every stream of a system:
        ``systems.<system>.default.stream.<property>``."""
        return _fill(self._form("systems.<system>.default.stream."), {"system": system})

    def stream_keys(self, stream_ids: Iterable[str], system: str, stream: str) -> list[str]:
        """Every key that sets this stream property for one stream, in the order a reader
        consults them (Samza's): each stream id's, the per-stream one of its system, then the
        system's default for all its streams. A property without per-system forms (the stream
        id's own, such as ``samza.system``) has only the stream ids' keys."""
        out = [self.key(stream_id=sid) for sid in stream_ids]
        if self.forms:
            out += [self.system_stream_key(system, stream), self.system_default_key(system)]
        return out

    @property
    def glob(self) -> str:
        """The name as a shell pattern (``stores.*.changelog``), for :func:`fnmatch.fnmatchcase`."""
        return _PART.sub("*", self.name)

    def _form(self, prefix: str) -> str:
        for form in self.forms:
            if form.startswith(prefix):
                return form
        raise ConfigError(
            f"config key {self.name!r} has no form {prefix}<property>", key=self.name
        )  # a programming error

    def get(self, config: Config, **parts: object) -> T_co:
        """The typed value of the key (of ``parts`` for a pattern), the default when unset or blank."""
        return self.read(config, self.key(**parts))

    def read(self, config: Config, key: str) -> T_co:
        """The typed value of the concrete ``key`` (one of this definition's names)."""
        raw = config.get_str(key)
        if raw is None or raw.strip() == "":
            return _copy(self.default)  # a list default: the caller's own
        value = self.kind.read(config, key)
        return self.default if value is None else value

    def matches(self, key: str) -> bool:
        pattern = _PATTERNS.get(self.name)
        if pattern is None:  # compiled on first use: importing the definitions stays cheap
            pattern = _PATTERNS[self.name] = re.compile("|".join(_regex(name) for name in (self.name, *self.forms)))
        return pattern.fullmatch(key) is not None


def _fill(name: str, parts: Mapping[str, object]) -> str:
    """``name`` with each ``<part>`` replaced by ``parts["part"]`` (``<stream-id>`` by ``stream_id``)."""
    return _PART.sub(lambda m: str(parts[m.group(1).replace("-", "_")]), name)


def _copy(value: T) -> T:
    return list(value) if isinstance(value, list) else value  # type: ignore[return-value]


_PATTERNS: dict[str, re.Pattern[str]] = {}


def _regex(name: str) -> str:
    out = []
    for piece in re.split(r"(<[a-z-]+>)", name):
        if piece.startswith("<"):
            # stream names and ids may hold dots; the other parts are one segment
            out.append(r".+?" if piece in ("<stream>", "<stream-id>") else r"[^.]+")
        else:
            out.append(re.escape(piece))
    return "(?:" + "".join(out) + ")"


#: every definition, by name, in the order defined (docs/reference.md lists them in this order)
KEYS: dict[str, ConfigKey[object]] = {}


@overload
def define(
    name: str, kind: Kind[V], default: None, doc: str, *, forms: tuple[str, ...] = ()
) -> ConfigKey[V | None]: ...
@overload
def define(name: str, kind: Kind[V], default: V, doc: str, *, forms: tuple[str, ...] = ()) -> ConfigKey[V]: ...
def define(
    name: str, kind: Kind[object], default: object, doc: str, *, forms: tuple[str, ...] = ()
) -> ConfigKey[object]:
    """Defines the key ``name`` once (a second definition is an error at import): a key with a
    default is a ``ConfigKey`` of the value's type, one without also admits None."""
    if name in KEYS:
        raise ConfigError(f"config key {name!r} is defined twice", key=name)  # a programming error, at import
    definition = ConfigKey(name, kind, default, doc, forms)
    KEYS[name] = definition
    return definition


# job.*
JOB_NAME = define("job.name", STR, None, "the job's name (required)")
JOB_ID = define("job.id", STR, "1", "the job's instance id: several runs of one job name differ by it")
JOB_FACTORIES = ("thread", "process", "spark")
JOB_FACTORY_CLASS = define(
    "job.factory.class",
    _choice(*JOB_FACTORIES),
    "spark",
    "the runner: containers as threads, as processes, or as Spark barrier tasks",
)
JOB_CONTAINER_COUNT = define("job.container.count", _int(1), 1, "containers the job's tasks are spread over")
JOB_CONTAINER_THREAD_POOL_SIZE = define(
    "job.container.thread.pool.size", _int(0), 0, "task threads per container (0: the run loop's own thread)"
)
JOB_DEFAULT_SYSTEM = define(
    "job.default.system",
    STR,
    "log",
    "the system of streams named without one (intermediate streams, changelogs, streams whose `streams.<stream-id>.samza.system` is unset)",
)
JOB_COORDINATOR_SYSTEM = define(
    "job.coordinator.system", STR, None, "the system of the coordinator stream (unset: `job.default.system`)"
)
JOB_INTERMEDIATE_STREAM_PARTITIONS = define(
    "job.intermediate.stream.partitions",
    _int(1),
    None,
    "partition count of an intermediate stream nothing else decides (unset: the largest input's)",
)
GROUPERS = ("group-by-partition", "group-by-system-stream-partition")
JOB_GROUPER = define(
    "job.systemstreampartition.grouper.factory", _choice(*GROUPERS), GROUPERS[0], "how input partitions become tasks"
)
JOB_CONTAINER_RETRY_COUNT = define(
    "job.container.retry.count",
    _int(0),
    3,
    "restarts of a failed container before the job fails (spark runner: any failure; thread and process "
    "runners: a system that lost what the container sent since its last commit, as an aborted Kafka transaction)",
)
JOB_CONTAINER_SWITCH_INTERVAL_US = define(
    "job.container.switch.interval.us",
    _int(0),
    500,
    "lowers the interpreter's thread switch interval to this many µs while a container runs (restored when "
    "the process's last container stops; 0: leave Python's own)",
)
JOB_CONTAINER_GC_THRESHOLD = define(
    "job.container.gc.threshold",
    _int(0),
    50_000,
    "raises the garbage collector's young-generation threshold to this many allocations while a container "
    "runs (restored when the process's last container stops; 0: leave Python's own, 700)",
)
JOB_COORDINATOR_HTTP_HOST = define(
    "job.coordinator.http.host",
    STR,
    "127.0.0.1",
    "the address the job coordinator's HTTP service listens on, on every runner (one other machines reach needs `job.coordinator.http.token`)",
)
JOB_COORDINATOR_HTTP_TOKEN = define(
    "job.coordinator.http.token", STR, None, "a bearer token the coordinator's HTTP service requires (unset: none)"
)
JOB_COORDINATOR_HTTP_PORT = define(
    "job.coordinator.http.port",
    _int(0),
    0,
    "the job coordinator's port (0: any free one; fix it for a Prometheus scrape target)",
)
JOB_COORDINATOR_MONITOR_INTERVAL_MS = define(
    "job.coordinator.monitor.interval.ms",
    _int(0),
    10_000,
    "how often the job coordinator checks input partition counts",
)
JOB_COORDINATOR_WATCH_INTERVAL_MS = define(
    "job.coordinator.watch.interval.ms",
    _int(0),
    2_000,
    "how often a runner checks the coordinator stream for a new JobModel",
)
JOB_COORDINATOR_STREAM_READ_TIMEOUT_MS = define(
    "job.coordinator.stream.read.timeout.ms",
    _int(0),
    30_000,
    "the longest a read of the coordinator stream to its head may take",
)
JOB_COORDINATOR_FORCE_RESET = define(
    "job.coordinator.force.reset",
    BOOL,
    False,
    "launch-only (`run --force-reset`): accept changed set-once config and partition counts; never written to the coordinator stream",
)
JOB_MAX_MODEL_RESTARTS = define(
    "job.max.model.restarts", _int(0), 100, "restarts of the containers for a new JobModel before the runner gives up"
)
GUARANTEES = ("at-least-once", "exactly-once")
JOB_PROCESSING_GUARANTEE = define(
    "job.processing.guarantee",
    _choice(*GUARANTEES),
    GUARANTEES[0],
    "`exactly-once`: each container commits as one transaction of its checkpoint system — "
    "the embedded log or Kafka — (outputs, changelog, control "
    "messages and checkpoints readable together or removed); "
    '`at-least-once`: Samza\'s (docs/decisions.md, "Exactly-once output")',
)
MISSPELLED_KEY_POLICIES = ("error", "warn")
JOB_CONFIG_MISSPELLED_KEYS = define(
    "job.config.misspelled.keys",
    _choice(*MISSPELLED_KEY_POLICIES),
    MISSPELLED_KEY_POLICIES[0],
    "a key nothing reads that is a near miss of a defined key (a typo such as task.clas): `error` refuses the config "
    "naming the key meant; `warn` logs a WARNING and runs on (keys with no near one are always only a WARNING)",
)
JOB_LOGGED_STORE_BASE_DIR = define(
    "job.logged.store.base.dir",
    STR,
    None,
    "where stores keep their files (unset: beside the default system's log, else a temporary directory)",
)

# app.* (the high-level API)
APP_CLASS = define("app.class", CLASS, None, "`module:Class` of a `StreamApplication`")
APP_STAGE = define(
    "app.stage",
    STR,
    None,
    "the stage of a multi-stage application this job runs (`stage-<n>` or `<n>`; set by the planner)",
)
APP_STAGE_JOB_NAME = define(
    "app.stage.application.job.name",
    STR,
    None,
    "set by the planner: the application's own `job.name` in a stage's config",
)
APP_STORE_FACTORY = define(
    "app.store.factory",
    _choice("rocksdb", "inmemory"),
    "rocksdb",
    "the store factory of the operators' own stores (windows, joins)",
)
APP_JOIN_TIME = define(
    "app.join.time",
    _choice("processing", "event"),
    "processing",
    "what a stream-stream join's window measures: arrival or event time",
)
APP_VERSION = define("app.version", STR, "0.0.1", "the job's version, the `version` of its metrics snapshots' header")

# task.*
TASK_CLASS = define("task.class", CLASS, None, "`module:Class` of a task (a low-level job)")
TASK_INPUTS = define("task.inputs", SYSTEM_STREAMS, [], "the inputs of a low-level job")
TASK_WINDOW_MS = define("task.window.ms", INT, -1, "how often `window` runs (-1: never)")
TASK_COMMIT_MS = define("task.commit.ms", INT, 60_000, "how often each task commits")
TASK_SHUTDOWN_MS = define("task.shutdown.ms", INT, 30_000, "how long a graceful stop may take")
TASK_MAX_CONCURRENCY = define("task.max.concurrency", _int(1), 1, "in-flight envelopes per task")
TASK_CALLBACK_TIMEOUT_MS = define(
    "task.callback.timeout.ms", INT, -1, "how long an async task may take over one envelope (-1: no limit)"
)
TASK_CHOOSER_CLASS = define("task.chooser.class", CLASS, None, "`module:Class` of a `MessageChooserFactory`")
TASK_CHOOSER_PRIORITY = define(
    "task.chooser.priorities.<system>.<stream>", INT, None, "a stream's priority tier (higher first)"
)
TASK_CHOOSER_MAX_SKEW_MS = define(
    "task.chooser.max.skew.ms", _int(0), 0, "the time-aligned chooser: how far ahead in event time one input may run"
)
TASK_CHOOSER_IDLE_TIMEOUT_MS = define(
    "task.chooser.idle.timeout.ms",
    _int(0),
    100,
    "the time-aligned chooser: how long an input with nothing buffered holds the others back",
)
TASK_CONSUMER_BATCH_SIZE = define(
    "task.consumer.batch.size",
    _int(1),
    1,
    "envelopes of one partition per chooser decision (unset: 250 for the bootstrap streams' tier, 1 elsewhere)",
)
TASK_DROP_DESERIALIZATION_ERRORS = define(
    "task.drop.deserialization.errors", BOOL, False, "count and skip messages that do not deserialize"
)
TASK_CHECKPOINT_SYSTEM = define(
    "task.checkpoint.system", STR, None, "the system of the checkpoint stream (unset: `job.default.system`)"
)
TASK_DLQ_STREAM = define(
    "task.dlq.stream", STR, None, "`system.stream` that messages failing a task go to, instead of failing the job"
)
TASK_WATERMARK_INTERVAL_MS = define(
    "task.watermark.interval.ms", _int(1), 200, "how often the operators of a high-level job emit watermarks"
)
TASK_WATERMARK_ALLOWED_LATENESS_MS = define(
    "task.watermark.allowed.lateness.ms", _int(0), 0, "how far behind the watermark a message may be before it is late"
)

# systems.*
SYSTEM_FACTORY = define(
    "systems.<system>.samza.factory",
    STR,
    None,
    "`log`, `kafka`, `inmemory`, `files`, `iceberg` or `module:Class` (unset: `log` for the system named `log`)",
)
SYSTEM_KEY_SERDE = define("systems.<system>.samza.key.serde", SERDE, None, "the serde of the system's keys")
SYSTEM_MSG_SERDE = define("systems.<system>.samza.msg.serde", SERDE, None, "the serde of the system's messages")
SYSTEM_OFFSET_DEFAULT = define(
    "systems.<system>.samza.offset.default", OFFSET_DEFAULT, "oldest", "where a partition without a checkpoint starts"
)
SYSTEM_FETCH_THRESHOLD = define(
    "systems.<system>.samza.fetch.threshold",
    _int(-1),
    50_000,
    "envelopes a container buffers from the system in all, divided among its "
    "partitions (at least 16 each); -1: no bound",
)
SYSTEM_FETCH_THRESHOLD_BYTES = define(
    "systems.<system>.samza.fetch.threshold.bytes",
    _int(-1),
    64 * 1024 * 1024,
    "bytes of those envelopes (key + message sizes); -1: no bound",
)
SYSTEM_KAFKA_CLIENT = define(
    "systems.<system>.kafka.client", _choice("confluent", "kafka-python"), "confluent", "the Kafka client library"
)
SYSTEM_KAFKA_RETRY_WINDOW_MS = define(
    "systems.<system>.kafka.retry.window.ms",
    _int(0),
    60_000,
    'Kafka: how long an admin request the cluster answers "not yet" (a leader being elected, brokers '
    "down) is asked again — Kafka's `default.api.timeout.ms`; then the job fails with one line naming it",
)
SYSTEM_REPLICATION_FACTOR = define(
    "systems.<system>.default.stream.replication.factor",
    _int(1),
    None,
    "replication factor of the Kafka topics the engine creates (unset: the cluster's default.replication.factor)",
)
SYSTEM_CONSUMER_FETCH_BATCH = define(
    "systems.<system>.consumer.fetch.batch.messages",
    _int(1),
    500,
    "Kafka (confluent): messages taken from librdkafka per call",
)
SYSTEM_CONSUMER_PARK_MAX_BYTES = define(
    "systems.<system>.consumer.park.max.bytes",
    _int(1),
    32 * 1024 * 1024,
    "Kafka (confluent): bytes of fetched messages kept for partitions the job is not asking for",
)
SYSTEM_BOOTSTRAP_TIMEOUT_MS = define(
    "systems.<system>.consumer.bootstrap.timeout.ms",
    _int(0),
    5_000,
    "Kafka: how long a client waits for the brokers at start",
    forms=("systems.<system>.producer.bootstrap.timeout.ms",),
)
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
SYSTEM_CONSUMER_ISOLATION_LEVEL = define(
    "systems.<system>.consumer.isolation.level",
    _choice(*ISOLATION_LEVELS),
    None,
    "`read_committed`: stop each partition before the oldest open transaction, never "
    "see an aborted one; `read_uncommitted`: everything (default, except `read_committed` "
    "in a job with `job.processing.guarantee=exactly-once` and always on Kafka's confluent "
    "client, librdkafka's default)",
)
LOG_PATH = define(
    "systems.<system>.log.path",
    STR,
    "./.samza-log",
    "the embedded log's root directory (`SAMZA_LOG_PATH` overrides it)",
)
LOG_BATCH_SIZE = define(
    "systems.<system>.log.batch.size",
    _int(1),
    1000,
    "messages the log producer buffers per stream before its thread writes them (with what else is buffered)",
)
LOG_LINGER_MS = define(
    "systems.<system>.log.linger.ms",
    _int(0),
    5,
    "longest a sent message waits in the log producer's buffer while the stream file is free "
    "(0: no producer thread; written at `log.batch.size` by the sender, or at a flush)",
)
LOG_FETCH_SIZE = define(
    "systems.<system>.log.fetch.size", _int(1), 250, "most envelopes one poll returns per partition"
)
LOG_SYNCHRONOUS = define(
    "systems.<system>.log.synchronous",
    _choice("FULL", "NORMAL", "OFF", normalize=str.upper),
    "FULL",
    "SQLite's `PRAGMA synchronous` (case-insensitive)",
)
LOG_BUSY_TIMEOUT_MS = define(
    "systems.<system>.log.busy.timeout.ms", _int(1), 30_000, "how long a writer waits for another process's batch"
)
LOG_CLEANER_INTERVAL_MS = define(
    "systems.<system>.log.cleaner.interval.ms",
    _int(0),
    30_000,
    "least time between two cleaning passes of a stream by one producer",
)
INMEMORY_FETCH_SIZE = define(
    "systems.<system>.inmemory.fetch.size",
    _int(1),
    1000,
    "most envelopes one poll of the in-memory system returns per partition",
)

FILES_ROOT = define(
    "systems.<system>.files.root",
    STR,
    None,
    "the files system's root: a directory or a URL pyarrow or fsspec opens (required); stream `<name>` is `<root>/<name>/`",
)
FILES_FETCH_SIZE = define(
    "systems.<system>.files.fetch.size", _int(1), 1024, "rows the files system reads per Arrow batch and partition"
)
FILES_GROUP_PATTERN = define(
    "systems.<system>.partitioner.defaultPartitioner.groupPattern",
    STR,
    None,
    "Samza's file grouping: a regex with `[id]`; files with the same id are one partition (unset: one file each)",
)
FILES_WHITELIST = define(
    "systems.<system>.partitioner.defaultPartitioner.whitelist",
    STR,
    ".*",
    "files system: a regex a file's path under the stream's directory must match to be read",
)
FILES_BLACKLIST = define(
    "systems.<system>.partitioner.defaultPartitioner.blacklist",
    STR,
    None,
    "files system: a regex of paths under the stream's directory never read",
)
FILES_ROLL_BYTES = define(
    "systems.<system>.files.roll.bytes",
    _int(1),
    128 * 1024 * 1024,
    "files system output: a Parquet file is closed and a new one begun past this many bytes",
)
FILES_ROLL_MS = define(
    "systems.<system>.files.roll.ms",
    _int(0),
    3_600_000,
    "files system output: a Parquet file is closed once this old (every commit closes one too: Parquet is readable only once closed)",
)
ICEBERG_NAMESPACE = define(
    "systems.<system>.iceberg.namespace", STR, "samza", "iceberg system: the namespace of its tables"
)
ICEBERG_COMMIT_RETRIES = define(
    "systems.<system>.iceberg.commit.retries",
    _int(0),
    20,
    "iceberg system: table commits retried on a conflict with another writer, beyond pyiceberg's own",
)
ICEBERG_COMMIT_INTERVAL_MS = define(
    "systems.<system>.iceberg.commit.interval.ms",
    _int(0),
    10_000,
    "iceberg system: the shortest interval of a container's timed commits while it writes to the system "
    "(each is a table snapshot): a shorter task.commit.ms is raised to it; commits the task asks for, at "
    "end of stream and at a stop happen at once. 0: task.commit.ms as it is",
)
ICEBERG_BUFFER_ROWS = define(
    "systems.<system>.iceberg.buffer.rows",
    _int(1),
    100_000,
    "iceberg system: rows held per table before they are written to a data file (committed at the next commit)",
)


# stream properties: streams.<stream-id>.<p>, systems.<system>.streams.<stream>.<p>, systems.<system>.default.stream.<p>
@overload
def _stream_property(
    prop: str, kind: Kind[V], default: None, doc: str, *, per_system: bool = True
) -> ConfigKey[V | None]: ...
@overload
def _stream_property(prop: str, kind: Kind[V], default: V, doc: str, *, per_system: bool = True) -> ConfigKey[V]: ...
def _stream_property(
    prop: str, kind: Kind[object], default: object, doc: str, *, per_system: bool = True
) -> ConfigKey[object]:
    forms = (
        (f"systems.<system>.streams.<stream>.{prop}", f"systems.<system>.default.stream.{prop}") if per_system else ()
    )
    return define(f"streams.<stream-id>.{prop}", kind, default, doc, forms=forms)


STREAM_SYSTEM = _stream_property(
    "samza.system", STR, None, "the stream's system (unset: `job.default.system`)", per_system=False
)
STREAM_PHYSICAL_NAME = _stream_property(
    "samza.physical.name", STR, None, "the stream's name on its system (unset: the id)", per_system=False
)
STREAM_PARTITIONS = _stream_property("partitions", _int(1), None, "the stream's partition count", per_system=False)
STREAM_BOOTSTRAP = _stream_property("samza.bootstrap", BOOL, False, "read to its head before other inputs")
STREAM_PRIORITY = _stream_property("samza.priority", INT, None, "the stream's priority tier (higher first)")
STREAM_RESET_OFFSET = _stream_property("samza.reset.offset", BOOL, False, "ignore the checkpoint at start")
STREAM_BOUNDED = _stream_property(
    "samza.bounded",
    BOOL,
    False,
    "the stream ends at the upcoming offset seen when the job starts (a files stream always does)",
)
STREAM_FILES_FORMAT = _stream_property(
    "files.format",
    _choice("parquet", "jsonl", "csv"),
    None,
    "a files stream's format (unset: from each file's extension: .parquet, .jsonl/.json/.ndjson, .csv)",
)
STREAM_FILES_TIMESTAMP_COLUMN = _stream_property(
    "files.timestamp.column",
    STR,
    None,
    "a files stream's column of event times (Arrow timestamps or dates, or epoch ms) that timestamp startpoints "
    "resolve by (unset: each file's modification time)",
)
STREAM_OFFSET_DEFAULT = _stream_property(
    "samza.offset.default", OFFSET_DEFAULT, None, "where a partition without a checkpoint starts (unset: the system's)"
)
STREAM_KEY_SERDE = _stream_property(
    "samza.key.serde", SERDE, None, "the serde of the stream's keys (unset: the system's)"
)
STREAM_MSG_SERDE = _stream_property(
    "samza.msg.serde", SERDE, None, "the serde of the stream's messages (unset: the system's)"
)
STREAM_CLEANUP_POLICY = _stream_property(
    "cleanup.policy",
    _choice("delete", "compact", "compact,delete", "delete,compact", normalize=lambda v: v.replace(" ", "").lower()),
    "delete",
    "Kafka's: what the log's cleaner does to old messages",
)
STREAM_RETENTION_MS = _stream_property(
    "retention.ms", _int(-1), -1, "with `delete`: remove messages older than this (-1: no limit)"
)
STREAM_RETENTION_BYTES = _stream_property(
    "retention.bytes",
    _int(-1),
    -1,
    "with `delete`: keep at most this many key+value bytes per partition (-1: no limit)",
)
STREAM_DELETE_RETENTION_MS = _stream_property(
    "delete.retention.ms", _int(0), 86_400_000, "with `compact`: how long a tombstone outlives what it deletes"
)
STREAM_MIN_COMPACTION_LAG_MS = _stream_property(
    "min.compaction.lag.ms",
    _int(0),
    0,
    "with `compact`: how old a message must be before compaction touches it (changelogs 600000)",
)
STREAM_PROPERTIES = tuple(key for key in KEYS.values() if key.name.startswith("streams."))


def stream_property(prop: str) -> ConfigKey[object]:
    """The definition of the stream property ``prop`` (``retention.ms``), for a reader that walks
    several properties by name; a name that is none is a programming error."""
    for definition in STREAM_PROPERTIES:
        if definition.prop == prop:
            return definition
    raise ConfigError(f"no stream property {prop!r} is defined")  # a programming error


# stores.*
STORE_FACTORY = define("stores.<store>.factory", _choice("rocksdb", "inmemory"), "rocksdb", "the store's kind")
STORE_CHANGELOG = define(
    "stores.<store>.changelog",
    STR,
    None,
    "`system.stream` (or a stream of the default system) the store is restored from",
)
STORE_KEY_SERDE = define(
    "stores.<store>.key.serde", SERDE, None, "the serde of the store's keys (the operators' own stores: `msgpack`)"
)
STORE_MSG_SERDE = define(
    "stores.<store>.msg.serde", SERDE, None, "the serde of the store's values (the operators' own stores: `msgpack`)"
)
STORE_SIDE_INPUTS = define(
    "stores.<store>.side.inputs",
    SYSTEM_STREAMS,
    [],
    "streams that fill the store (read to the head before the task starts, followed while it runs; no changelog)",
)
STORE_SIDE_INPUTS_PROCESSOR = define(
    "stores.<store>.side.inputs.processor.factory",
    CLASS,
    None,
    "`module:Class` turning a side-input message into the store's entries (unset: its own key and value)",
)
STORE_OBJECT_CACHE_SIZE = define(
    "stores.<store>.object.cache.size", _int(0), 10_000, "entries of the store's write-back cache (0: none)"
)
STORE_WRITE_BATCH_SIZE = define(
    "stores.<store>.write.batch.size",
    _int(1),
    5_000,
    "dirty entries the cache writes in one batch (at most the cache size)",
)
STORE_CONTAINER_CACHE_SIZE_BYTES = define(
    "stores.<store>.container.cache.size.bytes",
    _int(0),
    4 * 1024 * 1024,
    "the RocksDB block cache of the store in one container, shared by its tasks",
)

# serializers.*, metrics.*, samza.container.*
SERDE_CLASS = define(
    "serializers.registry.<name>.class",
    CLASS,
    None,
    "`module:Class` of a serde (or of a factory with `get_serde(name, config)`) registered as `<name>`",
)
METRICS_TIMER_ENABLED = define("metrics.timer.enabled", BOOL, True, "time each process, window and commit")
METRICS_REPORTERS = define("metrics.reporters", LIST, [], "names of the metrics reporters the containers run")
METRICS_REPORTER_CLASS = define(
    "metrics.reporter.<name>.class",
    STR,
    None,
    "`snapshot`, `prometheus` or `module:Class` of a reporter (checked by the pre-flight)",
)
METRICS_REPORTER_STREAM = define(
    "metrics.reporter.<name>.stream",
    STR,
    None,
    "`system.stream` a snapshot reporter writes, a prometheus reporter serves",
)
METRICS_REPORTER_INTERVAL = define(
    "metrics.reporter.<name>.interval", STR, "60", "seconds between snapshots, a positive number"
)
CONTAINER_BUFFER_CAPACITY = define(
    "samza.container.buffer.capacity.per.ssp",
    _int(1),
    None,
    "envelopes SystemConsumers buffers per partition (unset: its own default)",
)

# dagster.* (orchestration)
DAGSTER_OWNERS = define("dagster.owners", LIST, [], "owners of the job's assets: `team:<name>` or e-mail addresses")
DAGSTER_MATERIALIZATION_INTERVAL_MS = define(
    "dagster.materialization.interval.ms", _int(0), 60_000, "how often a running job reports asset materializations"
)
DAGSTER_PROGRESS_INTERVAL_MS = define(
    "dagster.progress.interval.ms", _int(0), 5_000, "how often progress is logged to the run (0: 5000)"
)
DAGSTER_PROGRESS_MAX_INTERVAL_MS = define(
    "dagster.progress.max.interval.ms", _int(0), 300_000, "longest gap between two progress lines while nothing changes"
)
DAGSTER_LAG_WARN = define(
    "dagster.check.lag.warn.messages", _int(0), 10_000, "consumer lag at which the lag check warns"
)
DAGSTER_LAG_ERROR = define(
    "dagster.check.lag.error.messages", _int(0), 100_000, "consumer lag at which the lag check fails"
)
DAGSTER_FRESHNESS_WARN_MS = define(
    "dagster.freshness.warn.window.ms", _int(0), 300_000, "age of the newest output at which freshness warns"
)
DAGSTER_FRESHNESS_FAIL_MS = define(
    "dagster.freshness.fail.window.ms", _int(0), 600_000, "age of the newest output at which freshness fails"
)

# -- namespaces: the leading part many keys share ----------------------------------------------
# A reader that takes a whole namespace (``config.subset(prefix(SYSTEM_KEYS, system=s))``: a Kafka
# client's settings, a system's own keys) builds its prefix here, as a single key is built from
# its definition, so no key name is spelled outside this module.

#: every key of one system (its definitions above and the plugin namespaces below)
SYSTEM_KEYS = "systems.<system>."
#: the embedded log's keys of one system (``LOG_*`` above)
LOG_KEYS = "systems.<system>.log."
SYSTEM_CONSUMER_KEYS = "systems.<system>.consumer."
SYSTEM_PRODUCER_KEYS = "systems.<system>.producer."
SYSTEM_ADMIN_KEYS = "systems.<system>.admin."
SYSTEM_DEFAULT_STREAM_KEYS = "systems.<system>.default.stream."
ICEBERG_CATALOG_KEYS = "systems.<system>.iceberg.catalog."
SERDE_REGISTRY_KEYS = "serializers.registry.<name>."


def prefix(namespace: str, **parts: object) -> str:
    """A namespace made concrete: ``prefix(SYSTEM_KEYS, system="kafka")`` is ``systems.kafka.``."""
    return _fill(namespace, parts)


#: namespaces of keys that other software reads (passed on as they are); the pre-flight never
#: calls one of them unknown, but a key defined above is still checked
PLUGIN_PREFIXES: dict[str, str] = {
    SYSTEM_CONSUMER_KEYS: "Kafka consumer settings (librdkafka's or kafka-python's)",
    SYSTEM_PRODUCER_KEYS: "Kafka producer settings",
    SYSTEM_ADMIN_KEYS: "Kafka admin client settings",
    SYSTEM_DEFAULT_STREAM_KEYS: "Kafka topic configs of the topics the engine creates",
    ICEBERG_CATALOG_KEYS: "pyiceberg catalog properties (`load_catalog(<system>, **props)`)",
    SERDE_REGISTRY_KEYS: "settings a registered serde factory reads",
    "spark.": "Spark's own settings",
}
#: namespaces the engine owns: a key here that matches no definition is a typo (``app.`` is
#: shared with applications' own keys, so only a near miss of a defined one is reported there)
ENGINE_PREFIXES = ("job.", "task.", "systems.", "streams.", "stores.", "serializers.", "metrics.", "samza.", "dagster.")


def markdown_table() -> str:
    """The table of every definition docs/reference.md carries (``tests/config/test_config_keys.py``
    keeps the two equal and prints this table when they differ)."""
    rows = ["| key | type | default | meaning |", "| --- | --- | --- | --- |"]
    for key in KEYS.values():
        names = " or ".join(f"`{name}`" for name in (key.name, *key.forms))
        default = "" if key.default in (None, []) else f"`{_default_text(key.default)}`"
        rows.append(f"| {names} | {key.kind.describe} | {default} | {key.doc} |")
    rows.append("")
    rows.append(
        "Keys read by other software, passed on as they are (never reported as unknown): "
        + "; ".join(f"`{prefix}*` ({what})" for prefix, what in PLUGIN_PREFIXES.items())
        + "."
    )
    return "\n".join(rows) + "\n"


def _default_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
