"""The op that runs a Samza job: a multi-asset materializing the streams the job writes.

It resolves the job's config (the application's .properties, the deployment's systems from the
:class:`SamzaSystemsResource` bound as ``samza_systems``, then the run's ``overrides`` — what a reconfiguration run from the
coordinator-stream sensor sets), makes sure no other run of the same Samza job is live (see
:mod:`.single_run`), observes the inputs (one batched offset lookup per system; an unreachable
Kafka fails here, fast, naming its address), creates missing output streams, and runs the job
through the runner ``job.factory.class`` names — a ``spark`` job (the product default) on the
:class:`SparkResource` bound as ``spark``. :mod:`.supervision` watches the job while it runs: graceful stop on
terminate, reconfiguration log lines, progress, live materializations. When the job stops — a
bounded job at end-of-stream, an unbounded one when terminated — the streams it wrote are
materialized with their offsets (an Iceberg table with what the run appended and the snapshot,
row count and schema it left, :mod:`.tables`), the inputs observed with the final lag, and the
asset checks (:mod:`.checks`) evaluated. A failed container fails the run with the container's error.

The launch submits its whole config to the job's coordinator stream, as Samza's job submission
does. Values set there from outside the job (``coordinator-stream-writer``) are kept over the
.properties — a relaunch never reverts a live reconfiguration — unless the launch overrides the
key explicitly; that replacement is logged as a warning and tagged on the run.
"""

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace

import dagster as dg

from samza_dagster.config import Config, keys
from samza_dagster.config.job_config import JobConfig
from samza_dagster.model import StreamSpec
from samza_dagster.orchestration import bootstrap, checks, results
from samza_dagster.orchestration.assets import StreamAssets, in_dependency_order
from samza_dagster.orchestration.coordinator_changes import keep_coordinator_stream_config
from samza_dagster.orchestration.errors import OrchestrationError
from samza_dagster.orchestration.job_report import JobReport, RunnerStart, WrittenSince, input_metadata
from samza_dagster.orchestration.launch_check import check_launch_config
from samza_dagster.orchestration.live import LiveMaterializations, ProgressLine, follow_metrics
from samza_dagster.orchestration.observation import DATA_VERSION_TAG, StreamObservation, observe_streams, system_admin
from samza_dagster.orchestration.provenance import processed_version, read_input_versions_again
from samza_dagster.orchestration.resources import SamzaSystemsResource, SparkResource
from samza_dagster.orchestration.settings import DagsterSettings
from samza_dagster.orchestration.single_run import claim_job_instance, job_instance
from samza_dagster.orchestration.supervision import JobSupervisor, SupervisedRunner, Supervision
from samza_dagster.orchestration.tables import RunCommits, table_materialization
from samza_dagster.planner.plan import StreamInfo
from samza_dagster.runtime import create_runner
from samza_dagster.runtime.result import JobResult
from samza_dagster.system.errors import SystemUnavailableError

__all__ = [
    "SYSTEMS_RESOURCE_KEY",
    "RunnerFactory",
    "SamzaJobRunConfig",
    "in_dependency_order",
    "is_bounded_job",
    "job_config",
    "op_name",
    "run_samza_job",
    "runner_for",
    "samza_job_asset",
    "uses_spark_resource",
]

#: the resource keys the ops, sensors and backfills take their typed resources under
SYSTEMS_RESOURCE_KEY = "samza_systems"
#: builds the runner of a job's config (``samza_dagster.runtime.create_runner`` by default)
RunnerFactory = Callable[[Config], SupervisedRunner]
#: what the job's op yields: a materialization per written stream and its checks' results
JobEvent = dg.MaterializeResult | dg.AssetCheckResult


class SamzaJobRunConfig(dg.Config):
    """Run config of a Samza job op (launchpad, or a sensor's RunRequest)."""

    overrides: dict[str, str] = {}
    reason: str = ""


def runner_for(spark: SparkResource | None, config: Config) -> tuple[SupervisedRunner, RunnerStart]:
    """The job's runner and how it was made: a job whose ``job.factory.class`` is ``spark`` (the
    product default) runs on the ``spark`` resource's session, so every Spark job of one Dagster
    process shares one session."""
    if JobConfig(config).factory == "spark":
        if spark is not None:
            # pyspark (and its JVM gateway) loads only where Spark runs
            from pyspark import SparkContext

            reused = SparkContext._active_spark_context is not None  # noqa: SLF001 - pyspark's own "is a session up"
            started = time.monotonic()
            session = spark.get_session()
            start = (
                RunnerStart("reused")
                if reused
                else RunnerStart("started by this run", spark_startup_s=time.monotonic() - started)
            )
            return create_runner(config, spark=session), start
    return create_runner(config), RunnerStart()


def op_name(assets: StreamAssets) -> str:
    return f"{assets.group_name}_samza_job"


def is_bounded_job(streams: Iterable[StreamInfo]) -> bool:
    """Every input the job is grouped on is bounded (side inputs fill tables and do not end it)."""
    inputs = [s for s in streams if s.role in ("input", "bootstrap")]
    return bool(inputs) and all(s.bounded for s in inputs)


def samza_job_asset(
    assets: StreamAssets,
    config: Config,
    *,
    name: str | None = None,
    runner_factory: RunnerFactory | None = None,
    settings: DagsterSettings | None = None,
) -> dg.AssetsDefinition:
    """A multi-asset over the written streams of ``assets`` that runs the job ``config`` describes."""
    base = config
    settings = settings or DagsterSettings.from_config(config)
    if not assets.written_specs:
        raise OrchestrationError(
            f"application {assets.application!r} writes no stream the plan knows: declare the outputs "
            "of a low-level task (declared_outputs) so the job has assets to materialize"
        )
    bounded = is_bounded_job(assets.read_streams())
    asset = dg.multi_asset(
        name=name or op_name(assets),
        specs=assets.written_specs,
        check_specs=checks.check_specs(assets, bounded=bounded),
        description=f"Runs the Samza job {config.get_str('job.name')} until it "
        f"{'reaches end-of-stream' if bounded else 'is terminated'} ({JobConfig(config).factory} runner)",
        op_tags={"samza/job": keys.JOB_NAME.get(config) or assets.application},
        # one live instance per Samza job: with a pool limit of 1 (the repository's dagster.yaml),
        # a second launch — a Materialize from the asset page too — waits for the live run to end
        # instead of failing (a failed step would leave its checks red, "execution failed")
        pool=job_instance(config),
    )
    # Dagster binds a resource by the name and type of a parameter: a Spark job takes the spark
    # resource too (its session runs the containers), any other job only where the systems are
    if uses_spark_resource(config):

        def _spark_job(
            context: dg.AssetExecutionContext,
            config: SamzaJobRunConfig,
            samza_systems: SamzaSystemsResource,
            spark: SparkResource,
        ) -> Iterator[JobEvent]:
            yield from run_samza_job(
                context, assets, base, config, runner_factory, settings, bounded, samza_systems, spark
            )

        return asset(_spark_job)

    def _samza_job(
        context: dg.AssetExecutionContext, config: SamzaJobRunConfig, samza_systems: SamzaSystemsResource
    ) -> Iterator[JobEvent]:
        yield from run_samza_job(context, assets, base, config, runner_factory, settings, bounded, samza_systems, None)

    return asset(_samza_job)


def uses_spark_resource(config: Config) -> bool:
    """A job on the spark runner (``job.factory.class=spark``, the product default)."""
    return JobConfig(config).factory == "spark"


def job_config(systems: SamzaSystemsResource, base: Config, run_config: SamzaJobRunConfig) -> Config:
    cfg = systems.apply(base)
    return cfg.with_overrides(run_config.overrides) if run_config.overrides else cfg


def run_samza_job(
    context: dg.AssetExecutionContext,
    assets: StreamAssets,
    base: Config,
    run_config: SamzaJobRunConfig,
    runner_factory: RunnerFactory | None,
    settings: DagsterSettings,
    bounded: bool,
    systems: SamzaSystemsResource,
    spark: SparkResource | None,
) -> Iterator[JobEvent]:
    """The op's body, in the order a launch happens: the job's config and its one live instance
    (:func:`_launch`), its streams before it starts (:func:`_streams_before`), the run under
    supervision (:func:`_supervised_run`), what it did (:func:`_conclude`: the :class:`JobReport`
    and the inputs' observations), then per written stream its materialization and checks."""
    launch = _launch(context, assets, base, run_config, settings, systems)
    before = _streams_before(context, assets, launch)
    launch = launch.keeping_coordinator_stream(context, run_config.overrides)
    finished = _supervised_run(context, assets, launch, before, runner_factory, spark)
    end = _conclude(context, assets, launch, before, finished)
    read_input_versions_again(context, [assets.keys[sid] for sid in before.inputs])
    for stream in in_dependency_order(before.written):
        key = assets.keys[stream.id]
        yield _materialization(context, launch, assets, stream, before, end)
        yield checks.lag_result(key, end.final_inputs, launch.settings, end.metrics_lag)
        if bounded:
            yield checks.end_of_stream_result(key, end.report.status, end.report.stopped_by)
    for sid, obs in before.inputs.items():  # inputs that moved on during the run: after the outputs
        final = end.final_inputs.get(sid)
        if final is not None and final.data_version != processed_version(obs, final):
            context.log_event(final.to_event(assets.keys[sid], f"offsets after {launch.job_name}'s run"))


@dataclass(frozen=True, slots=True)
class _Launch:
    """A launch of the job as the op resolved it: its config (deployment, overrides, the
    coordinator stream's outside changes kept), its name and the settings checked against it."""

    cfg: Config
    job_name: str
    settings: DagsterSettings

    def keeping_coordinator_stream(self, context: dg.AssetExecutionContext, overrides: dict[str, str]) -> "_Launch":
        """The launch with the values set on the coordinator stream from outside the job kept
        over the deployed config (a relaunch never reverts a live reconfiguration), except where
        the run config's ``overrides`` name the key."""
        return replace(self, cfg=keep_coordinator_stream_config(context, self.cfg, self.job_name, overrides))


@dataclass(frozen=True, slots=True)
class _Before:
    """The job's streams as they stood before it started: the offsets every "since the run
    started" count is measured from."""

    read: list[StreamInfo]
    written: list[StreamInfo]
    inputs: dict[str, StreamObservation]
    written_before: dict[str, StreamObservation]
    bootstrap_inputs: list[StreamObservation]


@dataclass(frozen=True, slots=True)
class _Finished:
    """The supervised run when the job stopped without failing."""

    result: JobResult
    outcome: Supervision
    runner_start: RunnerStart
    #: the op's own measure of the run, for a result that carries no time
    wall_s: float


@dataclass(frozen=True, slots=True)
class _End:
    """The job's streams and report when it has stopped: what the materializations and checks
    are made of."""

    report: JobReport
    #: the written streams now
    written_after: dict[str, StreamObservation]
    #: the inputs now, with their lag (empty when they could not be observed)
    final_inputs: dict[str, StreamObservation]
    #: input stream id → lag, as the containers' metrics last reported it
    metrics_lag: dict[str, int]


def _launch(
    context: dg.AssetExecutionContext,
    assets: StreamAssets,
    base: Config,
    run_config: SamzaJobRunConfig,
    settings: DagsterSettings,
    systems: SamzaSystemsResource,
) -> _Launch:
    """The job's config for this run, and the claim to be its one live instance — first, so a
    second launch fails (or waits) before it touches a stream."""
    cfg = job_config(systems, base, run_config)
    job_name = keys.JOB_NAME.get(cfg) or assets.application
    claim_job_instance(context, cfg, job_name)
    if run_config.overrides:
        context.log.info(f"job {job_name}: config overrides {run_config.overrides} {run_config.reason}".strip())
    settings = check_launch_config(context, cfg, job_name, run_config.overrides, settings)
    return _Launch(cfg, job_name, settings)


def _streams_before(context: dg.AssetExecutionContext, assets: StreamAssets, launch: _Launch) -> _Before:
    """The inputs observed (one batched lookup per system: an unreachable system or a missing
    input fails the run here, fast, naming it), the outputs created where missing and observed,
    and then the coordinator stream's outside changes kept in the launch's config."""
    job_name = launch.job_name
    read, written = assets.read_streams(), assets.written_streams()
    try:
        inputs = observe_streams(launch.cfg, read, with_lag=True)
        missing = sorted(sid for sid, o in inputs.items() if not o.exists)
        if missing:
            raise dg.Failure(description=_missing_inputs(launch.cfg, job_name, [inputs[s] for s in missing]))
        for sid, obs in inputs.items():
            context.log_event(obs.to_event(assets.keys[sid], f"offsets seen by {job_name} before it started"))
        _create_outputs(launch.cfg, written)
        written_before = observe_streams(launch.cfg, written, with_lag=False)
    except SystemUnavailableError as exc:
        raise dg.Failure(description=f"job {job_name}: {exc}") from exc
    return _Before(read, written, inputs, written_before, [inputs[s.id] for s in read if s.bootstrap])


def _missing_inputs(cfg: Config, job_name: str, missing: list[StreamObservation]) -> str:
    """What a launch whose inputs do not exist says: which, where it looked, what to do."""
    names = ", ".join(f"{o.system}.{o.physical_name}" for o in missing)
    roots = sorted({cfg.get(keys.LOG_PATH.key(system=o.system), "") for o in missing} - {""})
    where = f" under the log root {', '.join(roots)}" if roots else ""
    return (
        f"job {job_name}: input stream(s) {', '.join(o.stream_id for o in missing)} do not exist ({names}){where}. "
        "Write them first (an application's <app>_load_sample job, or `samza-dagster streams create` and "
        "`streams produce`), or point the samza_systems resource at the system that holds them "
        "(SAMZA_LOG_PATH for the log)."
    )


def _supervised_run(
    context: dg.AssetExecutionContext,
    assets: StreamAssets,
    launch: _Launch,
    before: _Before,
    runner_factory: RunnerFactory | None,
    spark: SparkResource | None,
) -> _Finished:
    """Runs the job under a :class:`JobSupervisor` (graceful stop, progress lines, live
    materializations) until it stops (:func:`_succeeded` fails the run of a failed job)."""
    cfg, job_name = launch.cfg, launch.job_name
    for line in bootstrap.live_progress(cfg, before.bootstrap_inputs):
        context.log.info(f"job {job_name}: before the run, {line.line()}")
    started = time.monotonic()
    if runner_factory is not None:
        runner, runner_start = runner_factory(cfg), RunnerStart()
    else:
        if JobConfig(cfg).factory == "spark" and spark is not None:
            # a Spark session's start takes seconds to tens of seconds: say so, not nothing
            context.log.info(f"job {job_name}: getting the Spark session (master {spark.master}) for the spark runner")
        runner, runner_start = runner_for(spark, cfg)
        if runner_start.spark_startup_s is not None:
            context.log.info(f"job {job_name}: Spark session started in {runner_start.spark_startup_s:.1f} s")
    watch = ProgressLine(
        cfg,
        before.written,
        before.written_before,
        before.bootstrap_inputs,
        before.read,
        getattr(runner, "live_positions", None),
        getattr(runner, "live_stalls", None),
    )
    follower = follow_metrics(context, cfg, job_name)
    live = LiveMaterializations(
        context, assets, cfg, before.read, before.written, before.written_before, job_name, follower, launch.settings
    )
    context.log.info(f"job {job_name}: starting ({JobConfig(cfg).factory} runner)")
    try:
        outcome = JobSupervisor(context, runner, job_name, launch.settings, watch.progress, live.emit).run()
    finally:
        watch.close()
        if follower is not None:
            follower.stop()
    return _Finished(_succeeded(job_name, outcome), outcome, runner_start, time.monotonic() - started)


def _succeeded(job_name: str, outcome: Supervision) -> JobResult:
    """The result of a job that did not fail; a failed one — the runner raised, or a container
    failed — fails the run with the job's error (and, from the containers, what they processed)."""
    if outcome.error is not None:
        failed = outcome.error
        raise dg.Failure(description=f"job {job_name} failed: {type(failed).__name__}: {failed}") from failed
    result = outcome.result
    if result is None:  # a runner returns a JobResult or raises; this is a runner bug
        raise dg.Failure(description=f"job {job_name}: its runner ended without a result")
    error = results.failure(result)
    if error is not None:
        processed = results.messages_per_stream(result)
        raise dg.Failure(
            description=f"job {job_name} failed: {error}",
            metadata={"job_status": results.status(result), "messages_processed": sum(processed.values())},
        )
    return result


def _conclude(
    context: dg.AssetExecutionContext, assets: StreamAssets, launch: _Launch, before: _Before, finished: _Finished
) -> _End:
    """The run's :class:`JobReport`, the streams observed after it, an observation per input and
    the run log's last line about the job."""
    written_after = observe_streams(launch.cfg, before.written, with_lag=False)
    report = JobReport.of(
        finished.result,
        finished.outcome,
        runner=JobConfig(launch.cfg).factory,
        runner_start=finished.runner_start,
        bootstrap_streams={f"{o.system}.{o.physical_name}" for o in before.bootstrap_inputs},
        wall_s=finished.wall_s,
    )
    final_inputs = _observe_quietly(context, launch.cfg, before.read, launch.job_name)
    metrics_lag = report.metrics.lag_per_input(before.inputs.values())
    _report_inputs(context, assets, launch.job_name, before, report, finished.result, final_inputs, metrics_lag)
    context.log.info(report.line(launch.job_name))
    return _End(report, written_after, final_inputs, metrics_lag)


def _observe_quietly(
    context: dg.AssetExecutionContext, cfg: Config, streams: list[StreamInfo], job_name: str
) -> dict[str, StreamObservation]:
    """Inputs with their lag after the run; an observation failure is a warning, not a failed run."""
    try:
        return observe_streams(cfg, streams, with_lag=True)
    except Exception as exc:  # noqa: BLE001 - the job itself has finished
        context.log.warning(f"job {job_name}: cannot observe its inputs after the run: {exc}")
        return {}


def _report_inputs(
    context: dg.AssetExecutionContext,
    assets: StreamAssets,
    job_name: str,
    before: _Before,
    report: JobReport,
    result: JobResult,
    final_inputs: dict[str, StreamObservation],
    metrics_lag: dict[str, int],
) -> None:
    """An observation per input after the run — what it processed, how far it got against what
    there was at the start, its lag now (the containers' own figure when they report one) — and
    a log line for each bootstrap stream saying whether it reached its head."""
    finals = results.final_offsets(result)
    for sid, obs in before.inputs.items():
        name = f"{obs.system}.{obs.physical_name}"
        outcome = report.bootstrap.get(name)
        if outcome is not None:
            context.log.info(outcome.line(job_name, name))
        final = final_inputs.get(sid)
        lag = metrics_lag.get(sid)
        if lag is None and final is not None and final.lag is not None:
            lag = sum(final.lag.values())
        context.log_event(
            dg.AssetObservation(
                asset_key=assets.keys[sid],
                description=f"processed by {job_name}",
                metadata=input_metadata(
                    obs, report, finals, bootstrap=assets.streams[sid].bootstrap, lag=lag, after=final
                ),
                tags={DATA_VERSION_TAG: processed_version(obs, final)},
            )
        )


def _materialization(
    context: dg.AssetExecutionContext,
    launch: _Launch,
    assets: StreamAssets,
    stream: StreamInfo,
    before: _Before,
    end: _End,
) -> dg.MaterializeResult:
    """A written stream's final materialization: what the run wrote to it, the job's report, and
    for an Iceberg table the snapshot, rows and schema the run left (its data version the
    snapshot's)."""
    after = end.written_after[stream.id]
    md = {**WrittenSince.of(before.written_before[stream.id], after).metadata(), **end.report.metadata()}
    version = after.data_version
    table = assets.tables.get(stream.id)
    if table is not None:
        table_md, table_version = table_materialization(
            launch.cfg, table, end.report.table_commits.get(table.name, RunCommits()), context.log.warning
        )
        md.update(table_md)
        version = table_version or version
    return dg.MaterializeResult(asset_key=assets.keys[stream.id], metadata=md, data_version=dg.DataVersion(version))


def _create_outputs(cfg: Config, written: list[StreamInfo]) -> None:
    """Create missing output streams (producing does not create a stream on the log system).
    Intermediate streams are the runner's: it creates them from the plan."""
    by_system: dict[str, list[StreamInfo]] = {}
    for stream in written:
        if "intermediate" not in stream.roles and stream.partitions:
            by_system.setdefault(stream.system, []).append(stream)
    for system, streams in by_system.items():
        with system_admin(cfg, system) as admin:
            for s in streams:
                admin.create_stream(StreamSpec(s.id, s.physical_name, s.system, s.partitions or 1))
