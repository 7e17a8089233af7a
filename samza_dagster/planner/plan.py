"""ExecutionPlan: what the planner decided, and its JSON (what ``samza-dagster plan`` prints and
what the Dagster assets are built from).

JSON schema (``schema_version`` 1; keys sorted, lists sorted unless their order is stated)::

    {
      "schema_version": 1,
      "application": {"job_name": str, "job_id": str, "api": "high-level" | "low-level",
                      "app_class": str | null, "task_class": str | null},
      "streams": {                       # every stream the job touches, by stream id
        "<stream id>": {
          "id", "system", "physical_name",
          "partitions": int | null,      # null only for an output whose count is unknown
          "role": "intermediate" | "side-input" | "bootstrap" | "input" | "output",
          "roles": [...],                # all that apply (a stream may be read and written)
          "bootstrap": bool,             # ...samza.bootstrap
          "bounded": bool,               # streams.<id>.samza.bounded
          "priority": int | null,        # chooser priority of a stream the job reads: the
                                         # configured ...samza.priority, else bootstrap streams
                                         # one above the highest configured (>= 1), others 0;
                                         # null for a stream only written
          "producers": [operator id],    # send_to / partition_by operators writing it
          "consumers": [operator id],    # input operators reading it
          "tables": [table id],          # tables a side-input stream fills
          "upstream": [stream id]        # lineage: streams whose messages flow into it
        }
      },
      "intermediate_streams": {"<stream id>": int},
      "operators": {
        "<operator id>": {"id", "type", "op_code", "stage",
                          "inputs": [operator id], "outputs": [operator id],
                          ...type-specific fields: "stream", "table", "function", "ttl_ms",
                          "left", "right", "window", "key_function", "value_function"}
      },
      "tables": {"<table id>": {"id", "side_inputs", "written_by", "joined_by", "upstream", "stage"}},
      "joins": [{"operator", "type": "join" | "stream_table_join", "table": str | null,
                 "streams": [stream id], "partitions": int}],           # sorted by operator
      "edges": [{"from", "from_kind", "to", "to_kind"}],   # kinds: stream | operator | table
      "jobs": [{"name", "id", "inputs", "side_inputs", "outputs", "intermediate_streams",
                "stages": [                                  # in data-flow order
                  {"id": "stage-<n>", "inputs", "side_inputs", "outputs",
                   "intermediate_outputs", "tables", "operators"}]}]
    }

Stages split the job at partition_by boundaries: a stage's operators are connected without
crossing an intermediate stream (operators sharing a table stay in one stage, since they share
the task's store). The control-message work uses them to know which stages produce each
intermediate stream.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from samza_dagster.model import StreamSpec

if TYPE_CHECKING:
    from samza_dagster.application.app import StreamApplicationDescriptor

SCHEMA_VERSION = 1

ROLE_ORDER = ("intermediate", "side-input", "bootstrap", "input", "output")


@dataclass
class StreamInfo:
    id: str
    system: str
    physical_name: str
    partitions: int | None
    roles: set[str]
    bootstrap: bool = False
    bounded: bool = False
    priority: int | None = None
    producers: set[str] = field(default_factory=set)
    consumers: set[str] = field(default_factory=set)
    tables: set[str] = field(default_factory=set)
    upstream: set[str] = field(default_factory=set)

    @property
    def role(self) -> str:
        return next(r for r in ROLE_ORDER if r in self.roles)

    @property
    def is_intermediate(self) -> bool:
        return "intermediate" in self.roles

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "system": self.system,
            "physical_name": self.physical_name,
            "partitions": self.partitions,
            "role": self.role,
            "roles": sorted(self.roles, key=ROLE_ORDER.index),
            "bootstrap": self.bootstrap,
            "bounded": self.bounded,
            "priority": self.priority,
            "producers": sorted(self.producers),
            "consumers": sorted(self.consumers),
            "tables": sorted(self.tables),
            "upstream": sorted(self.upstream),
        }


@dataclass
class OperatorInfo:
    id: str
    type: str
    op_code: str
    inputs: list[str]
    outputs: list[str]
    stage: str | None = None
    properties: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = dict(self.properties)
        data.update(
            id=self.id, type=self.type, op_code=self.op_code, stage=self.stage,
            inputs=sorted(self.inputs), outputs=sorted(self.outputs),
        )
        return data


@dataclass
class TableInfo:
    id: str
    side_inputs: list[str]
    written_by: set[str] = field(default_factory=set)
    joined_by: set[str] = field(default_factory=set)
    upstream: set[str] = field(default_factory=set)
    stage: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "side_inputs": sorted(self.side_inputs),
            "written_by": sorted(self.written_by),
            "joined_by": sorted(self.joined_by),
            "upstream": sorted(self.upstream),
            "stage": self.stage,
        }


@dataclass
class JoinInfo:
    operator: str
    type: str
    table: str | None
    streams: list[str]
    partitions: int | None

    def to_dict(self) -> dict[str, Any]:
        return {"operator": self.operator, "type": self.type, "table": self.table,
                "streams": sorted(self.streams), "partitions": self.partitions}


@dataclass
class Edge:
    source: str
    source_kind: str
    target: str
    target_kind: str

    def to_dict(self) -> dict[str, str]:
        return {"from": self.source, "from_kind": self.source_kind, "to": self.target, "to_kind": self.target_kind}

    def sort_key(self) -> tuple[str, str, str, str]:
        return (self.source_kind, self.source, self.target_kind, self.target)


@dataclass
class Stage:
    """A part of the job between partition_by boundaries."""

    id: str
    inputs: list[str]
    side_inputs: list[str]
    outputs: list[str]
    intermediate_outputs: list[str]
    tables: list[str]
    operators: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "inputs": sorted(self.inputs),
            "side_inputs": sorted(self.side_inputs),
            "outputs": sorted(self.outputs),
            "intermediate_outputs": sorted(self.intermediate_outputs),
            "tables": sorted(self.tables),
            "operators": sorted(self.operators),
        }


@dataclass
class JobInfo:
    name: str
    id: str
    stages: list[Stage]
    inputs: list[str]
    side_inputs: list[str]
    outputs: list[str]
    intermediate_streams: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "id": self.id,
            "inputs": sorted(self.inputs),
            "side_inputs": sorted(self.side_inputs),
            "outputs": sorted(self.outputs),
            "intermediate_streams": sorted(self.intermediate_streams),
            "stages": [stage.to_dict() for stage in self.stages],
        }


@dataclass
class ExecutionPlan:
    job_name: str
    job_id: str
    api: str
    streams: dict[str, StreamInfo]
    operators: dict[str, OperatorInfo]
    tables: dict[str, TableInfo]
    joins: list[JoinInfo]
    edges: list[Edge]
    jobs: list[JobInfo]
    app_class: str | None = None
    task_class: str | None = None
    #: the described graph (None for a low-level job): the runtime executes its specs
    descriptor: StreamApplicationDescriptor | None = field(default=None, repr=False, compare=False)

    @property
    def intermediate_streams(self) -> dict[str, int]:
        return {sid: s.partitions for sid, s in self.streams.items() if s.is_intermediate and s.partitions}

    def streams_with_role(self, role: str) -> list[StreamInfo]:
        return [s for s in self.streams.values() if role in s.roles]

    def stream_specs(self) -> list[StreamSpec]:
        """StreamSpecs of the intermediate streams, for the runner to create before starting."""
        return [
            StreamSpec(s.id, s.physical_name, s.system, s.partitions or 1)
            for s in sorted(self.streams.values(), key=lambda s: s.id)
            if s.is_intermediate
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "application": {
                "job_name": self.job_name,
                "job_id": self.job_id,
                "api": self.api,
                "app_class": self.app_class,
                "task_class": self.task_class,
            },
            "streams": {sid: s.to_dict() for sid, s in self.streams.items()},
            "intermediate_streams": dict(self.intermediate_streams),
            "operators": {oid: o.to_dict() for oid, o in self.operators.items()},
            "tables": {tid: t.to_dict() for tid, t in self.tables.items()},
            "joins": [j.to_dict() for j in sorted(self.joins, key=lambda j: j.operator)],
            "edges": [e.to_dict() for e in sorted(self.edges, key=Edge.sort_key)],
            "jobs": [job.to_dict() for job in self.jobs],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, indent=2)
