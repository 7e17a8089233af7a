"""An unbounded Samza job's Dagster run, live on a thread for a test: started, awaited, terminated.

``with live_run(job, instance) as live:`` executes the job in process on a thread and enters once
the run is STARTED (``live.run``); on leaving, the run is terminated as the UI does (CANCELING:
the op stops the job gracefully) and joined, and ``live.result`` holds its result.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from support.waiting import wait_until


@dataclass
class LiveRun:
    run: Any = None
    result: Any = None
    outcome: dict[str, Any] = field(default_factory=dict)

    def materializations(self, instance: dg.DagsterInstance) -> list[dg.AssetMaterialization]:
        return materializations(instance, self.run.run_id)


def materializations(instance: dg.DagsterInstance, run_id: str) -> list[dg.AssetMaterialization]:
    """The run's asset materializations, in order."""
    events = instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)
    return [e.asset_materialization for e in events if e.asset_materialization is not None]


@contextmanager
def live_run(
    job: Any, instance: dg.DagsterInstance, *, tags: Mapping[str, str] | None = None, stop_timeout_s: float = 120
) -> Iterator[LiveRun]:
    live = LiveRun()
    worker = threading.Thread(
        target=lambda: live.outcome.setdefault("result", job.execute_in_process(instance=instance)), daemon=True
    )
    worker.start()
    try:
        live.run = wait_until(
            lambda: instance.get_runs(dg.RunsFilter(tags=dict(tags or {}), statuses=[dg.DagsterRunStatus.STARTED])),
            what="the live run to start",
        )[0]
        yield live
    finally:
        if live.run is not None:
            instance.report_run_canceling(instance.get_run_by_id(live.run.run_id))
        worker.join(stop_timeout_s)
    assert not worker.is_alive(), "the job did not stop after the run was terminated"
    live.result = live.outcome.get("result")
