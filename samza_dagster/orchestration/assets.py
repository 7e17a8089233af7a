"""Stream assets from an ExecutionPlan: the asset graph *is* the job graph.

Every stream of an application is an asset keyed ``[<application>, <stream id>]`` in the
application's group, tagged with its role and priority, with partitions/system/physical name as
metadata. Lineage is the plan's ``upstream`` edges.

* Streams the job only reads (inputs, bootstrap, side inputs) are external assets
  (``AssetSpec``): Dagster does not produce them. They are *observed*: their newest offsets are the
  data version, their lag behind the job's checkpoint is metadata (see :mod:`.observation`).
  Dagster 1.13 marks ``observable_source_asset`` beta; an ``AssetSpec`` plus observation events
  (from the job's op and from :func:`stream_observation_sensor`) is the stable route.
* Streams the job writes (intermediate, output) are materialized by the job's multi-asset
  (:mod:`.job_asset`). One written on an ``iceberg`` system is the table: kind ``iceberg``, its
  table name, and the I/O manager downstream assets load it with (:mod:`.tables`).
"""

from __future__ import annotations

import graphlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import dagster as dg

from samza_dagster.orchestration.errors import OrchestrationError
from samza_dagster.orchestration.tables import ICEBERG_IO_MANAGER_KEY, IcebergSystems, TableRef
from samza_dagster.planner.plan import ExecutionPlan, StreamInfo

READ_ROLES = ("bootstrap", "input", "side-input")
WRITTEN_ROLES = ("intermediate", "output")
ROLE_TAG = "samza/role"
PRIORITY_TAG = "samza/priority"
SYSTEM_TAG = "samza/system"


def asset_role(stream: StreamInfo, top_priority: int | None = None) -> str:
    """The role shown in Dagster: bootstrap, real-time, batch, intermediate, output, side-input.

    A plain input's tier comes from the chooser's view of it, as in Samza: with priorities set,
    the inputs of the job's highest priority are its real-time traffic and lower ones batch
    (``top_priority`` is that highest priority among the job's inputs). With no priorities to
    tell them apart, a bounded input (``streams.<id>.samza.bounded``) is batch, an unbounded one
    real-time. A bootstrap stream is ``bootstrap`` whatever its priority."""
    role = stream.role
    if role != "input":
        return role
    if stream.priority is not None and top_priority is not None and stream.priority < top_priority:
        return "batch"
    if stream.priority is not None and top_priority is not None:
        return "real-time"
    return "batch" if stream.bounded else "real-time"


def top_input_priority(streams: Iterable[StreamInfo]) -> int | None:
    """The highest chooser priority among plain inputs, or None when they do not differ (then
    the priorities do not tell real-time from batch)."""
    priorities = {s.priority if s.priority is not None else 0 for s in streams if s.role == "input"}
    return max(priorities) if len(priorities) > 1 else None


def is_written(stream: StreamInfo) -> bool:
    return any(r in stream.roles for r in WRITTEN_ROLES)


@dataclass(frozen=True)
class DeclaredOutput:
    """An output stream the plan cannot see: a low-level task's ``collector.send`` targets are
    code, not config, so its application declares them (``system.stream``, partition count)."""

    stream_id: str
    system: str
    physical_name: str
    partitions: int = 1

    @classmethod
    def parse(cls, entry: str, partitions: int = 1) -> DeclaredOutput:
        system, _, stream = entry.partition(".")
        if not system or not stream:
            raise OrchestrationError(f"declared output {entry!r} must be system.stream")
        return cls(stream, system, stream, partitions)


@dataclass
class StreamAssets:
    """The asset side of one application."""

    application: str
    group_name: str
    streams: dict[str, StreamInfo]
    keys: dict[str, dg.AssetKey]
    read_specs: list[dg.AssetSpec] = field(default_factory=list)
    written_specs: list[dg.AssetSpec] = field(default_factory=list)
    #: stream id → the Iceberg table it is (written streams of iceberg systems)
    tables: dict[str, TableRef] = field(default_factory=dict)

    @property
    def written_keys(self) -> list[dg.AssetKey]:
        return [s.key for s in self.written_specs]

    def read_streams(self) -> list[StreamInfo]:
        return [s for s in self.streams.values() if not is_written(s)]

    def written_streams(self) -> list[StreamInfo]:
        return [s for s in self.streams.values() if is_written(s)]


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


def stream_key(application: str, stream_id: str) -> dg.AssetKey:
    return dg.AssetKey([application, stream_id])


def stream_assets(
    plan: ExecutionPlan,
    *,
    application: str | None = None,
    group_name: str | None = None,
    declared_outputs: Sequence[DeclaredOutput] = (),
    owners: Sequence[str] = (),
    freshness: dg.FreshnessPolicy | None = None,
    iceberg: IcebergSystems | None = None,
) -> StreamAssets:
    """AssetSpecs of every stream of ``plan``. ``application`` (default: ``job.name``) prefixes
    the keys; ``group_name`` defaults to it. ``declared_outputs`` adds a low-level task's outputs,
    downstream of all its inputs. ``freshness`` is the policy of the streams the job writes (an
    unbounded job's; a bounded job's outputs are fresh whenever it last ran). ``iceberg`` names
    the job's iceberg systems: the streams it writes there are tables."""
    app = application or plan.job_name
    group = group_name or _group_name(app)
    streams: dict[str, StreamInfo] = dict(plan.streams)
    inputs = [sid for sid, s in streams.items() if not is_written(s)]
    for out in declared_outputs:
        if out.stream_id in streams:
            streams[out.stream_id].roles.add("output")
            continue
        streams[out.stream_id] = StreamInfo(
            out.stream_id, out.system, out.physical_name, out.partitions, {"output"}, upstream=set(inputs)
        )
    keys = {sid: stream_key(app, sid) for sid in streams}
    result = StreamAssets(app, group, streams, keys)
    top = top_input_priority(streams.values())
    for sid in sorted(streams):
        stream = streams[sid]
        spec = _spec(
            app, group, stream, keys, owners, asset_role(stream, top), freshness if is_written(stream) else None
        )
        table = iceberg.table(stream) if iceberg is not None and is_written(stream) else None
        if iceberg is not None and table is not None:
            result.tables[sid] = table
            spec = _table_spec(spec, app, table, iceberg)
        (result.written_specs if is_written(stream) else result.read_specs).append(spec)
    return result


def _table_spec(spec: dg.AssetSpec, app: str, table: TableRef, iceberg: IcebergSystems) -> dg.AssetSpec:
    """A written stream that is an Iceberg table: its kind, name, where its catalog is named, and
    the I/O manager downstream assets read it with."""
    return (
        spec.replace_attributes(
            description=f"Iceberg table {table.name} (system {table.system}) written by the Samza job of {app}; "
            f"downstream assets read it through the {ICEBERG_IO_MANAGER_KEY} resource",
            kinds={"samza", "iceberg"},
        )
        .merge_attributes(metadata=iceberg.spec_metadata(table))
        .with_io_manager_key(ICEBERG_IO_MANAGER_KEY)
    )


def _spec(
    app: str,
    group: str,
    stream: StreamInfo,
    keys: Mapping[str, dg.AssetKey],
    owners: Iterable[str],
    role: str,
    freshness: dg.FreshnessPolicy | None,
) -> dg.AssetSpec:
    tags = {ROLE_TAG: role, SYSTEM_TAG: _tag_value(stream.system)}
    if stream.priority is not None:
        tags[PRIORITY_TAG] = str(stream.priority)
    metadata: dict[str, object] = {
        "role": role,
        "roles": ", ".join(sorted(stream.roles)),
        "system": stream.system,
        "physical_name": stream.physical_name,
        "partitions": dg.MetadataValue.int(stream.partitions) if stream.partitions is not None else "unknown",
        "bounded": stream.bounded,
        "bootstrap": stream.bootstrap,
    }
    if stream.priority is not None:
        metadata["priority"] = dg.MetadataValue.int(stream.priority)
    if stream.tables:
        metadata["tables"] = ", ".join(sorted(stream.tables))
    deps = [keys[u] for u in sorted(stream.upstream) if u in keys and u != stream.id]
    partitions = (
        "? partitions"
        if stream.partitions is None
        else f"{stream.partitions} partition{'' if stream.partitions == 1 else 's'}"
    )
    return dg.AssetSpec(
        keys[stream.id],
        deps=deps,
        description=f"{role} stream {stream.system}.{stream.physical_name} ({partitions}) of {app}",
        metadata=metadata,
        group_name=group,
        tags=tags,
        kinds={"samza", _kind(stream.system)},
        owners=list(owners) or None,
        freshness_policy=freshness,
    )


def _kind(system: str) -> str:
    """The system's kind badge: ``log`` for the embedded log, else the system's name (``kafka``)."""
    return _tag_value(system).lower() or "samza"


def _group_name(app: str) -> str:
    """Dagster group names are identifiers."""
    return "".join(c if c.isalnum() or c == "_" else "_" for c in app)


def _tag_value(value: str) -> str:
    clean = "".join(c if c.isalnum() or c in "-_." else "_" for c in value)
    return clean[:63]
