"""The garbage collector's young-generation threshold for a running container.

CPython collects its youngest generation every 700 net allocations of container objects (an
envelope, a row tuple) and promotes what survives; every tenth such collection does the same for
the middle generation, and the oldest is collected whole once a quarter of it is newly promoted.
A container keeps thousands of envelopes alive for a moment — each partition's buffer, a batch
task's run — so at 700 most of them survive a young collection or two, reach the oldest
generation, and die there soon after, having brought forward full collections that walk every
object of the process. Measured on B1's data (1 M messages, 4 partitions): a no-op batch task with
runs of 4,096 spent 2.0 CPU s at 700 and 1.0 at 50,000 (the raw read alone: 1.1 s); B1's no-op
StreamTask 2.05 and 1.6 (docs/benchmarks.md, B15). A young collection every 50,000 allocations
lets buffered envelopes die young; cyclic garbage waits a little longer to be freed.

The setting is process-wide (the thread runner's containers share one interpreter; a Dagster run
worker goes on running the user's code after the job), so a container holds it only while it runs
(process_setting.py): the threshold in force is the highest any running container asks for, never
below what the process had, and the process gets its own back when its last container stops.
"""

from __future__ import annotations

import gc

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.container.process_setting import ProcessSetting, SettingLease


def _young() -> int:
    return gc.get_threshold()[0]


def _set_young(young: int) -> None:
    _, middle, old = gc.get_threshold()
    gc.set_threshold(young, middle, old)


#: the young generation's threshold, held by the running containers of this process
GC_THRESHOLD: ProcessSetting[int] = ProcessSetting(_young, _set_young, max)


def hold_gc_threshold(config: Config) -> SettingLease[int]:
    """Raise the young-generation threshold to ``job.container.gc.threshold`` (0 leaves it
    alone) until the lease is released; ``lease.value`` is the threshold in force."""
    wanted = keys.JOB_CONTAINER_GC_THRESHOLD.get(config)
    return GC_THRESHOLD.hold(wanted if wanted > 0 else None)
