"""The interpreter's thread switch interval for a running container.

A container runs its tasks on the run-loop thread and polls each system on a poller thread of
its own (SystemConsumers) — except the embedded log, which is polled on the run-loop thread
(the history below was measured with a log poller thread; it still holds for Kafka's). With
CPython's default 5 ms switch interval a CPU-bound task keeps
the GIL for up to 5 ms every time a poller thread returns from I/O (each SQLite row step, each
socket read releases and re-takes it), so the poller fetches slowly and new messages reach the
chooser seconds late; priority over a batch flood only works once messages reach the chooser.
0.5 ms cut benchmark B4's real-time p99 by an order of magnitude at no measurable cost to B1
(numbers: docs/benchmarks.md, "Measurements behind defaults in the code"). The setting is
process-wide, so it is only ever lowered, never raised above what the process already uses.
"""

from __future__ import annotations

import sys

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError

SWITCH_INTERVAL_KEY = keys.JOB_CONTAINER_SWITCH_INTERVAL_US.name
DEFAULT_SWITCH_INTERVAL_US: int = keys.JOB_CONTAINER_SWITCH_INTERVAL_US.default


def apply_switch_interval(config: Config) -> float:
    """Lower ``sys.getswitchinterval()`` to the configured interval (µs; 0 leaves it alone).
    Returns the interval in force, in seconds."""
    us = config.get_int(SWITCH_INTERVAL_KEY, DEFAULT_SWITCH_INTERVAL_US)
    if us is None or us < 0:
        raise ConfigError(
            f"config key {SWITCH_INTERVAL_KEY!r} must be >= 0 microseconds, got {us}", key=SWITCH_INTERVAL_KEY
        )
    if us > 0 and us / 1e6 < sys.getswitchinterval():
        sys.setswitchinterval(us / 1e6)
    return sys.getswitchinterval()
