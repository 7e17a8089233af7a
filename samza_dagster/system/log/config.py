"""``systems.<system>.log.*``: where the log lives and how it batches, fetches and syncs.

* ``log.path`` — the root directory, one ``<stream>.db`` SQLite file per stream. Default
  ``./.samza-log``, resolved against the working directory when the system is created (so a
  process that changes directory later still uses the same root).
* ``log.batch.size`` — messages a producer buffers per stream before it writes them in one
  transaction (default 1000); the producer's thread writes them without the sender waiting, and
  one transaction takes whatever else is buffered by then; ``flush`` writes whatever is buffered.
* ``log.linger.ms`` — the longest a sent message waits in the producer's buffer before it is
  written, while the stream file's write lock is free (default 5, as librdkafka's ``linger.ms``;
  0: no producer thread, ``send`` writes at ``log.batch.size``, or ``flush``). See
  :mod:`samza_dagster.system.log.producer`.
* ``log.fetch.size`` — most envelopes one ``poll`` returns per partition (default 250). Small on
  purpose: one poll covers every partition the poller serves, so a large fetch from a flooded
  batch stream delays a real-time partition's new messages by the whole poll; 250 keeps B4's
  real-time latency low without costing B1's throughput (numbers: docs/benchmarks.md,
  "Measurements behind defaults in the code").
* ``log.synchronous`` — SQLite's ``PRAGMA synchronous``: FULL (default), NORMAL or OFF.
  See the module docstring of :mod:`samza_dagster.system.log.storage` for what each means.
* ``log.busy.timeout.ms`` — how long a writer waits for another process's batch to commit
  before failing (default 30000); a producer retries the lock every 0.1–0.5 ms meanwhile
  (``storage.begin_immediate``).
* ``log.cleaner.interval.ms`` — the least time between two cleaning passes (retention,
  compaction: cleaner.py) of one stream by one producer (default 30000; 0: after every batch).

* ``consumer.isolation.level`` (``systems.<system>.consumer.isolation.level``, Kafka's consumer
  key) — ``read_uncommitted`` reads every message, ``read_committed`` stops each partition before
  the oldest open transaction (transactions.py) and never sees an aborted one. Default
  ``read_uncommitted``, as Kafka's — except in a job with ``job.processing.guarantee=exactly-once``,
  whose consumers default to ``read_committed`` (as Kafka Streams sets them).

The cleanup keys of streams (``systems.<s>.streams.<stream>.retention.ms`` ...) are checked here
too, so a bad one fails when the system is created: see retention.py.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.system.log.retention import check_config

DEFAULT_PATH: str = keys.LOG_PATH.default
DEFAULT_BATCH_SIZE: int = keys.LOG_BATCH_SIZE.default
DEFAULT_FETCH_SIZE: int = keys.LOG_FETCH_SIZE.default
DEFAULT_SYNCHRONOUS: str = keys.LOG_SYNCHRONOUS.default
DEFAULT_BUSY_TIMEOUT_MS: int = keys.LOG_BUSY_TIMEOUT_MS.default
DEFAULT_CLEANER_INTERVAL_MS: int = keys.LOG_CLEANER_INTERVAL_MS.default
DEFAULT_LINGER_MS: int = keys.LOG_LINGER_MS.default


@dataclass(frozen=True, slots=True)
class LogSystemConfig:
    system: str
    path: str
    batch_size: int
    fetch_size: int
    synchronous: str
    busy_timeout_s: float
    cleaner_interval_s: float = DEFAULT_CLEANER_INTERVAL_MS / 1000.0
    linger_s: float = DEFAULT_LINGER_MS / 1000.0
    read_committed: bool = False

    @classmethod
    def from_config(cls, system: str, config: Config) -> LogSystemConfig:
        path = config.get_str(keys.LOG_PATH.key(system=system)) or DEFAULT_PATH
        sync_key = keys.LOG_SYNCHRONOUS.key(system=system)
        synchronous = (config.get_str(sync_key) or DEFAULT_SYNCHRONOUS).strip().upper()
        if synchronous not in ("FULL", "NORMAL", "OFF"):
            raise ConfigError(f"config key {sync_key!r} must be FULL, NORMAL or OFF, got {synchronous!r}", key=sync_key)
        check_config(config, system)
        interval_key = keys.LOG_CLEANER_INTERVAL_MS.key(system=system)
        interval = config.get_int(interval_key, DEFAULT_CLEANER_INTERVAL_MS)
        if interval is None or interval < 0:
            raise ConfigError(
                f"config key {interval_key!r} must be an integer >= 0, got {interval!r}", key=interval_key
            )
        linger_key = keys.LOG_LINGER_MS.key(system=system)
        linger = config.get_int(linger_key, DEFAULT_LINGER_MS)
        if linger is None or linger < 0:
            raise ConfigError(f"config key {linger_key!r} must be an integer >= 0, got {linger!r}", key=linger_key)
        isolation = keys.SYSTEM_CONSUMER_ISOLATION_LEVEL.get(config, system=system)
        if isolation is None:  # as Kafka Streams sets it: an exactly-once job's reads are read_committed
            exactly_once = keys.JOB_PROCESSING_GUARANTEE.get(config) == "exactly-once"
            isolation = "read_committed" if exactly_once else "read_uncommitted"
        return cls(
            system=system,
            path=os.path.abspath(os.path.expanduser(path)),
            batch_size=_positive(config, keys.LOG_BATCH_SIZE.key(system=system), DEFAULT_BATCH_SIZE),
            fetch_size=_positive(config, keys.LOG_FETCH_SIZE.key(system=system), DEFAULT_FETCH_SIZE),
            synchronous=synchronous,
            busy_timeout_s=_positive(config, keys.LOG_BUSY_TIMEOUT_MS.key(system=system), DEFAULT_BUSY_TIMEOUT_MS)
            / 1000.0,
            cleaner_interval_s=interval / 1000.0,
            linger_s=linger / 1000.0,
            read_committed=isolation == "read_committed",
        )


def _positive(config: Config, key: str, default: int) -> int:
    value = config.get_int(key, default)
    assert value is not None
    if value < 1:
        raise ConfigError(f"config key {key!r} must be a positive integer, got {value}", key=key)
    return value
