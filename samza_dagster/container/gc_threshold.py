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

The setting is process-wide (the thread runner's containers share one interpreter), so it is
only ever raised, never lowered below what the process already uses.
"""

from __future__ import annotations

import gc

from samza_dagster.config import keys
from samza_dagster.config.config import Config


def apply_gc_threshold(config: Config) -> int:
    """Raise the young-generation threshold to ``job.container.gc.threshold`` (0 leaves it
    alone). Returns the threshold in force."""
    wanted = keys.JOB_CONTAINER_GC_THRESHOLD.get(config)
    young, middle, old = gc.get_threshold()
    if wanted > young:
        gc.set_threshold(wanted, middle, old)
    return gc.get_threshold()[0]
