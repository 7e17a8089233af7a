"""The ``dagster.*`` keys of a job's .properties: how Dagster operates the job.

They sit beside Samza's keys in the same file, so an application's operations settings live
with the application; the engine ignores them. Every key is optional:

* ``dagster.owners`` — comma-separated asset owners (``team:name`` or e-mail addresses).
* ``dagster.materialization.interval.ms`` — how often a live run materializes the streams it
  writes (default 60,000; 0 turns live materializations off, leaving the one at the run's end).
* ``dagster.progress.interval.ms`` — the first interval of the run's progress log lines (default
  5,000); while nothing changes the interval doubles, up to ``dagster.progress.max.interval.ms``
  (default 300,000), and goes back to the first one as soon as messages flow again.
* ``dagster.check.lag.warn.messages`` / ``dagster.check.lag.error.messages`` — the consumer-lag
  asset check warns / fails above these many unprocessed input messages (defaults 10,000 / 100,000).
* ``dagster.freshness.warn.window.ms`` / ``dagster.freshness.fail.window.ms`` — the freshness
  policy of the streams an unbounded job writes (defaults 5 and 10 minutes: a live run
  materializes every minute, so a stale asset means the job is down or stuck).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from samza_dagster.config import Config, ConfigError, keys

OWNERS_KEY = keys.DAGSTER_OWNERS.name
MATERIALIZATION_INTERVAL_KEY = keys.DAGSTER_MATERIALIZATION_INTERVAL_MS.name
PROGRESS_INTERVAL_KEY = keys.DAGSTER_PROGRESS_INTERVAL_MS.name
PROGRESS_MAX_INTERVAL_KEY = keys.DAGSTER_PROGRESS_MAX_INTERVAL_MS.name
LAG_WARN_KEY = keys.DAGSTER_LAG_WARN.name
LAG_ERROR_KEY = keys.DAGSTER_LAG_ERROR.name
FRESHNESS_WARN_KEY = keys.DAGSTER_FRESHNESS_WARN_MS.name
FRESHNESS_FAIL_KEY = keys.DAGSTER_FRESHNESS_FAIL_MS.name


@dataclass(frozen=True)
class DagsterSettings:
    owners: tuple[str, ...] = ()
    materialization_interval_s: float = keys.DAGSTER_MATERIALIZATION_INTERVAL_MS.default / 1000
    progress_interval_s: float = keys.DAGSTER_PROGRESS_INTERVAL_MS.default / 1000
    progress_max_interval_s: float = keys.DAGSTER_PROGRESS_MAX_INTERVAL_MS.default / 1000
    lag_warn: int = keys.DAGSTER_LAG_WARN.default
    lag_error: int = keys.DAGSTER_LAG_ERROR.default
    freshness_warn: timedelta = timedelta(milliseconds=keys.DAGSTER_FRESHNESS_WARN_MS.default)
    freshness_fail: timedelta = timedelta(milliseconds=keys.DAGSTER_FRESHNESS_FAIL_MS.default)

    @classmethod
    def from_config(cls, config: Config) -> DagsterSettings:
        owners = tuple(o.strip() for o in (config.get_str(OWNERS_KEY) or "").split(",") if o.strip())
        for owner in owners:
            if not (owner.startswith("team:") or "@" in owner):
                raise ConfigError(
                    f"config key {OWNERS_KEY!r}: owner {owner!r} is neither team:<name> nor an e-mail address",
                    key=OWNERS_KEY,
                )
        lag_warn = _non_negative(config, LAG_WARN_KEY, cls.lag_warn)
        lag_error = _non_negative(config, LAG_ERROR_KEY, cls.lag_error)
        if lag_error < lag_warn:
            raise ConfigError(
                f"config key {LAG_ERROR_KEY!r} ({lag_error}) is below {LAG_WARN_KEY!r} ({lag_warn})", key=LAG_ERROR_KEY
            )
        warn_ms = _non_negative(config, FRESHNESS_WARN_KEY, keys.DAGSTER_FRESHNESS_WARN_MS.default)
        fail_ms = _non_negative(config, FRESHNESS_FAIL_KEY, keys.DAGSTER_FRESHNESS_FAIL_MS.default)
        if fail_ms <= warn_ms:
            raise ConfigError(
                f"config key {FRESHNESS_FAIL_KEY!r} ({fail_ms}) must be above {FRESHNESS_WARN_KEY!r} ({warn_ms})",
                key=FRESHNESS_FAIL_KEY,
            )
        progress_ms = (
            _non_negative(config, PROGRESS_INTERVAL_KEY, keys.DAGSTER_PROGRESS_INTERVAL_MS.default)
            or keys.DAGSTER_PROGRESS_INTERVAL_MS.default
        )
        return cls(
            owners=owners,
            materialization_interval_s=_non_negative(
                config, MATERIALIZATION_INTERVAL_KEY, keys.DAGSTER_MATERIALIZATION_INTERVAL_MS.default
            )
            / 1000,
            progress_interval_s=progress_ms / 1000,
            progress_max_interval_s=max(
                progress_ms,
                _non_negative(config, PROGRESS_MAX_INTERVAL_KEY, keys.DAGSTER_PROGRESS_MAX_INTERVAL_MS.default),
            )
            / 1000,
            lag_warn=lag_warn,
            lag_error=lag_error,
            freshness_warn=timedelta(milliseconds=warn_ms),
            freshness_fail=timedelta(milliseconds=fail_ms),
        )


def _non_negative(config: Config, key: str, default: int) -> int:
    value = config.get_int(key, default)
    if value is None or value < 0:
        raise ConfigError(f"config key {key!r} must be 0 or more, got {config.get_str(key)!r}", key=key)
    return value
