"""Reprocessing as a Dagster backfill: re-send one day of past records into a job's batch stream.

Samza reprocesses by re-sending past input into a *batch* input stream that the job reads at a
lower priority than its real-time input (``task.chooser.priorities.<system>.<stream>``), so
live traffic is never starved while the past is worked through. Here each day is one partition
of a daily-partitioned asset; materializing a partition is a Spark job that reads the source
stream with ``spark.read.format("samza")``, keeps the records whose time falls in that day and
re-sends them with :func:`samza_dagster.spark.resend_to_batch_stream`. So:

* the **daily schedule** re-sends yesterday (the partition of the last completed day), and
* a **backfill** over a date range is launched from the UI (the asset or its job → "Materialize"
  / "Launch backfill" → pick the dates): one run per day.

Usage (what ``jobs/<app>/definitions.py`` writes)::

    from samza_dagster.orchestration import application_definitions, reprocessing_backfill

    def definitions():
        backfill = reprocessing_backfill(
            "user_classification", CONFIG_PATH,
            source_stream="user_signups",        # stream id (streams.<id>.*) or system.stream
            batch_stream="reclassify_requests",  # must be an input of the job, at a lower priority
            start_date="2024-01-01",             # first day that can be backfilled
            timestamp_field=None,                # None: each record's own timestamp (event time)
        )
        return application_definitions("user_classification", CONFIG_PATH, backfills=[backfill])

which adds the asset ``[user_classification, reprocess_reclassify_requests]`` (group
``user_classification_reprocessing``, downstream of the source stream; the batch stream's asset
is drawn downstream of it), the job ``user_classification_reprocess_reclassify_requests`` and the
schedule ``..._schedule`` (STOPPED until turned on). Without ``application_definitions``, pass
``backfill.asset``, ``backfill.job`` and ``backfill.schedule`` to ``dg.Definitions`` yourself.

Which records belong to a day (``[start, end)`` of the partition's window, in ``timezone``):
``timestamp_field=None`` uses each record's timestamp (the producer's ``event_time``, else its
append time); ``timestamp_field="signed_up_at"`` reads that field of a JSON message value (epoch
milliseconds); ``select_rows(df, start_ms, end_ms)`` replaces the filter entirely (``df`` has
the data source's columns ``partition, offset, key, value, timestamp``). ``prepare(df)`` may
then reshape the day's rows into the batch stream's messages; what is re-sent is the ``value``
column (``key_column`` picks the partition by Kafka's murmur2; ``keep_event_time`` keeps the
``timestamp`` column so the batch record carries the original event time).

Resources: ``samza_systems`` (a :class:`SamzaSystemsResource`: where the systems are) and
``spark`` (a :class:`SparkResource`: the session).

Exactly-once. When the job runs with ``job.processing.guarantee=exactly-once`` (its consumers
then read ``read_committed``), each partition's re-send is one transaction of the embedded log,
keyed by the write id ``backfill/<job.name>-<job.id>/<system>.<batch stream>/<partition key>``
(spark/transactional.py): the day becomes readable all at once when the Spark write commits;
a run killed anywhere — a task, the Spark driver, the Dagster run process — and launched again
leaves each of the day's records in the batch stream exactly once; and a run after a committed
one sends nothing and says so (metadata ``already_written``, ``written_records``,
``written_at``). To re-send a day on purpose, launch it with the run config ``generation`` raised
(``ops: {<asset>: {config: {generation: 1}}}``): each generation of a day is written once. The
batch stream must be on the embedded log (else a ConfigError naming
``systems.<system>.samza.factory``); no end-of-stream or watermark message is written by a
backfill, so none takes part in its transaction.

Limitations: each partition scans the whole source stream (the data source has no time index).
At-least-once (the default guarantee): re-running a partition re-sends its records again (the
batch stream is a queue of work, not a table — the job must tolerate a repeated request, as a
reclassification does), and a run killed mid-write leaves part of the day sent. Exactly-once: the
unit is the run's partition key range — with ``days_per_run`` > 1 a later run of one day inside an
already written range is not recognised as written; a killed run's unfinished transaction holds
``read_committed`` readers of the batch stream at its first message until a run of the same
partition (range) is launched again; two runs of the same partition at once fence each other (one or
both fail — launch again — and nothing is written twice).
"""

import datetime as dt
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dagster as dg

from samza_dagster.config import Config
from samza_dagster.config.job_config import JobConfig
from samza_dagster.config.system_config import StreamConfig
from samza_dagster.container.exactly_once import GUARANTEE_KEY
from samza_dagster.model import StreamSpec, SystemStream
from samza_dagster.orchestration.assets import _group_name, stream_key
from samza_dagster.orchestration.errors import OrchestrationError
from samza_dagster.orchestration.observation import fetch_metadata, observe_streams, system_admin
from samza_dagster.orchestration.resources import SamzaSystemsResource, SparkResource
from samza_dagster.orchestration.settings import DagsterSettings
from samza_dagster.planner import configured_plan
from samza_dagster.planner.plan import StreamInfo
from samza_dagster.spark.transactional import check_transactional_system

if TYPE_CHECKING:  # Dagster's own names for them; not exported at the top level
    from dagster._core.definitions.partitioned_schedule import UnresolvedPartitionedAssetScheduleDefinition
    from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

#: (source DataFrame, window start ms, window end ms) → the rows of that window
RowSelector = Callable[["DataFrame", int, int], "DataFrame"]
#: the day's rows → the batch stream's messages (a ``value`` column, maybe ``key`` and ``timestamp``)
RowPreparer = Callable[["DataFrame"], "DataFrame"]


class ReprocessingConfig(dg.Config):
    """Run config of a reprocessing backfill's asset."""

    generation: int = 0
    """Exactly-once jobs: each generation of a day is re-sent once; raise it to re-send a day
    that was already written (a fix to the job, say)."""


@dataclass(frozen=True)
class ReprocessingBackfill:
    """What :func:`reprocessing_backfill` builds; ``application_definitions(backfills=[...])``
    adds all of it (and the lineage batch stream ← backfill)."""

    application: str
    source: StreamInfo
    batch: StreamInfo
    asset: dg.AssetsDefinition
    job: "UnresolvedAssetJobDefinition"
    #: what ``build_schedule_from_partitioned_job`` returns for an asset job (resolved when the
    #: Definitions are built)
    schedule: "dg.ScheduleDefinition | UnresolvedPartitionedAssetScheduleDefinition"
    partitions_def: dg.DailyPartitionsDefinition

    @classmethod
    def of(
        cls,
        application: str,
        source: StreamInfo,
        batch: StreamInfo,
        asset: dg.AssetsDefinition,
        partitions_def: dg.DailyPartitionsDefinition,
        *,
        job_name: str,
        description: str,
        hour_of_day: int | None = None,
        minute_of_hour: int | None = None,
    ) -> "ReprocessingBackfill":
        """A daily backfill asset with its job (``job_name``) and its daily schedule
        (``<job_name>_schedule``, STOPPED until turned on) — what every backfill factory returns."""
        job = dg.define_asset_job(
            job_name,
            selection=dg.AssetSelection.assets(asset),
            description=description,
            tags={"samza/application": application},
        )
        schedule = dg.build_schedule_from_partitioned_job(
            job,
            hour_of_day=hour_of_day,
            minute_of_hour=minute_of_hour,
            name=f"{job_name}_schedule",
            default_status=dg.DefaultScheduleStatus.STOPPED,
        )
        return cls(application, source, batch, asset, job, schedule, partitions_def)

    @property
    def key(self) -> dg.AssetKey:
        return self.asset.key

    def definitions(self) -> dg.Definitions:
        return dg.Definitions(assets=[self.asset], jobs=[self.job], schedules=[self.schedule])


@dataclass(frozen=True, slots=True)
class SentRecords:
    """Records one write put into the batch stream: in all, and per partition of it."""

    total: int = 0
    partitions: Mapping[int, int] = field(default_factory=dict)

    @classmethod
    def from_counts(cls, counts: Mapping[str, Any]) -> "SentRecords":
        return cls(int(counts["total"]), {int(p): int(n) for p, n in counts["partitions"].items()})


@dataclass(frozen=True, slots=True)
class ResendSummary:
    """What a re-send of a window did (:func:`resend_window`): the records it sent, and for an
    exactly-once re-send its write id and whether that write had been committed already — by an
    earlier launch, or by another launch while this one ran — with what that write sent and when."""

    sent: SentRecords
    already_written: bool = False
    #: the exactly-once write's idempotence key; None for an at-least-once re-send
    write_id: str | None = None
    #: the committed write's records, when ``already_written``
    written: SentRecords | None = None
    written_at_ms: int | None = None

    @classmethod
    def from_summary(cls, summary: Mapping[str, Any]) -> "ResendSummary":
        """From :func:`samza_dagster.spark.resend_to_batch_stream`'s summary (a JSON-shaped dict,
        as the Spark writer's report file carries it)."""
        written = summary.get("written")
        written_at = summary.get("written_at_ms")
        return cls(
            sent=SentRecords.from_counts(summary),
            already_written=bool(summary.get("already_written")),
            write_id=summary.get("write_id"),
            written=SentRecords.from_counts(written) if written is not None else None,
            written_at_ms=int(written_at) if written_at is not None else None,
        )

    @property
    def written_at(self) -> dt.datetime | None:
        """When the committed write was committed (UTC), when ``already_written``."""
        if self.written_at_ms is None:
            return None
        return dt.datetime.fromtimestamp(self.written_at_ms / 1000, tz=dt.UTC)


@dataclass(frozen=True, slots=True)
class _Reprocessing:
    """A backfill's what and where, resolved once when the definitions are built: the source and
    batch streams, how a day's rows are chosen and shaped, and, for an exactly-once job, the
    prefix of every write id — so the asset's body only has a day to re-send."""

    application: str
    cfg: Config
    job_name: str
    source: StreamInfo
    batch: StreamInfo
    selector: RowSelector
    prepare: RowPreparer | None
    key_column: str | None
    keep_event_time: bool
    #: the metadata's ``timestamp``: which time puts a record in a day
    timestamp: str
    #: ``backfill/<job.name>-<job.id>/<system>.<batch stream>`` when the job is exactly-once, else None
    write_prefix: str | None

    @property
    def priority(self) -> int:
        return self.batch.priority if self.batch.priority is not None else 0

    @property
    def source_name(self) -> str:
        return f"{self.source.system}.{self.source.physical_name}"

    @property
    def batch_name(self) -> str:
        return f"{self.batch.system}.{self.batch.physical_name}"

    def write_id(self, days: str, generation: int) -> str | None:
        """The exactly-once write's idempotence key for ``days`` (None at-least-once): each
        generation of a day is its own write."""
        if self.write_prefix is None:
            return None
        return f"{self.write_prefix}/{days}" + (f"#g{generation}" if generation else "")


def reprocessing_backfill(
    application: str,
    config: Config | str | Path,
    *,
    source_stream: str,
    batch_stream: str,
    start_date: str,
    end_date: str | None = None,
    timezone: str = "UTC",
    timestamp_field: str | None = None,
    select_rows: RowSelector | None = None,
    prepare: RowPreparer | None = None,
    key_column: str | None = "key",
    keep_event_time: bool = True,
    schedule_hour: int = 1,
    schedule_minute: int = 0,
    days_per_run: int = 1,
    name: str | None = None,
) -> ReprocessingBackfill:
    """A daily-partitioned asset re-sending each day's records of ``source_stream`` into
    ``batch_stream``, its job, and a daily schedule. See the module docstring for the whole API.

    ``source_stream`` / ``batch_stream``: a stream id of the application's config or
    ``system.stream``. ``batch_stream`` must be an input of the job; a warning is logged when its
    priority is not below the job's other inputs (then a flood of re-sent records would compete
    with real-time traffic instead of yielding to it). ``start_date`` / ``end_date``
    (``YYYY-MM-DD``; no end: up to the last completed day) bound the partitions.
    ``days_per_run`` > 1 lets a backfill re-send several consecutive days in one run (one Spark
    scan of the source instead of one per day).
    """
    if timestamp_field is not None and select_rows is not None:
        raise OrchestrationError("reprocessing_backfill: pass timestamp_field or select_rows, not both")
    cfg = config if isinstance(config, Config) else Config.from_properties(config)
    what = _resolve(
        application,
        cfg,
        source_stream,
        batch_stream,
        selector=select_rows or _time_filter(timestamp_field),
        prepare=prepare,
        key_column=key_column,
        keep_event_time=keep_event_time,
        timestamp=timestamp_field or ("custom select_rows" if select_rows else "record timestamp"),
    )
    partitions_def = dg.DailyPartitionsDefinition(start_date=start_date, end_date=end_date, timezone=timezone)
    group = _group_name(application)
    asset_name = name or f"reprocess_{_group_name(what.batch.id)}"
    asset = _reprocessing_asset(what, partitions_def, asset_name, days_per_run)
    return ReprocessingBackfill.of(
        application,
        what.source,
        what.batch,
        asset,
        partitions_def,
        job_name=f"{group}_{asset_name}",
        description=f"Re-sends past days of {what.source.id} into {what.batch.id} (one run per day)",
        hour_of_day=schedule_hour,
        minute_of_hour=schedule_minute,
    )


def _resolve(
    application: str,
    cfg: Config,
    source_stream: str,
    batch_stream: str,
    *,
    selector: RowSelector,
    prepare: RowPreparer | None,
    key_column: str | None,
    keep_event_time: bool,
    timestamp: str,
) -> _Reprocessing:
    """The streams of the backfill, checked where a mistake would otherwise show only when a day
    runs: the batch stream must be an input of the job (warned when it does not yield to the
    real-time inputs), and an exactly-once job's batch stream must be on a system that writes
    transactionally."""
    plan = configured_plan(cfg)
    source = _stream(cfg, plan.streams, source_stream, "source_stream")
    batch = _stream(cfg, plan.streams, batch_stream, "batch_stream")
    if "input" not in batch.roles:
        raise OrchestrationError(
            f"reprocessing_backfill: batch_stream {batch_stream!r} ({batch.system}.{batch.physical_name}) is not an "
            f"input of job {plan.job_name}; add it to its inputs (task.inputs) at a low priority"
        )
    _check_priority(plan.job_name, batch, plan.streams.values())
    job = JobConfig(cfg)
    write_prefix = None
    if job.exactly_once:
        _check_exactly_once(cfg, batch)
        write_prefix = f"backfill/{job.name}-{job.id}/{batch.system}.{batch.physical_name}"
    return _Reprocessing(
        application,
        cfg,
        plan.job_name,
        source,
        batch,
        selector,
        prepare,
        key_column,
        keep_event_time,
        timestamp,
        write_prefix,
    )


def _reprocessing_asset(
    what: _Reprocessing, partitions_def: dg.DailyPartitionsDefinition, asset_name: str, days_per_run: int
) -> dg.AssetsDefinition:
    """The daily-partitioned asset; its body is :func:`_reprocess`."""

    @dg.asset(
        key=dg.AssetKey([what.application, asset_name]),
        deps=[stream_key(what.application, what.source.id)],
        partitions_def=partitions_def,
        group_name=f"{_group_name(what.application)}_reprocessing",
        kinds={"spark", "samza"},
        description=(
            f"Re-sends one day of {what.source_name} into the batch stream "
            f"{what.batch_name}, which job {what.job_name} reads at priority {what.priority}"
        ),
        metadata={
            "source_stream": what.source_name,
            "batch_stream": what.batch_name,
            "batch_priority": dg.MetadataValue.int(what.priority),
            "processing_guarantee": JobConfig(what.cfg).processing_guarantee,
            "timestamp": what.timestamp,
        },
        tags={"samza/role": "backfill"},
        owners=list(DagsterSettings.from_config(what.cfg).owners) or None,
        # Dagster marks backfill_policy beta (it warns for a value that is not None): only set it
        # when asked for more than a day per run
        backfill_policy=dg.BackfillPolicy.multi_run(days_per_run) if days_per_run > 1 else None,
    )
    def _reprocess_asset(
        context: dg.AssetExecutionContext,
        config: ReprocessingConfig,
        samza_systems: SamzaSystemsResource,
        spark: SparkResource,
    ) -> dg.MaterializeResult:
        return _reprocess(context, what, config, samza_systems, spark)

    return _reprocess_asset


def _reprocess(
    context: dg.AssetExecutionContext,
    what: _Reprocessing,
    config: ReprocessingConfig,
    samza_systems: SamzaSystemsResource,
    spark: SparkResource,
) -> dg.MaterializeResult:
    """One run: the partition's window (one day, or several with ``days_per_run``) re-sent
    into the batch stream, logged, and the batch stream observed after it."""
    window = context.partition_time_window
    keys = context.partition_key_range
    days = keys.start if keys.start == keys.end else f"{keys.start}..{keys.end}"
    job_cfg = samza_systems.apply(what.cfg)
    write_id = what.write_id(days, config.generation)
    if write_id is not None:
        _check_exactly_once(job_cfg, what.batch)  # the deployment may have moved the system
    sent = resend_window(
        spark.get_session(),
        job_cfg,
        what.source,
        what.batch,
        int(window.start.timestamp() * 1000),
        int(window.end.timestamp() * 1000),
        selector=what.selector,
        prepare=what.prepare,
        key_column=what.key_column,
        keep_event_time=what.keep_event_time,
        transactional_id=write_id,
    )
    context.log.info(_outcome_line(what, days, sent))
    observed = observe_streams(job_cfg, [what.batch], with_lag=False)[what.batch.id]
    context.log_event(observed.to_event(stream_key(what.application, what.batch.id), f"after re-sending {days}"))
    return dg.MaterializeResult(
        metadata={
            "records_resent": dg.MetadataValue.int(sent.sent.total),
            "resent_per_partition": dg.MetadataValue.json({str(p): n for p, n in sorted(sent.sent.partitions.items())}),
            "nothing_to_reprocess": sent.sent.total == 0 and not sent.already_written,
            "window_start": dg.MetadataValue.timestamp(window.start),
            "window_end": dg.MetadataValue.timestamp(window.end),
            "batch_stream_messages": dg.MetadataValue.int(observed.messages),
            **_exactly_once_metadata(sent),
        }
    )


def _outcome_line(what: _Reprocessing, days: str, sent: ResendSummary) -> str:
    """The run log's line: already written (and how to re-send anyway), re-sent, or nothing to."""
    if sent.already_written:
        written = sent.written or SentRecords()
        when = sent.written_at.isoformat() if sent.written_at is not None else "at an unknown time"
        return (
            f"{days} was re-sent into {what.batch_name} already ({written.total} records, "
            f"committed {when}, write id {sent.write_id}): nothing sent again; raise the run "
            "config's generation to re-send it"
        )
    if sent.sent.total:
        return (
            f"re-sent {sent.sent.total} records of {what.source_name} from {days} into {what.batch_name} "
            f"(priority {what.priority}): per partition {dict(sent.sent.partitions)}"
        )
    return f"nothing to reprocess for {days}: {what.source_name} has no record of that time"


def _exactly_once_metadata(sent: ResendSummary) -> dict[str, dg.MetadataValue | str | bool]:
    """An exactly-once re-send's write id and whether it had been written already (then what
    that write sent, and when); nothing for an at-least-once re-send."""
    if sent.write_id is None:
        return {}
    md: dict[str, dg.MetadataValue | str | bool] = {"write_id": sent.write_id, "already_written": sent.already_written}
    if sent.already_written:
        if sent.written is not None:
            md["written_records"] = dg.MetadataValue.int(sent.written.total)
        if sent.written_at is not None:
            md["written_at"] = dg.MetadataValue.timestamp(sent.written_at)
    return md


def resend_window(
    spark: "SparkSession",
    config: Config,
    source: StreamInfo,
    batch: StreamInfo,
    start_ms: int,
    end_ms: int,
    *,
    selector: RowSelector,
    prepare: RowPreparer | None = None,
    key_column: str | None = "key",
    keep_event_time: bool = True,
    transactional_id: str | None = None,
) -> ResendSummary:
    """The Spark half, usable without Dagster: read ``source`` whole, keep the rows of
    ``[start_ms, end_ms)``, re-send them into ``batch`` (created if missing). Returns what
    :func:`resend_to_batch_stream` sent, as a :class:`ResendSummary`; ``transactional_id`` makes
    it exactly-once."""
    # the spark package pulls in pyspark: loaded only for a Spark re-send
    from samza_dagster.spark import read_options, resend_to_batch_stream

    plain = dict(config.items())
    rows = spark.read.format("samza").options(**read_options(source.system, source.physical_name, plain)).load()
    rows = selector(rows, start_ms, end_ms)
    if prepare is not None:
        rows = prepare(rows)
    if "value" not in rows.columns:
        raise OrchestrationError(
            f"reprocessing {source.id} into {batch.id}: the rows to re-send have no 'value' column "
            f"(columns: {rows.columns}); prepare() must produce one (e.g. F.to_json(F.struct(...)))"
        )
    key = key_column if key_column and key_column in rows.columns else None
    wanted = [
        c for c in dict.fromkeys([key, "value", "timestamp" if keep_event_time else None]) if c and c in rows.columns
    ]
    _ensure_stream(config, batch)
    summary = resend_to_batch_stream(
        rows.select(*wanted),
        system=batch.system,
        stream=batch.physical_name,
        config=plain,
        key_column=key,
        transactional_id=transactional_id,
    )
    return ResendSummary.from_summary(summary)


def _time_filter(timestamp_field: str | None) -> RowSelector:
    """The rows whose time is in ``[start_ms, end_ms)``: the record's timestamp, or the JSON
    value's ``timestamp_field`` (epoch milliseconds)."""

    def select(df: "DataFrame", start_ms: int, end_ms: int) -> "DataFrame":
        # pyspark (and its JVM gateway) loads only where Spark runs
        from pyspark.sql import functions as F

        if timestamp_field is None:
            ts = F.col("timestamp")
        else:
            ts = F.get_json_object(F.col("value").cast("string"), f"$.{timestamp_field}").cast("long")
        return df.where(ts.isNotNull() & (ts >= F.lit(start_ms)) & (ts < F.lit(end_ms)))

    return select


def _stream(config: Config, streams: dict[str, StreamInfo], name: str, what: str) -> StreamInfo:
    """A stream of the plan by id or ``system.stream``; else one the config describes."""
    if name in streams:
        return streams[name]
    for info in streams.values():
        if f"{info.system}.{info.physical_name}" == name:
            return info
    job = JobConfig(config)
    system, dot, physical = name.partition(".")
    ss = SystemStream(system, physical) if dot else StreamConfig(config).system_stream(name, job.default_system or "")
    if not ss.system:
        raise OrchestrationError(
            f"reprocessing_backfill: {what} {name!r} names no system (set streams.{name}.samza.system "
            "or job.default.system, or write system.stream)"
        )
    partitions = StreamConfig(config).partitions(name) if not dot else None
    return StreamInfo(name if not dot else physical, ss.system, ss.stream, partitions, {"source"})


def _check_exactly_once(config: Config, batch: StreamInfo) -> None:
    """An exactly-once job's backfill writes transactionally: ConfigError unless the batch stream's
    system can (the embedded log)."""
    check_transactional_system(
        config,
        batch.system,
        f"config key {GUARANTEE_KEY!r}=exactly-once (the backfill into {batch.system}.{batch.physical_name})",
    )


def _check_priority(job_name: str, batch: StreamInfo, streams: Iterable[StreamInfo]) -> None:
    """Warns when the batch stream would not yield to every real-time input."""
    others = [(s, s.priority) for s in streams if "input" in s.roles and s.id != batch.id and s.priority is not None]
    mine = batch.priority or 0
    competing = [s for s, priority in others if not s.bootstrap and priority <= mine]
    if competing:
        log.warning(
            "job %s: batch stream %s has priority %s, not below every real-time input (%s): re-sent records will "
            "compete with live traffic; set task.chooser.priorities.%s.%s lower",
            job_name,
            batch.id,
            mine,
            ", ".join(f"{s.id}={priority}" for s, priority in others),
            batch.system,
            batch.physical_name,
        )


def _ensure_stream(config: Config, stream: StreamInfo) -> None:
    """The batch stream must exist before the writer sends (producing does not create a stream
    on the log system)."""
    if fetch_metadata(config, stream.system, [stream.physical_name]).get(stream.physical_name) is not None:
        return
    with system_admin(config, stream.system) as admin:
        admin.create_stream(StreamSpec(stream.id, stream.physical_name, stream.system, stream.partitions or 1))
