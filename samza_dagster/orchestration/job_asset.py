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

import graphlib
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import dagster as dg

from samza_dagster.config import Config, keys
from samza_dagster.config.job_config import JobConfig
from samza_dagster.metrics.stream_reader import MetricsStreamFollower
from samza_dagster.model import StreamSpec
from samza_dagster.orchestration import bootstrap, checks, results
from samza_dagster.orchestration.assets import StreamAssets
from samza_dagster.orchestration.coordinator_changes import keep_coordinator_stream_config
from samza_dagster.orchestration.errors import OrchestrationError
from samza_dagster.orchestration.job_metrics import JobMetrics, follow_job_metrics
from samza_dagster.orchestration.launch_check import check_launch_config
from samza_dagster.orchestration.observation import (
    DATA_VERSION_TAG,
    StreamObservation,
    observe_streams,
    offset_int,
    system_admin,
)
from samza_dagster.orchestration.resources import SamzaSystemsResource, SparkResource
from samza_dagster.orchestration.settings import DagsterSettings
from samza_dagster.orchestration.single_run import claim_job_instance, job_instance
from samza_dagster.orchestration.supervision import JobSupervisor
from samza_dagster.orchestration.tables import RunCommits, run_commits, table_materialization
from samza_dagster.planner.plan import StreamInfo
from samza_dagster.runtime import create_runner
from samza_dagster.runtime.result import JobResult
from samza_dagster.system.errors import SystemUnavailableError

#: the resource keys the ops, sensors and backfills take their typed resources under
SYSTEMS_RESOURCE_KEY = "samza_systems"
#: builds the runner of a job's config (``samza_dagster.runtime.create_runner`` by default)
RunnerFactory = Callable[[Config], Any]


class SamzaJobRunConfig(dg.Config):
    """Run config of a Samza job op (launchpad, or a sensor's RunRequest)."""

    overrides: dict[str, str] = {}
    reason: str = ""


def runner_for(spark: SparkResource | None, config: Config) -> tuple[Any, dict[str, Any]]:
    """The job's runner and metadata about how it was made: a job whose ``job.factory.class`` is
    ``spark`` (the product default) runs on the ``spark`` resource's session, so every Spark job
    of one Dagster process shares one session."""
    if JobConfig(config).factory == "spark":
        if spark is not None:
            # pyspark (and its JVM gateway) loads only where Spark runs
            from pyspark import SparkContext

            reused = SparkContext._active_spark_context is not None  # noqa: SLF001 - pyspark's own "is a session up"
            started = time.monotonic()
            session = spark.get_session()
            md: dict[str, Any] = {"spark_session": "reused" if reused else "started by this run"}
            if not reused:
                md["spark_startup_s"] = dg.MetadataValue.float(round(time.monotonic() - started, 3))
            return create_runner(config, spark=session), md
    return create_runner(config), {}


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
        ) -> Iterator[Any]:
            yield from run_samza_job(
                context, assets, base, config, runner_factory, settings, bounded, samza_systems, spark
            )

        return asset(_spark_job)

    def _samza_job(
        context: dg.AssetExecutionContext, config: SamzaJobRunConfig, samza_systems: SamzaSystemsResource
    ) -> Iterator[Any]:
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
) -> Iterator[Any]:
    cfg = job_config(systems, base, run_config)
    job_name = keys.JOB_NAME.get(cfg) or assets.application
    claim_job_instance(context, cfg, job_name)
    if run_config.overrides:
        context.log.info(f"job {job_name}: config overrides {run_config.overrides} {run_config.reason}".strip())
    settings = check_launch_config(context, cfg, job_name, run_config.overrides, settings)
    read, written = assets.read_streams(), assets.written_streams()
    try:
        inputs = observe_streams(cfg, read, with_lag=True)
        missing = sorted(sid for sid, o in inputs.items() if not o.exists)
        if missing:
            raise dg.Failure(
                description=f"job {job_name}: input stream(s) {', '.join(missing)} do not exist "
                f"({', '.join(f'{inputs[s].system}.{inputs[s].physical_name}' for s in missing)})"
            )
        for sid, obs in inputs.items():
            context.log_event(obs.to_event(assets.keys[sid], f"offsets seen by {job_name} before it started"))
        _create_outputs(cfg, written)
        before = observe_streams(cfg, written, with_lag=False)
    except SystemUnavailableError as exc:
        raise dg.Failure(description=f"job {job_name}: {exc}") from exc
    cfg = keep_coordinator_stream_config(context, cfg, job_name, run_config.overrides)

    bootstrap_inputs = [inputs[s.id] for s in read if s.bootstrap]
    for line in bootstrap.live_progress(cfg, bootstrap_inputs):
        context.log.info(f"job {job_name}: before the run, {line.line()}")
    started = time.monotonic()
    runner_md: dict[str, Any]
    if runner_factory is not None:
        runner, runner_md = runner_factory(cfg), {}
    else:
        runner, runner_md = runner_for(spark, cfg)
    watch = _Progress(cfg, written, before, bootstrap_inputs)
    follower = _follow_metrics(context, cfg, job_name)
    live = _LiveMaterializations(context, assets, cfg, read, written, before, job_name, follower, settings)
    context.log.info(f"job {job_name}: starting ({JobConfig(cfg).factory} runner)")
    try:
        outcome = JobSupervisor(context, runner, job_name, settings, watch.progress, live.emit).run()
    finally:
        if follower is not None:
            follower.stop()
    if outcome.error is not None:
        failed = outcome.error
        raise dg.Failure(description=f"job {job_name} failed: {type(failed).__name__}: {failed}") from failed
    result: JobResult | None = outcome.result
    if result is None:  # a runner returns a JobResult or raises; this is a runner bug
        raise dg.Failure(description=f"job {job_name}: its runner ended without a result")
    elapsed = results.elapsed_s(result, time.monotonic() - started)
    error = results.failure(result)
    processed = results.messages_per_stream(result)
    status = results.status(result)
    if error is not None:
        raise dg.Failure(
            description=f"job {job_name} failed: {error}",
            metadata={"job_status": status, "messages_processed": sum(processed.values())},
        )
    after = observe_streams(cfg, written, with_lag=False)
    job_md: dict[str, Any] = {
        "job_status": status,
        "job_elapsed_s": dg.MetadataValue.float(round(elapsed, 3)),
        "messages_processed": dg.MetadataValue.int(sum(processed.values())),
        "messages_processed_per_stream": dg.MetadataValue.json(processed),
        "runner": JobConfig(cfg).factory,
        **runner_md,
    }
    if outcome.stopped_by:
        job_md["stopped_by"] = outcome.stopped_by
    if outcome.model_changes:
        job_md["job_model_changes"] = dg.MetadataValue.json(
            [{"version": v, "changed": keys} for v, keys in outcome.model_changes]
        )
    final_metrics = JobMetrics.from_result(result)
    if final_metrics:
        job_md.update(_metrics_metadata(final_metrics))
        job_md["process_envelopes_per_s"] = dg.MetadataValue.float(
            round(final_metrics.process_envelopes / elapsed, 1) if elapsed > 0 else 0.0
        )
    spark_startup = results.spark_startup_s(result)
    if spark_startup is not None:
        job_md["spark_startup_s"] = dg.MetadataValue.float(round(spark_startup, 3))
    # the chooser also holds real-time streams to their start-time head (the restart guarantee)
    # and reports them beside the bootstrap streams: only a bootstrap stream is reported as one
    bootstrap_names = {f"{inputs[s.id].system}.{inputs[s.id].physical_name}" for s in read if s.bootstrap}
    boot = {name: entry for name, entry in bootstrap.final_bootstrap(result).items() if name in bootstrap_names}
    if boot:
        job_md["bootstrap"] = dg.MetadataValue.json(boot)
    finals = results.final_offsets(result)
    final_inputs = _observe_quietly(context, cfg, read, job_name)
    metrics_lag = final_metrics.lag_per_input(inputs.values())
    for sid, obs in inputs.items():
        progress = _input_progress(obs, processed, finals, assets.streams[sid].bootstrap)
        entry = boot.get(f"{obs.system}.{obs.physical_name}")
        if entry is not None:
            progress.update(bootstrap.final_metadata(entry))
            context.log.info(bootstrap.final_line(job_name, f"{obs.system}.{obs.physical_name}", entry))
        final = final_inputs.get(sid)
        if sid in metrics_lag:
            progress["lag"] = dg.MetadataValue.int(metrics_lag[sid])
        elif final is not None and final.lag is not None:
            progress["lag"] = dg.MetadataValue.int(sum(final.lag.values()))
        context.log_event(
            dg.AssetObservation(asset_key=assets.keys[sid], description=f"processed by {job_name}", metadata=progress)
        )
    context.log.info(
        f"job {job_name} {status} in {elapsed:.2f} s: {sum(processed.values())} messages processed"
        + (f" ({outcome.stopped_by})" if outcome.stopped_by else "")
    )
    commits = run_commits(s.metrics for s in (*result.earlier_summaries, *result.summaries))
    for stream in in_dependency_order(written):
        key = assets.keys[stream.id]
        md = {**_written_metadata(before[stream.id], after[stream.id]), **job_md}
        version = after[stream.id].data_version
        table = assets.tables.get(stream.id)
        if table is not None:
            table_md, table_version = table_materialization(
                cfg, table, commits.get(table.name, RunCommits()), context.log.warning
            )
            md.update(table_md)
            version = table_version or version
        yield dg.MaterializeResult(asset_key=key, metadata=md, data_version=dg.DataVersion(version))
        yield checks.lag_result(key, final_inputs, settings, metrics_lag)
        if bounded:
            yield checks.end_of_stream_result(key, status, outcome.stopped_by)


def in_dependency_order(streams: list[StreamInfo]) -> list[StreamInfo]:
    """Written streams upstream first (Dagster takes a multi-asset's outputs in dependency
    order: an intermediate stream before the output computed from it); ties by id."""
    by_id = {s.id: s for s in streams}
    sorter = graphlib.TopologicalSorter({s.id: {u for u in s.upstream if u in by_id and u != s.id} for s in streams})
    sorter.prepare()
    ordered: list[StreamInfo] = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready())
        ordered.extend(by_id[sid] for sid in ready)
        sorter.done(*ready)
    return ordered


def _follow_metrics(context: dg.AssetExecutionContext, cfg: Config, job_name: str) -> MetricsStreamFollower | None:
    """The job's metrics stream followed while it runs (live materializations read it); without a
    snapshot reporter, or when the stream cannot be read, live materializations go without."""
    try:
        return follow_job_metrics(cfg)
    except Exception as exc:  # noqa: BLE001 - metrics must not keep a job from running
        context.log.warning(f"job {job_name}: its metrics stream cannot be followed: {exc}")
        return None


def _metrics_metadata(metrics: JobMetrics) -> dict[str, Any]:
    """The containers' metrics Dagster plots across materializations (Samza's names)."""
    return {
        "process_envelopes": dg.MetadataValue.int(metrics.process_envelopes),
        "process_ns": dg.MetadataValue.float(metrics.process_ns),
    }


def _observe_quietly(
    context: dg.AssetExecutionContext, cfg: Config, streams: list[StreamInfo], job_name: str
) -> dict[str, StreamObservation]:
    """Inputs with their lag after the run; an observation failure is a warning, not a failed run."""
    try:
        return observe_streams(cfg, streams, with_lag=True)
    except Exception as exc:  # noqa: BLE001 - the job itself has finished
        context.log.warning(f"job {job_name}: cannot observe its inputs after the run: {exc}")
        return {}


class _LiveMaterializations:
    """While an unbounded job runs: an AssetMaterialization per written stream (messages written
    since the run started and in the last interval, throughput, lag per input), the ``consumer_lag``
    check's evaluation on it, and an observation per input (its lag), so the asset pages, their
    plots and their checks follow the live job. Every count is since the run started, across
    container restarts (a reconfiguration restarts the containers, whose own counters start
    again): the containers' ``process_envelopes`` beside ``messages_written`` never go back."""

    def __init__(
        self,
        context: dg.AssetExecutionContext,
        assets: StreamAssets,
        cfg: Config,
        read: list[StreamInfo],
        written: list[StreamInfo],
        before: dict[str, StreamObservation],
        job_name: str,
        metrics: MetricsStreamFollower | None = None,
        settings: DagsterSettings | None = None,
    ) -> None:
        self.context, self.assets, self.cfg = context, assets, cfg
        self.settings = settings or DagsterSettings.from_config(cfg)
        self.read, self.written, self.before, self.job_name = read, written, before, job_name
        self.last: dict[str, int] = {sid: 0 for sid in before}
        self.warned = False
        self.metrics = metrics
        self.last_processed = 0

    def emit(self, interval_s: float) -> None:
        try:
            now = observe_streams(self.cfg, self.written, with_lag=False)
            inputs = observe_streams(self.cfg, self.read, with_lag=True)
        except Exception as exc:  # noqa: BLE001 - a live report must not fail the job
            if not self.warned:
                self.context.log.warning(f"job {self.job_name}: live materialization skipped: {exc}")
                self.warned = True
            return
        lag = checks.lag_per_input(inputs)
        metrics_lag: dict[str, int] | None = None
        metrics_md: dict[str, Any] = {}
        if self.metrics is not None:
            live = JobMetrics.from_follower(self.metrics)
            if live:  # the containers' own numbers win: lag, throughput, process-ns
                metrics_lag = live.lag_per_input(inputs.values()) or None
                lag = metrics_lag or lag
                processed = live.process_envelopes
                recent, self.last_processed = processed - self.last_processed, processed
                metrics_md = {
                    **_metrics_metadata(live),
                    "process_envelopes_per_s": dg.MetadataValue.float(
                        round(max(0, recent) / interval_s, 1) if interval_s else 0.0
                    ),
                }
        lag_md = {f"lag_{sid}": dg.MetadataValue.int(n) for sid, n in lag.items()}
        for stream in in_dependency_order(self.written):
            md = _written_metadata(self.before[stream.id], now[stream.id])
            total = md["messages_written"].value
            recent = total - self.last[stream.id]
            self.last[stream.id] = total
            version = now[stream.id].data_version
            table = self.assets.tables.get(stream.id)
            if table is not None:
                table_md, table_version = table_materialization(self.cfg, table, None, self.context.log.warning)
                md.update(table_md)
                version = table_version or version
            self.context.log_event(
                dg.AssetMaterialization(
                    asset_key=self.assets.keys[stream.id],
                    description=f"written by the live job {self.job_name}",
                    metadata={
                        **md,
                        "throughput_msgs_per_s": dg.MetadataValue.float(
                            round(recent / interval_s, 1) if interval_s else 0.0
                        ),
                        "lag": dg.MetadataValue.int(sum(lag.values())),
                        **lag_md,
                        **metrics_md,
                        "job_status": "running",
                    },
                    tags={DATA_VERSION_TAG: version},
                )
            )
            # the check as of now: without it the live run's check reads "not evaluated" until
            # the run ends, while the sensor's evaluations pile up in its history
            self.context.log_event(
                checks.lag_evaluation(self.assets.keys[stream.id], inputs, self.settings, metrics_lag)
            )
        for sid, obs in inputs.items():
            self.context.log_event(obs.to_event(self.assets.keys[sid], f"lag of the live job {self.job_name}"))


class _Progress:
    """What a progress line says: messages written so far, and how far each bootstrap stream is."""

    def __init__(
        self,
        cfg: Config,
        written: list[StreamInfo],
        before: dict[str, StreamObservation],
        bootstrap_inputs: list[StreamObservation],
    ) -> None:
        self.cfg, self.written, self.before = cfg, written, before
        self.bootstrap_inputs = bootstrap_inputs
        self.at_head: set[str] = set()

    def progress(self) -> tuple[list[str], int]:
        """The line's parts, and a mark that grows while the job makes progress."""
        line, mark = _written_progress(self.cfg, self.written, self.before)
        out = [line]
        try:
            progress = bootstrap.live_progress(self.cfg, self.bootstrap_inputs)
        except Exception as exc:  # noqa: BLE001 - a progress line must not fail the job
            return [*out, f"(bootstrap progress unavailable: {exc})"], mark
        for p in progress:
            mark += p.done
            if p.stream in self.at_head:
                continue
            if p.at_head:
                self.at_head.add(p.stream)  # said once; from then on it is ordinary traffic
            out.append(p.line())
        return out, mark


def _written_progress(cfg: Config, written: list[StreamInfo], before: dict[str, StreamObservation]) -> tuple[str, int]:
    """ "written: <stream> +n, ..." and the messages written in all."""
    try:
        now = observe_streams(cfg, written, with_lag=False)
    except Exception as exc:  # noqa: BLE001 - a progress line must not fail the job
        return f"(progress unavailable: {exc})", -1
    parts, total = [], 0
    for sid, obs in sorted(now.items()):
        start = before[sid].upcoming()
        n = sum(n - start.get(p, 0) for p, n in obs.upcoming().items())
        total += n
        parts.append(f"{sid} +{n}")
    return "written: " + (", ".join(parts) or "nothing yet"), total


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


def _written_metadata(before: StreamObservation, after: StreamObservation) -> dict[str, Any]:
    start = before.upcoming()
    md: dict[str, Any] = {
        "partitions": dg.MetadataValue.int(len(after.partitions)),
        "messages": dg.MetadataValue.int(after.messages),
    }
    total = 0
    for p, upcoming in sorted(after.upcoming().items()):
        written = upcoming - start.get(p, 0)
        total += written
        md[f"partition_{p}_upcoming_offset"] = dg.MetadataValue.int(upcoming)
        md[f"partition_{p}_messages_written"] = dg.MetadataValue.int(written)
    md["messages_written"] = dg.MetadataValue.int(total)
    return md


def _input_progress(
    obs: StreamObservation, processed: dict[str, int], finals: dict[tuple[str, int], str], bootstrap: bool
) -> dict[str, Any]:
    """Messages of the stream this run processed and, against the messages there were when it
    started, how far it got (a bootstrap stream's progress)."""
    name = f"{obs.system}.{obs.physical_name}"
    available = caught_up = 0
    for p, m in obs.partitions.items():
        oldest, upcoming = offset_int(m.oldest_offset), offset_int(m.upcoming_offset)
        available += upcoming - oldest
        done = finals.get((name, p))
        if done is not None:
            caught_up += max(0, min(offset_int(done) + 1, upcoming) - oldest)
    md: dict[str, Any] = {
        "processed_by_run": dg.MetadataValue.int(processed.get(name, 0)),
        "messages_at_start": dg.MetadataValue.int(available),
        "checkpointed_through": dg.MetadataValue.int(caught_up),
    }
    md["bootstrap_progress" if bootstrap else "progress"] = dg.MetadataValue.float(
        round(caught_up / available, 4) if available else 1.0
    )
    return md
