"""Sensors: reconfiguration from the coordinator stream, observation of input streams, and the
record of a failed Samza job on its assets.

``coordinator_stream_sensor`` keeps the coordinator stream's offset as its cursor. A change is a
set-config (or delete) written by anyone but the job itself (see :mod:`.coordinator_changes`)
that changes the job's effective configuration — its deployed config (.properties and the
``samza_systems`` resource, a :class:`SamzaSystemsResource`) overlaid with the stream. For a change:

* if a run of the job is live (queued, starting or running), no run is requested: the live
  run's job coordinator sees the change within ``job.coordinator.monitor.interval.ms`` and
  restarts the containers on the new JobModel. The sensor records an observation on the job's
  output assets naming the changed keys, the offset and the run that applies them;
* otherwise it requests one run with the stream's values as overrides; the run key is the job
  and the offset of the change, so the same change never launches twice.

Enabling the sensor takes the stream as it stands as the baseline (the first tick sets the
cursor to the head and requests nothing): a running job's own writes are no change, and a
change made before the sensor was on was either applied by a run or is applied at the next
launch. When the stream does not exist yet, the cursor starts at its beginning, so the first
change written to a new stream is seen. A read failure logs one line naming the stream and is
retried at the next tick.
"""

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

import dagster as dg

from samza_dagster.config import Config
from samza_dagster.coordinator.stream.reader_writer import CoordinatorStreamLocation, CoordinatorStreamReader
from samza_dagster.orchestration.assets import StreamAssets
from samza_dagster.orchestration.checks import lag_evaluation, lag_per_input
from samza_dagster.orchestration.coordinator_changes import ConfigChanges, Messages, changes_after
from samza_dagster.orchestration.observation import observe_streams
from samza_dagster.orchestration.resources import SamzaSystemsResource
from samza_dagster.orchestration.settings import DagsterSettings
from samza_dagster.orchestration.single_run import JOB_INSTANCE_TAG, LIVE_STATUSES, LiveRun, job_instance, live_runs
from samza_dagster.system.errors import StreamNotFoundError

if TYPE_CHECKING:  # Dagster's own name for an asset job before Definitions resolve it
    from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

OFFSET_TAG = "samza/coordinator-offset"
CHANGED_TAG = "samza/changed-keys"
#: the cursor of a sensor whose job had no coordinator stream yet: read it from its beginning
FROM_START = "start"
#: what a sensor tick returns: events, run requests and the new cursor, or why it skipped
SensorOutcome = dg.SensorResult | dg.SkipReason
#: the Dagster job a sensor launches or watches (an asset job is resolved when Definitions are built)
SensorJob: TypeAlias = "dg.JobDefinition | UnresolvedAssetJobDefinition"


def coordinator_stream_sensor(
    job_name: str,
    config: Config,
    *,
    job: SensorJob,
    op_name: str,
    assets: StreamAssets | None = None,
    name: str | None = None,
    minimum_interval_seconds: int = 30,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
) -> dg.SensorDefinition:
    """A sensor reconfiguring the Samza job ``job_name``: ``job`` is the Dagster job running it,
    whose op is ``op_name`` with :class:`SamzaJobRunConfig`; ``assets`` (its stream assets) get
    the observation of a change a live run applies."""
    watch = CoordinatorStreamWatch(job_name, op_name, assets)

    @dg.sensor(
        name=name or f"{_identifier(job_name)}_coordinator_stream_sensor",
        job=job,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        description=f"Reconfigures {job_name} when its coordinator stream changes its config: the live run "
        "applies the change, or one run is launched when none is live",
    )
    def _sensor(context: dg.SensorEvaluationContext, samza_systems: SamzaSystemsResource) -> SensorOutcome:
        return watch.tick(context, samza_systems.apply(config))

    return _sensor


@dataclass(frozen=True, slots=True)
class _StreamRead:
    """The coordinator stream as one tick read it: all of it (compacted: the state before the
    cursor is needed to tell a change from a repeat), the offset after it, and how its system
    orders offsets."""

    messages: Messages
    next_offset: str
    compare: Callable[[str, str], int]


@dataclass(frozen=True, slots=True)
class CoordinatorStreamWatch:
    """One tick of :func:`coordinator_stream_sensor`, in its steps: read the stream
    (:meth:`read`), find the changes past the cursor (:meth:`changes`), then either record that
    the live run applies them (:meth:`applied_by_live_run`) or launch a run with them
    (:meth:`launch`). A class rather than one closure so each step is named and testable."""

    job_name: str
    op_name: str
    #: the job's stream assets: its written streams get the observation of a change a live run applies
    assets: StreamAssets | None

    def tick(self, context: dg.SensorEvaluationContext, cfg: Config) -> SensorOutcome:
        cursor = context.cursor or None
        read = self.read(context, cfg, cursor)
        if not isinstance(read, _StreamRead):
            return read
        changes = self.changes(read, cursor, cfg)
        if not isinstance(changes, ConfigChanges):
            return changes
        instance_id = job_instance(cfg)
        # a run that is stopping applies nothing more: the change is launched (the run queue holds
        # the new run until the stopping one has ended)
        live = [
            r
            for r in live_runs(context.instance, instance_id, LIVE_STATUSES)
            if r.status is not dg.DagsterRunStatus.CANCELING
        ]
        if live:
            return self.applied_by_live_run(context, live[0], changes, read.next_offset)
        return self.launch(context, instance_id, changes, read.next_offset)

    def read(self, context: dg.SensorEvaluationContext, cfg: Config, cursor: str | None) -> _StreamRead | SensorOutcome:
        """The stream, or why this tick reads nothing: the stream does not exist yet (the cursor
        then starts at its beginning), or cannot be read (one warning; the next tick retries)."""
        try:
            with CoordinatorStreamReader(cfg) as reader:
                messages, next_offset = reader.read(None)  # the whole (compacted) stream: the state before the cursor
                return _StreamRead(messages, next_offset, reader.admin.offset_comparator)
        except StreamNotFoundError:
            return dg.SensorResult(
                skip_reason=f"job {self.job_name} has no coordinator stream yet; its first change will be read from "
                "the start",
                cursor=cursor or FROM_START,
            )
        except Exception as exc:  # noqa: BLE001 - a sensor must survive a bad or unreachable stream
            where = CoordinatorStreamLocation.from_config(cfg)
            context.log.warning(
                f"cannot read the coordinator stream {where.system}.{where.stream} of job {self.job_name}: "
                f"{type(exc).__name__}: {exc}; retrying at the next tick"
            )
            return dg.SkipReason(f"coordinator stream of {self.job_name} unreadable: {exc}")

    def changes(self, read: _StreamRead, cursor: str | None, cfg: Config) -> ConfigChanges | SensorOutcome:
        """The config changes written after the cursor, or why there are none: the first tick
        takes the stream as it stands as the baseline; nothing new; or nothing that changes the
        job's effective config."""
        if cursor is None:
            return dg.SensorResult(
                skip_reason=f"baseline: the coordinator stream of {self.job_name} up to offset {read.next_offset}; "
                "changes after it reconfigure the job",
                cursor=read.next_offset,
            )
        start = None if cursor == FROM_START else cursor
        if start is not None and read.compare(read.next_offset, start) <= 0:
            return dg.SkipReason(f"no new coordinator stream messages after offset {start}")
        changes = changes_after(read.messages, start, cfg.to_dict(), read.compare)
        if not changes.changed or changes.trigger is None:
            return dg.SensorResult(
                skip_reason=f"messages up to offset {read.next_offset} leave the config of {self.job_name} unchanged",
                cursor=read.next_offset,
            )
        return changes

    def applied_by_live_run(
        self, context: dg.SensorEvaluationContext, run: LiveRun, changes: ConfigChanges, next_offset: str
    ) -> dg.SensorResult:
        """A live run's job coordinator applies the change itself (it restarts the containers on
        the new JobModel): no run is launched, the change is recorded on the written streams."""
        keys = ", ".join(changes.changed)
        context.log.info(
            f"job {self.job_name}: coordinator stream changed {keys} at offset {changes.trigger}; "
            f"the live {run.describe()} applies it (its job coordinator restarts the containers on the new "
            "JobModel) — no new run"
        )
        events = [
            dg.AssetObservation(
                asset_key=key,
                description=f"configuration change at coordinator stream offset {changes.trigger}, applied by "
                f"the live run {run.run_id}",
                metadata={
                    "coordinator_offset": changes.trigger,
                    "changed_keys": keys,
                    "new_values": dg.MetadataValue.json(changes.values),
                    "applied_by_run": dg.MetadataValue.dagster_run(run.run_id),
                },
            )
            for key in (self.assets.written_keys if self.assets is not None else [])
        ]
        # a tick without a run request shows its skip reason: what it applied, not Dagster's
        # "Sensor function returned an empty result"
        applied = (
            f"{keys} changed at coordinator stream offset {changes.trigger}: applied by the live run {run.run_id} "
            "(its job coordinator restarts the containers on the new JobModel), no new run"
        )
        return dg.SensorResult(asset_events=events, cursor=next_offset, skip_reason=applied)

    def launch(
        self, context: dg.SensorEvaluationContext, instance_id: str, changes: ConfigChanges, next_offset: str
    ) -> dg.SensorResult:
        """No run is live: one run with the stream's values as overrides, keyed by the job and the
        change's offset so the same change never launches twice."""
        keys = ", ".join(changes.changed)
        context.log.info(
            f"job {self.job_name}: config changed at offset {changes.trigger}: {keys}; no live run, launching one"
        )
        request = dg.RunRequest(
            run_key=f"{instance_id}@{changes.trigger}",
            run_config={
                "ops": {
                    self.op_name: {
                        "config": {
                            "overrides": changes.overrides,
                            "reason": f"(coordinator stream offset {changes.trigger}; changed {keys})",
                        }
                    }
                }
            },
            tags={
                OFFSET_TAG: str(changes.trigger),
                CHANGED_TAG: keys.replace(" ", "")[:1000],
                "samza/job": self.job_name,
                JOB_INSTANCE_TAG: instance_id,
            },
        )
        return dg.SensorResult(run_requests=[request], cursor=next_offset)


def stream_observation_sensor(
    assets: StreamAssets,
    config: Config,
    *,
    settings: DagsterSettings | None = None,
    name: str | None = None,
    minimum_interval_seconds: int = 60,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.RUNNING,
) -> dg.SensorDefinition:
    """Observes the streams an application reads (newest offsets as data version, lag behind
    its checkpoints) and reports an observation for each stream whose data version changed, with
    the ``consumer_lag`` check of the streams the job writes evaluated on the same lag — unless a
    run of the job is live: that run evaluates the check itself when it ends, and Dagster shows a
    check's latest execution only if it is newer than the asset's latest materialization, so an
    evaluation of the sensor's made during the run hid the run's own (grey "Not evaluated"). On by
    default: the input assets' observations are what the UI promises (one batched offset lookup
    per system a minute, and an observation only when a stream changed)."""
    settings = settings or DagsterSettings.from_config(config)

    @dg.sensor(
        name=name or f"{assets.group_name}_stream_observation_sensor",
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        description=f"Observes the input streams of {assets.application} and checks the job's consumer lag",
    )
    def _sensor(
        context: dg.SensorEvaluationContext, samza_systems: SamzaSystemsResource
    ) -> dg.SensorResult | dg.SkipReason:
        cfg = samza_systems.apply(config)
        try:
            observed = observe_streams(cfg, assets.read_streams(), with_lag=True)
        except Exception as exc:  # noqa: BLE001 - report and try again next tick
            context.log.warning(f"cannot observe the streams of {assets.application}: {exc}")
            return dg.SkipReason(f"observation failed: {exc}")
        seen: Mapping[str, str] = json.loads(context.cursor) if context.cursor else {}
        versions = {sid: obs.data_version for sid, obs in observed.items()}
        lag = lag_per_input(observed)
        versions["lag"] = json.dumps(lag, sort_keys=True)
        changed = [sid for sid in sorted(observed) if seen.get(sid) != versions[sid]]
        if not changed and seen.get("lag") == versions["lag"]:
            return dg.SkipReason("no new messages in the input streams and no change of the job's lag")
        events: list[dg.AssetObservation | dg.AssetCheckEvaluation] = [
            observed[sid].to_event(assets.keys[sid]) for sid in changed
        ]
        if lag and not live_runs(context.instance, job_instance(cfg)):
            events.extend(
                lag_evaluation(key, observed, settings, instance=context.instance) for key in assets.written_keys
            )
        # a tick that requests no run shows as skipped; its reason says what it recorded (without
        # one the UI says "Sensor function returned an empty result" over the observations)
        recorded = f"observed new messages in {', '.join(changed)}" if changed else "the job's lag changed"
        return dg.SensorResult(asset_events=events, cursor=json.dumps(versions, sort_keys=True), skip_reason=recorded)

    return _sensor


def _identifier(name: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


def samza_job_failure_sensor(
    assets: StreamAssets,
    *,
    job: SensorJob,
    name: str | None = None,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.RUNNING,
) -> dg.SensorDefinition:
    """Records a failed run of the Samza job on the streams it writes: an observation with the
    run's error, so the asset page shows that (and why) the stream stopped being written."""

    @dg.run_failure_sensor(
        name=name or f"{assets.group_name}_job_failure_sensor",
        monitored_jobs=[job],
        default_status=default_status,
        description=f"Records a failed run of the Samza job of {assets.application} on its output streams",
    )
    def _sensor(context: dg.RunFailureSensorContext) -> None:
        error = context.failure_event.message or "the run failed"
        step_errors = [
            e.step_failure_data.error.message.strip()
            for e in context.get_step_failure_events()
            if e.step_failure_data is not None and e.step_failure_data.error is not None
        ]
        if step_errors:
            error = step_errors[0].splitlines()[0]
        for key in assets.written_keys:
            context.instance.report_runless_asset_event(
                dg.AssetObservation(
                    asset_key=key,
                    description=f"the Samza job failed in run {context.dagster_run.run_id}",
                    metadata={
                        "job_status": "failed",
                        "error": error,
                        "failed_run": dg.MetadataValue.dagster_run(context.dagster_run.run_id),
                    },
                )
            )

    return _sensor
