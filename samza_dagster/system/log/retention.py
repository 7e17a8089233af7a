"""A log stream's cleanup policy: Kafka's topic settings, kept in the stream file.

Keys (Kafka's names and meanings, per stream; a stream's file keeps them in ``meta`` as
``property.<key>``, written when the stream is created, so every process that cleans the file
applies the same policy):

* ``cleanup.policy`` — ``delete`` (default), ``compact`` or ``compact,delete``.
* ``retention.ms`` — with ``delete``: messages whose timestamp is older than this are removed,
  oldest first (default -1: kept forever; see docs/decisions.md for why not Kafka's 7 days).
* ``retention.bytes`` — with ``delete``: a partition keeps at most this many bytes of keys and
  values, oldest removed first (default -1: no limit).
* ``delete.retention.ms`` — with ``compact``: how long a tombstone (a null value) is kept once
  it is the newest message of its key (default 86400000, Kafka's).
* ``min.compaction.lag.ms`` — with ``compact``: messages younger than this are neither removed
  nor count as superseding older ones (default 0; changelogs get a lag, see storage/changelog.py).

Where a created stream's value comes from, first found wins: ``streams.<id>.<key>`` or
``systems.<s>.streams.<stream>.<key>``; the value the engine asks for when it creates the
stream (a changelog's ``cleanup.policy=compact``); ``systems.<s>.default.stream.<key>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.config.job_config import JobConfig
from samza_dagster.config.system_config import StreamConfig
from samza_dagster.model import SystemStream

POLICY_KEY = keys.STREAM_CLEANUP_POLICY.prop
#: every key this module reads, with the value used when it is unset
DEFAULTS: dict[str, str] = {
    key.prop: str(key.default)
    for key in (
        keys.STREAM_CLEANUP_POLICY,
        keys.STREAM_RETENTION_MS,
        keys.STREAM_RETENTION_BYTES,
        keys.STREAM_DELETE_RETENTION_MS,
        keys.STREAM_MIN_COMPACTION_LAG_MS,
    )
}
_POLICIES = {
    "delete": (True, False),
    "compact": (False, True),
    "compact,delete": (True, True),
    "delete,compact": (True, True),
}
#: keys that may be -1 ("no limit"); the others must be >= 0
_UNLIMITED_ALLOWED = ("retention.ms", "retention.bytes")


@dataclass(frozen=True, slots=True)
class CleanupPolicy:
    delete: bool
    compact: bool
    retention_ms: int  # -1: no time limit
    retention_bytes: int  # -1: no size limit
    delete_retention_ms: int
    min_compaction_lag_ms: int

    @property
    def cleans(self) -> bool:
        """False when a cleaning pass could never remove anything (skip the stream)."""
        return self.compact or (self.delete and (self.retention_ms >= 0 or self.retention_bytes >= 0))

    @classmethod
    def from_properties(cls, properties: Mapping[str, str], where: str) -> CleanupPolicy:
        """The policy of stream properties (unset keys take DEFAULTS). ``where`` names the
        source in errors (a config prefix, or the stream file)."""
        values = {k: str(properties.get(k, default)).strip() for k, default in DEFAULTS.items()}
        policy = values[POLICY_KEY].replace(" ", "").lower()
        if policy not in _POLICIES:
            raise ConfigError(
                f"{where}{POLICY_KEY}: unknown cleanup policy {values[POLICY_KEY]!r}; "
                "expected delete, compact or compact,delete",
                key=where + POLICY_KEY,
            )
        numbers = {k: _number(where, k, values[k]) for k in DEFAULTS if k != POLICY_KEY}
        delete, compact = _POLICIES[policy]
        return cls(
            delete,
            compact,
            numbers["retention.ms"],
            numbers["retention.bytes"],
            numbers["delete.retention.ms"],
            numbers["min.compaction.lag.ms"],
        )


def _number(where: str, key: str, raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        value = None
    lowest = -1 if key in _UNLIMITED_ALLOWED else 0
    if value is None or value < lowest:
        allowed = "an integer >= 0, or -1 for no limit" if lowest == -1 else "an integer >= 0"
        raise ConfigError(f"{where}{key}: expected {allowed}, got {raw!r}", key=where + key)
    return value


def stream_properties(config: Config, system: str, stream: str, requested: Mapping[str, str] | None) -> dict[str, str]:
    """The properties a new stream file stores: ``requested`` (the StreamSpec's) with the
    cleanup keys resolved as the module docstring says, checked (ConfigError naming the key)."""
    result = {k: str(v) for k, v in (requested or {}).items()}
    streams = StreamConfig(config)
    system_stream = SystemStream(system, stream)
    default_system = JobConfig(config).default_system
    for key in DEFAULTS:
        definition = keys.stream_property(key)
        explicit = None
        for sid in streams.stream_ids_for(system_stream, default_system):
            explicit = config.get_str(definition.key(stream_id=sid))
            if explicit is not None:
                break
        if explicit is None:
            explicit = config.get_str(definition.system_stream_key(system, stream))
        if explicit is not None:
            result[key] = explicit
        elif key not in result:
            fallback = config.get_str(definition.system_default_key(system))
            if fallback is not None:
                result[key] = fallback
    CleanupPolicy.from_properties(result, f"stream {system}.{stream}: ")  # fails naming a bad value
    return result


def check_config(config: Config, system: str) -> None:
    """ConfigError naming the first bad cleanup key set for ``system`` (per stream or default)."""
    prefix = keys.prefix(keys.SYSTEM_KEYS, system=system)
    for full_key in config:
        if not full_key.startswith(prefix):
            continue
        # longest first: "delete.retention.ms" also ends with ".retention.ms"
        for key in sorted(DEFAULTS, key=len, reverse=True):
            if full_key.endswith("." + key) and (
                full_key == keys.stream_property(key).system_default_key(system)
                or full_key.startswith(prefix + "streams.")
            ):
                where = full_key[: -len(key)]
                CleanupPolicy.from_properties({key: config.get_str(full_key) or ""}, where)
                break
