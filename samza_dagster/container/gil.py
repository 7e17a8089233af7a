"""The interpreter's thread switch interval for a running container.

A container runs its tasks on the run-loop thread and polls each system on a poller thread of
its own (SystemConsumers) — except the embedded log, which is polled on the run-loop thread
(the history below was measured with a log poller thread; it still holds for Kafka's). With
CPython's default 5 ms switch interval a CPU-bound task keeps
the GIL for up to 5 ms every time a poller thread returns from I/O (each SQLite row step, each
socket read releases and re-takes it), so the poller fetches slowly and new messages reach the
chooser seconds late; priority over a batch flood only works once messages reach the chooser.
0.5 ms cut benchmark B4's real-time p99 by an order of magnitude at no measurable cost to B1
(numbers: docs/benchmarks.md, "Measurements behind defaults in the code").

The setting is process-wide, and the process is not always the container's (a Dagster run worker,
the thread runner's several containers): a container holds it only while it runs
(process_setting.py). The interval in force is the lowest any running container asks for, never
above what the process had; when the last container of the process stops, the process gets back
the interval it had before the first one started.
"""

from __future__ import annotations

import sys

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.container.process_setting import ProcessSetting, SettingLease

SWITCH_INTERVAL_KEY = keys.JOB_CONTAINER_SWITCH_INTERVAL_US.name
DEFAULT_SWITCH_INTERVAL_US: int = keys.JOB_CONTAINER_SWITCH_INTERVAL_US.default


#: the interpreter's switch interval, held by the running containers of this process
SWITCH_INTERVAL: ProcessSetting[float] = ProcessSetting(sys.getswitchinterval, sys.setswitchinterval, min)


def wanted_switch_interval(config: Config) -> float | None:
    """The configured interval in seconds; None when it is 0 (leave the interpreter's alone)."""
    us = config.get_int(SWITCH_INTERVAL_KEY, DEFAULT_SWITCH_INTERVAL_US)
    if us is None or us < 0:
        raise ConfigError(
            f"config key {SWITCH_INTERVAL_KEY!r} must be >= 0 microseconds, got {us}", key=SWITCH_INTERVAL_KEY
        )
    return us / 1e6 if us > 0 else None


def hold_switch_interval(config: Config) -> SettingLease[float]:
    """Lower ``sys.getswitchinterval()`` to the configured interval (µs; 0 leaves it alone) until
    the lease is released; ``lease.value`` is the interval in force, in seconds."""
    return SWITCH_INTERVAL.hold(wanted_switch_interval(config))
