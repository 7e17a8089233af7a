"""What the op reports while a Samza job runs: the progress line and the live materializations.

:class:`~.supervision.JobSupervisor` calls both from the op's thread on its timers; neither may
fail the job — a stream that cannot be observed for a moment costs one line of the run log, not
the run. Everything is counted since the run started (the observations taken before it), so a
reconfiguration that restarts the containers does not set a count back.
"""

from __future__ import annotations

import dagster as dg

from samza_dagster.cli.progress import JobWatch, LivePositions, LiveStalls, RecentRate
from samza_dagster.config import Config
from samza_dagster.metrics.stream_reader import MetricsStreamFollower
from samza_dagster.orchestration import bootstrap, checks
from samza_dagster.orchestration.assets import StreamAssets, in_dependency_order
from samza_dagster.orchestration.job_metrics import JobMetrics, follow_job_metrics
from samza_dagster.orchestration.job_report import WrittenSince, metrics_metadata
from samza_dagster.orchestration.metadata import Metadata
from samza_dagster.orchestration.observation import DATA_VERSION_TAG, StreamObservation, observe_streams
from samza_dagster.orchestration.settings import DagsterSettings
from samza_dagster.orchestration.tables import table_materialization
from samza_dagster.planner.plan import StreamInfo
from samza_dagster.runtime.provision import DeclaredStream


def follow_metrics(context: dg.AssetExecutionContext, cfg: Config, job_name: str) -> MetricsStreamFollower | None:
    """The job's metrics stream followed while it runs (live materializations read it); without a
    snapshot reporter, or when the stream cannot be read, live materializations go without."""
    try:
        return follow_job_metrics(cfg)
    except Exception as exc:  # noqa: BLE001 - metrics must not keep a job from running
        context.log.warning(f"job {job_name}: its metrics stream cannot be followed: {exc}")
        return None


class LiveMaterializations:
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
        """One round of live events; ``interval_s`` since the last one (for the rates)."""
        try:
            now = observe_streams(self.cfg, self.written, with_lag=False)
            inputs = observe_streams(self.cfg, self.read, with_lag=True)
        except Exception as exc:  # noqa: BLE001 - a live report must not fail the job
            if not self.warned:
                self.context.log.warning(f"job {self.job_name}: live materialization skipped: {exc}")
                self.warned = True
            return
        metrics_lag, metrics_md = self._container_metrics(inputs, interval_s)
        lag = metrics_lag or checks.lag_per_input(inputs)
        lag_md: Metadata = {f"lag_{sid}": dg.MetadataValue.int(n) for sid, n in lag.items()}
        for stream in in_dependency_order(self.written):
            key = self.assets.keys[stream.id]
            self.context.log_event(
                self._materialization(
                    stream,
                    now[stream.id],
                    interval_s,
                    {
                        "lag": dg.MetadataValue.int(sum(lag.values())),
                        **lag_md,
                        **metrics_md,
                        "job_status": "running",
                    },
                )
            )
            # the check as of now: without it the live run's check reads "not evaluated" until
            # the run ends, while the sensor's evaluations pile up in its history
            self.context.log_event(checks.lag_evaluation(key, inputs, self.settings, metrics_lag))
        for sid, obs in inputs.items():
            self.context.log_event(obs.to_event(self.assets.keys[sid], f"lag of the live job {self.job_name}"))

    def _container_metrics(
        self, inputs: dict[str, StreamObservation], interval_s: float
    ) -> tuple[dict[str, int] | None, Metadata]:
        """The containers' own numbers when the job reports metrics — they win over the offsets
        observed from outside: lag per input (None when they say nothing of it), throughput
        over the interval, process-ns."""
        if self.metrics is None:
            return None, {}
        live = JobMetrics.from_follower(self.metrics)
        if not live:
            return None, {}
        processed = live.process_envelopes
        recent, self.last_processed = processed - self.last_processed, processed
        return live.lag_per_input(inputs.values()) or None, {
            **metrics_metadata(live),
            "process_envelopes_per_s": dg.MetadataValue.float(
                round(max(0, recent) / interval_s, 1) if interval_s else 0.0
            ),
        }

    def _materialization(
        self, stream: StreamInfo, now: StreamObservation, interval_s: float, extra: Metadata
    ) -> dg.AssetMaterialization:
        """A written stream's live materialization: written since the start and in the interval
        (throughput), its table's state when it is an Iceberg table, and ``extra``."""
        written = WrittenSince.of(self.before[stream.id], now)
        md = written.metadata()
        recent = written.total - self.last[stream.id]
        self.last[stream.id] = written.total
        version = now.data_version
        table = self.assets.tables.get(stream.id)
        if table is not None:
            table_md, table_version = table_materialization(self.cfg, table, None, self.context.log.warning)
            md.update(table_md)
            version = table_version or version
        return dg.AssetMaterialization(
            asset_key=self.assets.keys[stream.id],
            description=f"written by the live job {self.job_name}",
            metadata={
                **md,
                "throughput_msgs_per_s": dg.MetadataValue.float(round(recent / interval_s, 1) if interval_s else 0.0),
                **extra,
            },
            tags={DATA_VERSION_TAG: version},
        )


class ProgressLine:
    """What a progress line says: messages processed (the recent rate) and the lag, as the CLI's
    progress line counts them (cli/progress.py: checkpoints and the runner's live positions), the
    messages written so far, and how far each bootstrap stream is."""

    def __init__(
        self,
        cfg: Config,
        written: list[StreamInfo],
        before: dict[str, StreamObservation],
        bootstrap_inputs: list[StreamObservation],
        read: list[StreamInfo] | None = None,
        live: LivePositions | None = None,
        stalls: LiveStalls | None = None,
    ) -> None:
        self.cfg, self.written, self.before = cfg, written, before
        self.bootstrap_inputs = bootstrap_inputs
        self.at_head: set[str] = set()
        self._streams = [
            *(DeclaredStream(s.id, s.system, s.physical_name, s.partitions, reads=True) for s in read or []),
            *(DeclaredStream(s.id, s.system, s.physical_name, s.partitions) for s in written),
        ]
        self._live = live
        self._stalls = stalls
        #: made at the first line, once the job runs: it reads the checkpoints, which must not
        #: wait on a crashed container's transaction before the new one has fenced it
        self._watch: JobWatch | None = None
        self._rate = RecentRate()

    def progress(self) -> tuple[list[str], int]:
        """The line's parts, and a mark that grows while the job makes progress."""
        line, mark = written_progress(self.cfg, self.written, self.before)
        out = [line]
        processed = self._processed()
        if processed is not None:
            out.insert(0, processed[0])
            mark += processed[1]
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

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()

    def _processed(self) -> tuple[str, int] | None:
        """``"<n> processed (<recent rate>), lag <n>"`` and the processed count; None when it
        cannot be observed (a progress line must not fail the job)."""
        if not any(s.reads for s in self._streams):
            return None
        try:
            if self._watch is None:
                self._watch = JobWatch(self.cfg, self._streams, self._live, self._stalls)
            sample = self._rate(self._watch.sample())
        except Exception:  # noqa: BLE001 - see the docstring
            return None
        line = f"{sample.processed:,} processed ({sample.rate}), lag {sample.lag:,}{sample.stall_text}"
        return line, sample.processed


def written_progress(cfg: Config, written: list[StreamInfo], before: dict[str, StreamObservation]) -> tuple[str, int]:
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
