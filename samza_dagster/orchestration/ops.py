"""The op that runs a Samza job: a multi-asset materializing the streams the job writes.

It resolves the job's config (the application's .properties, the deployment's systems from the
``samza_systems`` resource, then the run's ``overrides`` — what a reconfiguration run from the
coordinator-stream sensor sets), observes the inputs (one batched offset lookup per system; an
unreachable Kafka fails here, fast, naming its address), creates missing output streams, runs
the job through ``samza_dagster.runtime.run_job`` and returns when it stops — for a bounded job,
when every input reached end-of-stream. A ``job.factory.class=spark`` job (the product default)
runs on the ``spark`` resource's session (see :func:`runner_for`). While it runs, a progress
line is logged every ``progress_interval_s``: messages written so far and, for each bootstrap
stream, how much of what it held at the start the job has checkpointed (until it reaches its
head). When the job stops, the chooser's bootstrap metrics (reached head, time to head) are
logged and added to the bootstrap stream's observation and the materializations' metadata (see
:mod:`.bootstrap`). A failed container fails the run with the container's error.
"""


import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import dagster as dg

from samza_dagster.config import Config
from samza_dagster.config.job_config import JobConfig
from samza_dagster.orchestration import bootstrap, results
from samza_dagster.orchestration.assets import StreamAssets
from samza_dagster.orchestration.observation import StreamObservation, observe_streams, system_admin
from samza_dagster.planner.plan import StreamInfo
from samza_dagster.system.errors import SystemUnavailableError
from samza_dagster.system.model import StreamSpec

SYSTEMS_RESOURCE_KEY = "samza_systems"
SPARK_RESOURCE_KEY = "spark"
Runner = Callable[[Config], Any]


class SamzaJobRunConfig(dg.Config):
    """Run config of a Samza job op (launchpad, or a sensor's RunRequest)."""

    overrides: dict[str, str] = {}
    reason: str = ""


def runner_for(context: Any, config: Config) -> Runner:
    """``samza_dagster.runtime.run_job`` with what the run's resources offer: a job whose
    ``job.factory.class`` is ``spark`` (the product default) runs on the ``spark`` resource's
    session, so every Spark job of one Dagster process shares one session (the spark runner
    starts its own only when no resource is bound)."""
    from samza_dagster.runtime import run_job

    if JobConfig(config).factory == "spark":
        spark = getattr(context.resources, SPARK_RESOURCE_KEY, None)
        if spark is not None:
            session = spark.get_session()
            return lambda cfg: run_job(cfg, spark=session)
    return run_job


def op_name(assets: StreamAssets) -> str:
    return f"{assets.group_name}_samza_job"


def samza_job_asset(
    assets: StreamAssets,
    config: Config,
    *,
    name: str | None = None,
    runner: Runner | None = None,
    progress_interval_s: float = 5.0,
) -> dg.AssetsDefinition:
    """A multi-asset over the written streams of ``assets`` that runs the job ``config`` describes."""
    base = config
    if not assets.written_specs:
        raise ValueError(
            f"application {assets.application!r} writes no stream the plan knows: declare the outputs "
            "of a low-level task (declared_outputs) so the job has assets to materialize"
        )

    @dg.multi_asset(
        name=name or op_name(assets),
        specs=assets.written_specs,
        required_resource_keys=required_resource_keys(config),
        description=f"Runs the Samza job {config.get_str('job.name')} until it stops "
        f"({JobConfig(config).factory} runner)",
        op_tags={"samza/job": config.get_str("job.name") or assets.application},
    )
    def _samza_job(context: dg.AssetExecutionContext, config: SamzaJobRunConfig) -> Iterator[dg.MaterializeResult]:
        yield from run_samza_job(context, assets, base, config, runner, progress_interval_s)

    return _samza_job


def required_resource_keys(config: Config) -> set[str]:
    """``samza_systems`` always; ``spark`` too when the job runs on the spark runner."""
    keys = {SYSTEMS_RESOURCE_KEY}
    if JobConfig(config).factory == "spark":
        keys.add(SPARK_RESOURCE_KEY)
    return keys


def job_config(context: Any, base: Config, run_config: SamzaJobRunConfig) -> Config:
    systems = getattr(context.resources, SYSTEMS_RESOURCE_KEY, None)
    cfg = systems.apply(base) if systems is not None else base
    return cfg.with_overrides(run_config.overrides) if run_config.overrides else cfg


def run_samza_job(
    context: Any,
    assets: StreamAssets,
    base: Config,
    run_config: SamzaJobRunConfig,
    runner: Runner | None,
    progress_interval_s: float,
) -> Iterator[dg.MaterializeResult]:
    cfg = job_config(context, base, run_config)
    runner = runner or runner_for(context, cfg)
    job_name = cfg.get_str("job.name") or assets.application
    if run_config.overrides:
        context.log.info(f"job {job_name}: config overrides {run_config.overrides} {run_config.reason}".strip())
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

    bootstrap_inputs = [inputs[s.id] for s in read if s.bootstrap]
    for line in bootstrap.live_progress(cfg, bootstrap_inputs):
        context.log.info(f"job {job_name}: before the run, {line.line()}")
    started = time.monotonic()
    watch = _Progress(cfg, written, before, bootstrap_inputs)
    result = _run_with_progress(context, cfg, job_name, runner, watch, started, progress_interval_s)
    elapsed = results.elapsed_s(result, time.monotonic() - started)
    error = results.failure(result)
    processed = results.messages_per_stream(result)
    if error is not None:
        raise dg.Failure(
            description=f"job {job_name} failed: {error}",
            metadata={"job_status": results.status(result), "messages_processed": sum(processed.values())},
        )
    after = observe_streams(cfg, written, with_lag=False)
    job_md = {
        "job_status": results.status(result),
        "job_elapsed_s": dg.MetadataValue.float(round(elapsed, 3)),
        "messages_processed": dg.MetadataValue.int(sum(processed.values())),
        "messages_processed_per_stream": dg.MetadataValue.json(processed),
        "runner": JobConfig(cfg).factory,
    }
    spark_startup = getattr(result, "spark_startup_s", None)
    if isinstance(spark_startup, int | float):
        job_md["spark_startup_s"] = dg.MetadataValue.float(round(float(spark_startup), 3))
    boot = bootstrap.final_bootstrap(result)
    if boot:
        job_md["bootstrap"] = dg.MetadataValue.json(boot)
    finals = results.final_offsets(result)
    for sid, obs in inputs.items():
        progress = _input_progress(obs, processed, finals, assets.streams[sid].bootstrap)
        entry = boot.get(f"{obs.system}.{obs.physical_name}")
        if entry is not None:
            progress.update(bootstrap.final_metadata(entry))
            context.log.info(bootstrap.final_line(job_name, f"{obs.system}.{obs.physical_name}", entry))
        context.log_event(
            dg.AssetObservation(asset_key=assets.keys[sid], description=f"processed by {job_name}", metadata=progress)
        )
    context.log.info(
        f"job {job_name} {results.status(result)} in {elapsed:.2f} s: "
        f"{sum(processed.values())} messages processed"
    )
    for stream in sorted(written, key=lambda s: s.id):
        yield dg.MaterializeResult(
            asset_key=assets.keys[stream.id],
            metadata={**_written_metadata(before[stream.id], after[stream.id]), **job_md},
            data_version=dg.DataVersion(after[stream.id].data_version),
        )


class _Progress:
    """What a progress line says: messages written so far, and how far each bootstrap stream is."""

    def __init__(
        self, cfg: Config, written: list[StreamInfo], before: dict[str, StreamObservation],
        bootstrap_inputs: list[StreamObservation],
    ) -> None:
        self.cfg, self.written, self.before = cfg, written, before
        self.bootstrap_inputs = bootstrap_inputs
        self.at_head: set[str] = set()

    def lines(self) -> list[str]:
        out = [_written_progress(self.cfg, self.written, self.before)]
        try:
            progress = bootstrap.live_progress(self.cfg, self.bootstrap_inputs)
        except Exception as exc:  # noqa: BLE001 - a progress line must not fail the job
            return [*out, f"(bootstrap progress unavailable: {exc})"]
        for p in progress:
            if p.stream in self.at_head:
                continue
            if p.at_head:
                self.at_head.add(p.stream)  # said once; from then on it is ordinary traffic
            out.append(p.line())
        return out


def _run_with_progress(
    context: Any,
    cfg: Config,
    job_name: str,
    runner: Runner,
    watch: _Progress,
    started: float,
    interval_s: float,
) -> Any:
    """Run the job in a worker thread; this thread logs progress until it stops."""
    outcome: dict[str, Any] = {}

    def _target() -> None:
        try:
            outcome["result"] = runner(cfg)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the op's thread
            outcome["error"] = exc

    worker = threading.Thread(target=_target, name=f"samza-job-{job_name}", daemon=True)
    context.log.info(f"job {job_name}: starting ({cfg.get_str('job.factory.class') or 'default'} runner)")
    worker.start()
    while True:
        worker.join(interval_s)
        if not worker.is_alive():
            break
        context.log.info(f"job {job_name}: running for {time.monotonic() - started:.0f} s; {'; '.join(watch.lines())}")
    if "error" in outcome:
        exc = outcome["error"]
        raise dg.Failure(description=f"job {job_name} failed: {type(exc).__name__}: {exc}") from exc
    return outcome.get("result")


def _written_progress(cfg: Config, written: list[StreamInfo], before: dict[str, StreamObservation]) -> str:
    try:
        now = observe_streams(cfg, written, with_lag=False)
    except Exception as exc:  # noqa: BLE001 - a progress line must not fail the job
        return f"(progress unavailable: {exc})"
    parts = []
    for sid, obs in sorted(now.items()):
        start = before[sid].upcoming()
        parts.append(f"{sid} +{sum(n - start.get(p, 0) for p, n in obs.upcoming().items())}")
    return "written: " + (", ".join(parts) or "nothing yet")


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
        oldest, upcoming = int(m.oldest_offset), int(m.upcoming_offset)
        available += upcoming - oldest
        done = finals.get((name, p))
        if done is not None:
            caught_up += max(0, min(int(done) + 1, upcoming) - oldest)
    md: dict[str, Any] = {
        "processed_by_run": dg.MetadataValue.int(processed.get(name, 0)),
        "messages_at_start": dg.MetadataValue.int(available),
        "checkpointed_through": dg.MetadataValue.int(caught_up),
    }
    md["bootstrap_progress" if bootstrap else "progress"] = dg.MetadataValue.float(
        round(caught_up / available, 4) if available else 1.0
    )
    return md
