"""A streaming Dagster job run in process for a test: started on a thread of its own (its op
blocks until the run is terminated), the live run found, and at the end terminated the way the UI
does it — the run marked CANCELING, which the op polls — and waited for."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from support.waiting import wait_until


@dataclass
class LiveRun:
    #: the run, once it started
    run: Any = None
    #: what ``execute_in_process`` returned, once the run ended
    outcome: dict[str, Any] = field(default_factory=dict)

    @property
    def run_id(self) -> str:
        return str(self.run.run_id)

    @property
    def result(self) -> dg.ExecuteInProcessResult:
        return self.outcome["result"]

    def materializations(self, instance: dg.DagsterInstance) -> list[dg.AssetMaterialization]:
        """The run's asset materializations so far, in order."""
        events = instance.all_logs(self.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)
        return [e.asset_materialization for e in events if e.asset_materialization is not None]


@contextmanager
def live_run(
    job: Any, instance: dg.DagsterInstance, job_instance: str | None = None, *, stop_timeout_s: float = 120
) -> Iterator[LiveRun]:
    """``job`` executing on ``instance`` while the body runs; ``job_instance``: the run's
    ``samza/job-instance`` tag (how the live run is found; None: the instance's only started
    run). Terminated on leaving the body."""
    from samza_dagster.orchestration import JOB_INSTANCE_TAG

    live = LiveRun()
    worker = threading.Thread(
        target=lambda: live.outcome.setdefault("result", job.execute_in_process(instance=instance)), daemon=True
    )
    worker.start()
    try:
        live.run = wait_until(
            lambda: instance.get_runs(
                dg.RunsFilter(
                    tags={JOB_INSTANCE_TAG: job_instance} if job_instance else {},
                    statuses=[dg.DagsterRunStatus.STARTED],
                )
            ),
            what="the live run to start",
        )[0]
        yield live
    finally:
        if live.run is not None:
            instance.report_run_canceling(instance.get_run_by_id(live.run.run_id))
        worker.join(stop_timeout_s)
    assert not worker.is_alive(), "the job did not stop after the run was terminated"
