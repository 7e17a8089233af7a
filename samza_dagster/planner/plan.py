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

from samza_dagster.codec import to_wire
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
    roles: set[str] = field(metadata={"wire": None})  # in wire_extras: in ROLE_ORDER, not sorted
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

    def wire_extras(self) -> dict[str, Any]:
        return {"role": self.role, "roles": sorted(self.roles, key=ROLE_ORDER.index)}

    def to_dict(self) -> dict[str, Any]:
        return to_wire(self)


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
            id=self.id,
            type=self.type,
            op_code=self.op_code,
            stage=self.stage,
            inputs=sorted(self.inputs),
            outputs=sorted(self.outputs),
        )
        return data


@dataclass
class TableInfo:
    id: str
    side_inputs: list[str] = field(metadata={"sorted": True})
    written_by: set[str] = field(default_factory=set)
    joined_by: set[str] = field(default_factory=set)
    upstream: set[str] = field(default_factory=set)
    stage: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return to_wire(self)


@dataclass
class JoinInfo:
    operator: str
    type: str
    table: str | None
    streams: list[str] = field(metadata={"sorted": True})
    partitions: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return to_wire(self)


@dataclass
class Edge:
    source: str = field(metadata={"wire": "from"})
    source_kind: str = field(metadata={"wire": "from_kind"})
    target: str = field(metadata={"wire": "to"})
    target_kind: str = field(metadata={"wire": "to_kind"})

    def to_dict(self) -> dict[str, str]:
        return to_wire(self)

    def sort_key(self) -> tuple[str, str, str, str]:
        return (self.source_kind, self.source, self.target_kind, self.target)


@dataclass
class Stage:
    """A part of the job between partition_by boundaries."""

    id: str
    inputs: list[str] = field(metadata={"sorted": True})
    side_inputs: list[str] = field(metadata={"sorted": True})
    outputs: list[str] = field(metadata={"sorted": True})
    intermediate_outputs: list[str] = field(metadata={"sorted": True})
    tables: list[str] = field(metadata={"sorted": True})
    operators: list[str] = field(metadata={"sorted": True})

    def to_dict(self) -> dict[str, Any]:
        return to_wire(self)


@dataclass
class JobInfo:
    name: str
    id: str
    stages: list[Stage]  # in data-flow order
    inputs: list[str] = field(metadata={"sorted": True})
    side_inputs: list[str] = field(metadata={"sorted": True})
    outputs: list[str] = field(metadata={"sorted": True})
    intermediate_streams: list[str] = field(metadata={"sorted": True})

    def to_dict(self) -> dict[str, Any]:
        return to_wire(self)


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
