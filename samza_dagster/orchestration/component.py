"""SamzaJobComponent: one Samza job's whole Dagster definitions from a ``defs.yaml``.

In a ``dg`` project (``dg scaffold defs samza_dagster.orchestration.SamzaJobComponent <name>``)::

    type: samza_dagster.orchestration.SamzaJobComponent
    attributes:
      config_path: wordcount.properties      # relative to this defs.yaml
      declared_outputs: [log.words]          # a low-level task's outputs (its code sends them)
      backfills:                             # optional daily reprocessing
        - kind: resend                       # re-send a day of source_stream into batch_stream
          source_stream: sentences
          batch_stream: sentences_replay
          start_date: "2024-01-01"
        - kind: rewind                       # rewind an input to a day's first offset
          stream: sentences_replay
          start_date: "2024-01-01"

builds what :func:`~samza_dagster.orchestration.application_definitions` builds from the job's
``.properties`` and execution plan: the stream assets, the job's multi-asset and asset job, the
coordinator-stream, observation and failure sensors, the asset checks, freshness and owners, and
each backfill's daily asset, job and schedule. Unless ``bind_resources: false``, it binds the
default resources (``samza_systems``, ``spark``, ``kafka_admin``, ``coordinator_stream``, set
from ``SAMZA_LOG_PATH`` / ``SAMZA_KAFKA_BOOTSTRAP_SERVERS``, and ``iceberg_io_manager``, which
loads the job's Iceberg tables into downstream assets) — the same instances for every
component, so several jobs merge into one code location.

Inputs and outputs of any system are streams here: a ``files`` input (Parquet, JSON lines, CSV
under a directory) is a bounded input asset; a low-level task's Iceberg output is declared like
any other (``declared_outputs: [lake.clicks]``, ``lake`` an ``iceberg`` system) and becomes the
table's asset.

A component that cannot be built — its ``config_path`` does not exist, its config fails the
pre-flight ``samza-dagster run`` applies (typed values, serdes, the runner, the task or
application class) or its plan is rejected — is one error naming the ``defs.yaml``, the key and
the value. Under ``dg check
defs`` (``dagster definitions validate``) that error fails the check; elsewhere (``dg dev``) it
is logged and the component shows as a placeholder asset ``[<application>, execution_plan]``
with a failing check, while the project's other components load.
"""

from __future__ import annotations

import difflib
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import dagster as dg
from dagster.components.core.defs_module import find_defs_or_component_yaml
from pydantic import Field

from samza_dagster.config import Config, ConfigError, keys
from samza_dagster.config.deployment import apply_deployment
from samza_dagster.config.job_config import JobConfig
from samza_dagster.config.system_config import StreamConfig
from samza_dagster.errors import SamzaError
from samza_dagster.orchestration.application import application_definitions, failed_application_definitions
from samza_dagster.orchestration.assets import _group_name
from samza_dagster.orchestration.backfill import ReprocessingBackfill, reprocessing_backfill
from samza_dagster.orchestration.iceberg_io import IcebergIOManager
from samza_dagster.orchestration.resources import (
    CoordinatorStreamResource,
    KafkaAdminResource,
    SamzaSystemsResource,
    SparkResource,
)
from samza_dagster.orchestration.rewind import rewind_backfill
from samza_dagster.orchestration.scaffold import SamzaJobScaffolder
from samza_dagster.orchestration.tables import ICEBERG_IO_MANAGER_KEY
from samza_dagster.planner.admins import fetch_metadata
from samza_dagster.runtime.preflight import check_job_config
from samza_dagster.system.factories import system_admin

log = logging.getLogger(__name__)

#: set by ``dagster definitions validate`` (what ``dg check defs`` runs)
VALIDATION_ENV = "DAGSTER_IS_DEFS_VALIDATION_CLI"


def default_resources() -> dict[str, dg.ConfigurableResource | dg.ConfigurableIOManager]:
    """The resources every SamzaJobComponent binds: one set of instances per process, so the
    Definitions of several components merge (Dagster requires one object per resource key)."""
    global _DEFAULT_RESOURCES
    if _DEFAULT_RESOURCES is None:
        systems = SamzaSystemsResource()
        _DEFAULT_RESOURCES = {
            "samza_systems": systems,
            "spark": SparkResource(),
            "kafka_admin": KafkaAdminResource(),
            "coordinator_stream": CoordinatorStreamResource(systems=systems),
            ICEBERG_IO_MANAGER_KEY: IcebergIOManager(samza_systems=systems),
        }
    return dict(_DEFAULT_RESOURCES)


_DEFAULT_RESOURCES: dict[str, dg.ConfigurableResource | dg.ConfigurableIOManager] | None = None


class SamzaBackfill(dg.Model, dg.Resolvable):
    """One daily reprocessing backfill of the job.

    ``kind: resend`` re-sends each day of ``source_stream`` into ``batch_stream`` (an input of the
    job at a lower priority) on Spark; ``kind: rewind`` rewinds ``stream`` (an input) to the
    day's first offset by a timestamp startpoint, read again at the job's next start.
    """

    kind: Literal["resend", "rewind"]
    start_date: str = Field(description="first day offered, YYYY-MM-DD")
    end_date: str | None = Field(default=None, description="last day (exclusive); none: up to yesterday")
    timezone: str = "UTC"
    source_stream: str | None = Field(default=None, description="resend: the stream re-sent (id or system.stream)")
    batch_stream: str | None = Field(default=None, description="resend: the job's batch input it is re-sent into")
    stream: str | None = Field(default=None, description="rewind: the input rewound")
    timestamp_field: str | None = Field(
        default=None, description="resend: JSON field of the value holding the event time (epoch ms); none: record time"
    )
    keep_event_time: bool = Field(default=True, description="resend: re-sent records keep their original timestamp")
    days_per_run: int = Field(default=1, description="resend: consecutive days re-sent by one run of a backfill")
    name: str | None = Field(default=None, description="asset name (default reprocess_<batch> / rewind_<stream>)")


class SamzaComponentError(SamzaError, ValueError):
    """A component that cannot be built: names its defs.yaml, the key and the value."""


@dg.scaffold_with(SamzaJobScaffolder)
class SamzaJobComponent(dg.Component, dg.Model, dg.Resolvable):
    """A Samza job: its stream assets, job, sensors, checks and backfills, from its .properties."""

    config_path: str = Field(description="the job's .properties, relative to this defs.yaml")
    application: str | None = Field(
        default=None, description="asset key prefix and group (default: job.name as an identifier)"
    )
    declared_outputs: list[str] = Field(
        default_factory=list, description="system.stream of outputs a low-level task sends to (not in its config)"
    )
    backfills: list[SamzaBackfill] = Field(default_factory=list, description="daily reprocessing backfills")
    bind_resources: bool = Field(
        default=True,
        description="bind the default samza_systems/spark/kafka_admin/coordinator_stream/iceberg_io_manager resources",
    )

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        defs_yaml = find_defs_or_component_yaml(context.path) or context.path / "defs.yaml"
        application = self.application or _group_name(context.path.name)
        cfg: Config | None = None
        try:
            config_file = self.config_file(context.path, defs_yaml)
            cfg = _load(config_file, defs_yaml, self.config_path)
            application = self.application or _group_name(keys.JOB_NAME.get(cfg) or application)
            # the pre-flight of `samza-dagster run`: typed values, serdes, the runner, the task or
            # application class — a config `run` refuses is refused here too
            check_job_config(cfg)
            for i, entry in enumerate(self.declared_outputs):
                system, _, stream = entry.partition(".")
                if not system or not stream:
                    raise SamzaComponentError(
                        f"{defs_yaml}: attributes.declared_outputs[{i}]: {entry!r} — must be system.stream"
                    )
                _check_declared(cfg, entry, f"{defs_yaml}: attributes.declared_outputs[{i}]", self.config_path)
            backfills = [self._backfill(application, cfg, i, b, defs_yaml) for i, b in enumerate(self.backfills)]
            defs = application_definitions(
                application,
                cfg,
                declared_outputs=self.declared_outputs,
                backfills=backfills,
                contain_errors=False,
                config_path=config_file,
            )
        except SamzaComponentError as exc:
            defs = self._failed(application, exc)
        except Exception as exc:  # noqa: BLE001 - the plan's own errors, named with the file they come from
            defs = self._failed(application, SamzaComponentError(_rejected(defs_yaml, self.config_path, exc, cfg)))
        if self.bind_resources:
            defs = dg.Definitions.merge(defs, dg.Definitions(resources=default_resources()))
        return defs

    def config_file(self, here: Path, defs_yaml: Path) -> Path:
        path = (here / self.config_path).resolve()
        if not path.is_file():
            raise SamzaComponentError(
                f"{defs_yaml}: attributes.config_path: {self.config_path!r} — no such file ({path})"
            )
        return path

    def _backfill(
        self, application: str, cfg: Config, index: int, spec: SamzaBackfill, defs_yaml: Path
    ) -> ReprocessingBackfill:
        where = f"{defs_yaml}: attributes.backfills[{index}]"
        try:
            if spec.kind == "rewind":
                if not spec.stream:
                    raise SamzaComponentError("a rewind backfill needs stream (the input it rewinds)")
                return rewind_backfill(
                    application,
                    cfg,
                    stream=spec.stream,
                    start_date=spec.start_date,
                    end_date=spec.end_date,
                    timezone=spec.timezone,
                    name=spec.name,
                )
            if not spec.source_stream or not spec.batch_stream:
                raise SamzaComponentError("a resend backfill needs source_stream and batch_stream")
            return reprocessing_backfill(
                application,
                cfg,
                source_stream=spec.source_stream,
                batch_stream=spec.batch_stream,
                start_date=spec.start_date,
                end_date=spec.end_date,
                timezone=spec.timezone,
                timestamp_field=spec.timestamp_field,
                keep_event_time=spec.keep_event_time,
                days_per_run=spec.days_per_run,
                name=spec.name,
            )
        except Exception as exc:  # noqa: BLE001 - named with the backfill entry it comes from
            raise SamzaComponentError(f"{where} ({spec.kind}): {exc}") from exc

    def _failed(self, application: str, error: SamzaComponentError) -> dg.Definitions:
        if os.environ.get(VALIDATION_ENV):
            # `dg check defs`: the line that matters, and nothing after it — Dagster would print
            # ~50 lines of its trace around it (docs/decisions.md)
            print(f"error: {error}", file=sys.stderr, flush=True)
            sys.exit(1)  # the validation process ends here: nothing after the line that matters
        log.error("application %s is not loaded: %s", application, error)
        return failed_application_definitions(application, error)


def _check_declared(cfg: Config, entry: str, where: str, config_path: str) -> None:
    """A declared output the config does not name, close to a stream it does (``log.outptu`` for
    ``log.output``), and that does not exist, is a typo: launching would create and materialize a
    stream nobody writes. One the config does not name and nothing is close to is the task's own
    (created at launch), and so is one that exists already."""
    streams = StreamConfig(cfg)
    default_system = JobConfig(cfg).default_system
    named = {f"{streams.system_of(sid, default_system)}.{streams.physical_name(sid)}" for sid in streams.stream_ids()}
    if entry in named:
        return
    near = difflib.get_close_matches(entry, sorted(named), n=1, cutoff=0.8)
    if near and not _exists(cfg, entry):
        raise SamzaComponentError(
            f"{where}: {entry!r} — no stream {entry} in {config_path!r} (no streams.<id>.* of it): "
            f"did you mean {near[0]}?"
        )


def _exists(cfg: Config, entry: str) -> bool:
    """Whether stream ``system.stream`` exists where the deployment keeps it (SAMZA_LOG_PATH)."""
    system, _, stream = entry.partition(".")
    try:
        with system_admin(apply_deployment(cfg), system) as admin:
            return stream in fetch_metadata(admin, system, [stream])
    except Exception:  # noqa: BLE001 - a system that cannot be asked: the near miss stands
        return False


def _load(config_file: Path, defs_yaml: Path, config_path: str) -> Config:
    try:
        return Config.from_properties(config_file)
    except Exception as exc:  # noqa: BLE001 - an unreadable file, named with the defs.yaml
        raise SamzaComponentError(f"{defs_yaml}: attributes.config_path: {config_path!r} — {exc}") from exc


def _rejected(defs_yaml: Path, config_path: str, exc: BaseException, cfg: Config | None) -> str:
    """``<defs.yaml>: attributes.config_path: <file> — key 'k' = 'v': <error>``: the key and
    its value when the error names one."""
    key = exc.key if isinstance(exc, ConfigError) else None
    what = f"{type(exc).__name__}: {exc}"
    if key:
        value = cfg.get_str(key) if cfg is not None else None
        shown = f" = {value!r}" if value is not None else " (not set)"
        return f"{defs_yaml}: attributes.config_path: {config_path!r} — key {key!r}{shown}: {what}"
    return f"{defs_yaml}: attributes.config_path: {config_path!r} — {what}"


__all__: Sequence[str] = ["SamzaBackfill", "SamzaComponentError", "SamzaJobComponent", "default_resources"]
