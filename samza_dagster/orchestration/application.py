"""One application's definitions: its stream assets, the job's multi-asset and asset job, the
reconfiguration, observation and failure sensors — built from its .properties and execution plan.

Every run of the asset job carries the ``samza/job-instance`` tag the code location's run queue
limits to one live run (see :mod:`.single_run`), and runs on the in-process executor: a
graceful terminate then ends with the step's success, not an error (:mod:`.supervision`). The streams an unbounded job writes get a
freshness policy (a live run materializes them every ``dagster.materialization.interval.ms``);
owners come from ``dagster.owners`` (see :mod:`.settings`).

If the application cannot be planned (bad config, a join whose streams disagree, a class that
does not import), its definitions are replaced by a placeholder asset ``[<app>, execution_plan]``
whose asset check fails with the error, and the error is logged naming the application: the
rest of the code location still loads.
"""

import hashlib
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dagster as dg

from samza_dagster.config import Config
from samza_dagster.config.system_config import StreamConfig
from samza_dagster.orchestration.assets import DeclaredOutput, _group_name, is_written, stream_assets
from samza_dagster.orchestration.backfill import ReprocessingBackfill
from samza_dagster.orchestration.job_asset import RunnerFactory, is_bounded_job, op_name, samza_job_asset
from samza_dagster.orchestration.observable_inputs import observable_inputs
from samza_dagster.orchestration.sensors import (
    coordinator_stream_sensor,
    samza_job_failure_sensor,
    stream_observation_sensor,
)
from samza_dagster.orchestration.settings import DagsterSettings
from samza_dagster.orchestration.single_run import JOB_INSTANCE_TAG, job_instance
from samza_dagster.orchestration.tables import IcebergSystems
from samza_dagster.planner import configured_plan

log = logging.getLogger(__name__)

PLAN_ASSET = "execution_plan"


def application_definitions(
    application: str,
    config: Config | str | Path,
    *,
    declared_outputs: Sequence[DeclaredOutput | str] = (),
    runner_factory: RunnerFactory | None = None,
    assets: Sequence[Any] = (),
    jobs: Sequence[Any] = (),
    sensors: Sequence[Any] = (),
    schedules: Sequence[Any] = (),
    backfills: Sequence[ReprocessingBackfill] = (),
    contain_errors: bool = True,
    config_path: str | Path | None = None,
) -> dg.Definitions:
    """Definitions of one application (``config`` a Config or a .properties path). Extra
    assets/jobs/sensors/schedules of the application are added as they are; each
    :func:`~samza_dagster.orchestration.reprocessing_backfill` adds its daily asset, job and
    schedule, and its batch stream's asset is drawn downstream of it. With ``contain_errors``
    a rejected config or plan becomes :func:`failed_application_definitions`; without, it raises.
    ``config_path`` names the file a Config came from (a path ``config`` names itself): the
    assets of the job's Iceberg tables carry it, so their readers find the same catalog."""
    try:
        cfg = config if isinstance(config, Config) else Config.from_properties(config)
        if config_path is None and not isinstance(config, Config):
            config_path = config
        settings = DagsterSettings.from_config(cfg)
        plan = configured_plan(cfg)
        outputs = [o if isinstance(o, DeclaredOutput) else _declared(cfg, o) for o in declared_outputs]
        freshness = None
        if not is_bounded_job(s for s in plan.streams.values() if not is_written(s)):
            freshness = dg.FreshnessPolicy.time_window(
                fail_window=settings.freshness_fail, warn_window=settings.freshness_warn
            )
        iceberg = IcebergSystems.from_config(cfg, str(Path(config_path).resolve()) if config_path else None)
        streams = stream_assets(
            plan,
            application=application,
            declared_outputs=outputs,
            owners=settings.owners,
            freshness=freshness,
            iceberg=iceberg,
        )
        job_asset = samza_job_asset(streams, cfg, runner_factory=runner_factory, settings=settings)
        asset_job = dg.define_asset_job(
            f"{streams.group_name}_job",
            selection=dg.AssetSelection.assets(job_asset),
            description=f"Runs the Samza job {plan.job_name} and materializes the streams it writes",
            tags={"samza/application": application, JOB_INSTANCE_TAG: job_instance(cfg)},
            # one op: a step process of its own buys nothing, and under the multiprocess executor
            # a graceful terminate ends in an ERROR-level RUN_CANCELED with the executor's trace
            # (docs/decisions.md, "A graceful Terminate ends green")
            executor_def=dg.in_process_executor,
        )
        fed_by: dict[str, list[dg.AssetKey]] = {}
        for backfill in backfills:
            if backfill.source.id != backfill.batch.id:  # a rewind reads its stream, it does not feed it
                fed_by.setdefault(backfill.batch.id, []).append(backfill.key)
        read_specs = [
            spec.merge_attributes(deps=fed_by[spec.key.path[-1]]) if spec.key.path[-1] in fed_by else spec
            for spec in streams.read_specs
        ]
        return dg.Definitions(
            assets=[*observable_inputs(streams, cfg, read_specs), job_asset, *assets, *(b.asset for b in backfills)],
            jobs=[asset_job, *jobs, *(b.job for b in backfills)],
            sensors=[
                coordinator_stream_sensor(
                    plan.job_name,
                    cfg,
                    job=asset_job,
                    op_name=op_name(streams),
                    assets=streams,
                    name=f"{streams.group_name}_coordinator_stream_sensor",
                ),
                stream_observation_sensor(streams, cfg, settings=settings),
                samza_job_failure_sensor(streams, job=asset_job),
                *sensors,
            ],
            schedules=[*schedules, *(b.schedule for b in backfills)],
        )
    except Exception as exc:  # noqa: BLE001 - one broken application must not hide the others
        if not contain_errors:
            raise
        log.error("application %s is not loaded: its plan was rejected: %s: %s", application, type(exc).__name__, exc)
        return failed_application_definitions(application, exc)


def _declared(config: Config, entry: str) -> DeclaredOutput:
    """``system.stream``; its partition count from ``streams.<stream>.partitions`` (default 1)."""
    out = DeclaredOutput.parse(entry)
    partitions = StreamConfig(config).partitions(out.stream_id)
    return DeclaredOutput(out.stream_id, out.system, out.physical_name, partitions or 1)


def failed_application_definitions(application: str, error: BaseException) -> dg.Definitions:
    """A placeholder asset with a failing check, so the UI shows which application failed and why
    — as soon as it is loaded: a sensor (on by default) records the check's failed evaluation at
    its first tick, where the check alone showed "Not evaluated" until someone executed it."""
    group = _group_name(application)
    message = f"{type(error).__name__}: {error}"
    spec = dg.AssetSpec(
        [application, PLAN_ASSET],
        group_name=group,
        description=f"The execution plan of {application} was rejected: {message}",
        metadata={"error": message},
        tags={"samza/role": "plan-error"},
    )

    @dg.asset_check(asset=spec.key, name="plan_accepted", description=f"Is the plan of {application} valid?")
    def _plan_accepted() -> dg.AssetCheckResult:
        return dg.AssetCheckResult(
            passed=False, severity=dg.AssetCheckSeverity.ERROR, description=message, metadata={"error": message}
        )

    recorded = hashlib.sha256(message.encode()).hexdigest()[:16]

    @dg.sensor(
        name=f"{group}_plan_check_sensor",
        minimum_interval_seconds=30,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=f"Records that the plan of {application} was rejected (its plan_accepted check fails)",
    )
    def _record_rejection(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        if context.cursor == recorded:
            return dg.SkipReason(f"the rejected plan of {application} is recorded; fix it and reload")
        evaluation = dg.AssetCheckEvaluation(
            asset_key=spec.key,
            check_name="plan_accepted",
            passed=False,
            severity=dg.AssetCheckSeverity.ERROR,
            description=message,
            metadata={"error": message},
        )
        return dg.SensorResult(
            asset_events=[evaluation], cursor=recorded, skip_reason=f"recorded the rejected plan of {application}"
        )

    return dg.Definitions(assets=[spec], asset_checks=[_plan_accepted], sensors=[_record_rejection])
