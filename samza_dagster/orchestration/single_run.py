"""One live run per Samza job.

A Samza job (``job.name`` + ``job.id``) has one live instance: two would consume the same input
partitions under the same checkpoints and write every output twice. Dagster enforces it in two
places:

* every run of a job's asset job carries the tag ``samza/job-instance=<job.name>-<job.id>``, and
  the code location's ``dagster.yaml`` limits runs per unique value of that tag to one, so the
  run queue holds a second launch (from the UI, a schedule or a sensor) until the live run ends;
* the job's op is in the concurrency pool ``<job.name>-<job.id>``, which that ``dagster.yaml``
  limits to one (``pools: default_limit: 1``): a run without the tag — Materialize on an asset
  page runs Dagster's implicit asset job — waits ("blocked by limit for pool") until the live run's
  step has ended, rather than failing and leaving its asset checks "execution failed";
* the job's op checks again when it starts — an instance without that queue limit (a user's own
  ``DAGSTER_HOME``) still never runs two — and fails naming the live run.

The older run wins a race: a run only yields to live runs created before it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import dagster as dg

from samza_dagster.config import Config
from samza_dagster.config.job_config import JobConfig

JOB_INSTANCE_TAG = "samza/job-instance"

#: how long a launch waits for an older run of the same job that is stopping
STOPPING_RUN_WAIT_S = 120.0
#: statuses of a run that will run, or runs, the job's containers (CANCELING: still stopping)
LIVE_STATUSES = (
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
)
#: statuses of a run whose containers are up (or coming up)
RUNNING_STATUSES = (dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING)


def job_instance(config: Config) -> str:
    """``<job.name>-<job.id>``, the identity Samza gives a job (its coordinator stream's too)."""
    job = JobConfig(config)
    return f"{job.name}-{job.id}"


@dataclass(frozen=True)
class LiveRun:
    run_id: str
    status: dg.DagsterRunStatus
    job_name: str

    def describe(self) -> str:
        return f"run {self.run_id} ({self.job_name}, {self.status.value})"


def live_runs(
    instance: dg.DagsterInstance, instance_id: str, statuses: tuple[dg.DagsterRunStatus, ...] = LIVE_STATUSES
) -> list[LiveRun]:
    """Runs of the Samza job ``instance_id`` in ``statuses``, oldest first."""
    records = instance.get_run_records(
        filters=dg.RunsFilter(tags={JOB_INSTANCE_TAG: instance_id}, statuses=list(statuses))
    )
    ordered = sorted(records, key=lambda r: r.create_timestamp)
    return [LiveRun(r.dagster_run.run_id, r.dagster_run.status, r.dagster_run.job_name) for r in ordered]


def older_live_run(instance: dg.DagsterInstance, instance_id: str, run_id: str) -> LiveRun | None:
    """A run of the same Samza job, created before ``run_id``, whose containers are up — the
    run this one must not start beside. None when this run is the oldest live one."""
    for live in live_runs(instance, instance_id, RUNNING_STATUSES):
        if live.run_id == run_id:
            return None
        if live.status is not dg.DagsterRunStatus.CANCELING:
            return live
    return None


def claim_job_instance(context: dg.AssetExecutionContext, cfg: Config, job_name: str) -> None:
    """Tag this run with its Samza job and make sure no older run of that job is live. An older
    run that is stopping is waited for; a running one fails this launch, naming it."""
    instance, run_id = context.instance, context.run.run_id
    instance_id = job_instance(cfg)
    run = instance.get_run_by_id(run_id)
    if run is not None and run.tags.get(JOB_INSTANCE_TAG) != instance_id:
        instance.add_run_tags(run_id, {JOB_INSTANCE_TAG: instance_id})
    deadline = time.monotonic() + STOPPING_RUN_WAIT_S
    while (live := older_live_run(instance, instance_id, run_id)) is not None:
        if live.status is not dg.DagsterRunStatus.CANCELING or time.monotonic() > deadline:
            raise dg.Failure(
                description=f"job {job_name} ({instance_id}) is already live in {live.describe()}: a Samza job runs "
                "once at a time. Terminate that run first, or change the live job's config on its coordinator "
                "stream (samza-dagster coordinator-stream-writer) — the live run applies it."
            )
        context.log.info(f"job {job_name}: waiting for the stopping {live.describe()} to end")
        time.sleep(1.0)
