"""ExecutionPlanner: checks that joined streams agree on partition counts, infers the counts of
intermediate streams, and describes the job (streams with roles, operators, edges, stages).

Seed 002's three phases: graph analysis and conversion to stream groups live in
:mod:`~samza_dagster.planner.analysis`, the processing of joined groups in
:mod:`~samza_dagster.planner.partitions`; this module feeds them and assembles the
:class:`~samza_dagster.planner.plan.ExecutionPlan`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from samza_dagster.application.app import StreamApplication, StreamApplicationDescriptor
from samza_dagster.application.specs import (
    InputOperatorSpec,
    OutputOperatorSpec,
    PartitionByOperatorSpec,
    SendToTableOperatorSpec,
    StreamTableJoinOperatorSpec,
)
from samza_dagster.config import Config, keys
from samza_dagster.config.job_config import JobConfig
from samza_dagster.config.system_config import StreamConfig, system_is_bounded
from samza_dagster.config.task_config import TaskConfig
from samza_dagster.model import SystemStream
from samza_dagster.planner.analysis import analyze
from samza_dagster.planner.errors import NotAnApplicationError, PlanningError
from samza_dagster.planner.partitions import assign_intermediate_partitions, default_intermediate_partitions
from samza_dagster.planner.plan import Edge, ExecutionPlan, JobInfo, JoinInfo, OperatorInfo, StreamInfo, TableInfo
from samza_dagster.planner.stages import split_stages

#: the most partitions an intermediate stream gets from its inputs' counts when nothing sets it
MAX_INFERRED_PARTITIONS = 256


class ExecutionPlanner:
    """``ExecutionPlanner(config, stream_partitions).plan(app)``.

    ``stream_partitions`` maps the id of every existing stream (inputs, outputs, side inputs)
    to its partition count; :func:`~samza_dagster.planner.admins.stream_partitions_from_admins`
    fills it from the system admins.
    """

    def __init__(self, config: Config | Mapping[str, Any], stream_partitions: Mapping[str, int]) -> None:
        self.config = config if isinstance(config, Config) else Config(config)
        for sid, count in stream_partitions.items():
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise PlanningError(
                    f"stream {sid!r}: partition count must be a positive integer, got {count!r}", streams={sid: None}
                )
        self.stream_partitions = dict(stream_partitions)

    def plan(self, app: StreamApplication | StreamApplicationDescriptor) -> ExecutionPlan:
        descriptor = app if isinstance(app, StreamApplicationDescriptor) else None
        if descriptor is None:
            if not isinstance(app, StreamApplication):
                raise NotAnApplicationError(f"plan() expects a StreamApplication or its descriptor, got {app!r}")
            descriptor = StreamApplicationDescriptor.of(app, self.config)
        else:
            descriptor.validate()
        return _Builder(self.config, self.stream_partitions, descriptor).build()


class _Builder:
    def __init__(self, config: Config, partitions: dict[str, int], app: StreamApplicationDescriptor) -> None:
        self.config = config
        self.partitions = partitions
        self.app = app
        self.stream_config = StreamConfig(config)
        self.streams: dict[str, StreamInfo] = {}

    # -- streams ---------------------------------------------------------------------------
    def _stream(self, sid: str, system: str, physical: str, role: str, declared: int | None) -> StreamInfo:
        info = self.streams.get(sid)
        if info is None:
            info = StreamInfo(sid, system, physical, None, set())
            self.streams[sid] = info
        elif (info.system, info.physical_name) != (system, physical):
            raise PlanningError(
                f"stream {sid!r} is used as {system}.{physical} and as {info.system}.{info.physical_name}",
                streams={sid: None},
            )
        info.roles.add(role)
        if role != "intermediate":
            count = self._existing_count(sid, system, physical, role, declared)
            if count is not None:
                info.partitions = count
        return info

    def _existing_count(self, sid: str, system: str, physical: str, role: str, declared: int | None) -> int | None:
        actual = self.partitions.get(sid)
        if actual is not None and declared is not None and actual != declared:
            raise PlanningError(
                f"{role} stream {sid!r} is declared with {declared} partitions but {system}.{physical} has {actual}",
                streams={sid: actual},
            )
        count = actual if actual is not None else declared
        if count is None:
            count = self.stream_config.partitions(sid)
        if count is None and role in ("input", "side-input"):
            raise PlanningError(
                f"{role} stream {sid!r} ({system}.{physical}) has no partition count: it is missing from "
                f"stream_partitions (does the stream exist on system {system!r}?)",
                streams={sid: None},
            )
        return count

    def _collect_streams(self) -> None:
        app = self.app
        for spec in app.input_operators.values():
            role = "intermediate" if spec.is_intermediate else "input"
            info = self._stream(spec.stream_id, spec.system, spec.physical_name, role, spec.partitions)
            info.consumers.add(spec.op_id)
        for impl in app.output_streams.values():
            role = "intermediate" if impl.is_intermediate else "output"
            self._stream(impl.stream_id, impl.system, impl.physical_name, role, impl.partitions)
        for table in app.tables.values():
            for sid in table.side_inputs:
                info = self._stream(
                    sid, table.side_input_systems[sid], table.side_input_physical_names[sid], "side-input", None
                )
                info.tables.add(table.table_id)
        self._chooser_settings()

    def _property(self, info: StreamInfo, definition: keys.ConfigKey[object]) -> tuple[str | None, str]:
        """A stream property and the key it came from. The descriptor tells the stream id's
        system, so ``streams.<id>.<prop>`` applies even without ``streams.<id>.samza.system``."""
        key = definition.key(stream_id=info.id)
        value = self.config.get_str(key)
        if value is not None:
            return value, key
        ss = SystemStream(info.system, info.physical_name)
        return self.stream_config.get_property(ss, definition), self.stream_config.property_key(ss, definition)

    def _bool_property(self, info: StreamInfo, definition: keys.ConfigKey[object]) -> bool:
        value, key = self._property(info, definition)
        if value is None or not value.strip():
            return False
        return Config({key: value}).get_bool(key)

    def _chooser_settings(self) -> None:
        legacy = TaskConfig(self.config).legacy_priorities()
        explicit: dict[str, int] = {}
        for info in self.streams.values():
            info.bootstrap = self._bool_property(info, keys.STREAM_BOOTSTRAP)
            info.bounded = self._bool_property(info, keys.STREAM_BOUNDED) or system_is_bounded(self.config, info.system)
            if info.roles - {"output"}:
                raw, key = self._property(info, keys.STREAM_PRIORITY)
                priority = Config({key: raw}).get_int(key) if raw is not None else None
                if priority is None:
                    priority = legacy.get(SystemStream(info.system, info.physical_name))
                if priority is not None:
                    explicit[info.id] = priority
            if info.bootstrap and ("input" in info.roles):
                info.roles.add("bootstrap")
        top = max([0, *explicit.values()]) + 1
        for info in self.streams.values():
            if not (info.roles - {"output"}):
                continue
            info.priority = explicit.get(info.id, top if info.bootstrap else 0)

    # -- build -----------------------------------------------------------------------------
    def build(self) -> ExecutionPlan:
        app = self.app
        self._collect_streams()
        analysis = analyze(app)

        known = {
            sid: s.partitions for sid, s in self.streams.items() if s.partitions is not None and not s.is_intermediate
        }
        intermediates = [sid for sid, s in self.streams.items() if s.is_intermediate]
        configured = JobConfig(self.config).intermediate_stream_partitions
        default = default_intermediate_partitions(configured, known.values(), MAX_INFERRED_PARTITIONS)
        assigned = assign_intermediate_partitions(analysis.groups, known, intermediates, default)
        for sid, why in assigned.items():
            self.streams[sid].partitions = why.partitions

        for key, sources in analysis.upstream.items():
            if not key.startswith("table:") and key in self.streams:
                self.streams[key].upstream.update(sources)

        stages, stage_of = split_stages(app)
        operators = self._operators(stage_of)
        tables = self._tables(analysis.upstream, stage_of)
        joins = [
            JoinInfo(
                g.join.op_id,
                g.join.op_type,
                g.table_id,
                list(g.stream_ids),
                self.streams[g.stream_ids[0]].partitions if g.stream_ids else None,
            )
            for g in analysis.groups
        ]
        job = JobInfo(
            app.job_name,
            app.job_id,
            stages,
            inputs=[s.id for s in self.streams.values() if "input" in s.roles],
            side_inputs=[s.id for s in self.streams.values() if "side-input" in s.roles],
            outputs=[s.id for s in self.streams.values() if "output" in s.roles],
            intermediate_streams=intermediates,
        )
        app_class = None
        if app.application is not None:
            cls = type(app.application)
            app_class = f"{cls.__module__}:{cls.__qualname__}"
        return ExecutionPlan(
            app.job_name,
            app.job_id,
            "high-level",
            self.streams,
            operators,
            tables,
            joins,
            self._edges(),
            [job],
            app_class=app_class,
            descriptor=app,
        )

    def _operators(self, stage_of: dict[str, str]) -> dict[str, OperatorInfo]:
        result: dict[str, OperatorInfo] = {}
        for spec in self.app.all_operator_specs():
            result[spec.op_id] = OperatorInfo(
                spec.op_id,
                spec.op_type,
                spec.op_code,
                [up.op_id for up in spec.upstream_specs],
                [down.op_id for down in spec.registered_operator_specs],
                stage_of.get(spec.op_id),
                spec.properties(),
            )
            if isinstance(spec, (OutputOperatorSpec, PartitionByOperatorSpec)):
                self.streams[spec.output_stream.stream_id].producers.add(spec.op_id)
        return result

    def _tables(self, upstream: dict[str, set[str]], stage_of: dict[str, str]) -> dict[str, TableInfo]:
        tables = {tid: TableInfo(tid, list(t.side_inputs)) for tid, t in self.app.tables.items()}
        for spec in self.app.operators.values():
            if isinstance(spec, SendToTableOperatorSpec):
                tables[spec.table_spec.table_id].written_by.add(spec.op_id)
            elif isinstance(spec, StreamTableJoinOperatorSpec):
                tables[spec.table_spec.table_id].joined_by.add(spec.op_id)
        for tid, info in tables.items():
            info.upstream.update(upstream.get(f"table:{tid}", ()))
            users = sorted(info.written_by | info.joined_by)
            info.stage = stage_of.get(users[0]) if users else None
        return tables

    def _edges(self) -> list[Edge]:
        edges: list[Edge] = []
        for spec in self.app.all_operator_specs():
            if isinstance(spec, InputOperatorSpec):
                edges.append(Edge(spec.stream_id, "stream", spec.op_id, "operator"))
            for down in spec.registered_operator_specs:
                edges.append(Edge(spec.op_id, "operator", down.op_id, "operator"))
            if isinstance(spec, (OutputOperatorSpec, PartitionByOperatorSpec)):
                edges.append(Edge(spec.op_id, "operator", spec.output_stream.stream_id, "stream"))
            elif isinstance(spec, SendToTableOperatorSpec):
                edges.append(Edge(spec.op_id, "operator", spec.table_spec.table_id, "table"))
            elif isinstance(spec, StreamTableJoinOperatorSpec):
                edges.append(Edge(spec.table_spec.table_id, "table", spec.op_id, "operator"))
        for table in self.app.tables.values():
            for sid in table.side_inputs:
                edges.append(Edge(sid, "stream", table.table_id, "table"))
        # a merge or join registered twice on one upstream is one edge
        unique = {(e.source_kind, e.source, e.target_kind, e.target): e for e in edges}
        return list(unique.values())
