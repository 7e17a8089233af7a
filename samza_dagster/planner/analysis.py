"""Phases 1 and 2 of the partition-count calculation of Samza's ExecutionPlanner.

1. *OperatorSpec graph analysis*: one traversal from every input (and intermediate) operator
   builds SendToTable → {StreamTableJoin of the same table} (:class:`SendToTableVisitor`); a
   second traversal per input, through :class:`SendToTableConnector` (the virtual
   connections), finds the joins each input reaches — InputOperatorSpecs grouped by join.
   The same traversal records which output/intermediate streams and tables each input feeds
   (stream lineage for the plan).
2. *Conversion to StreamEdges*: each group becomes the set of its stream ids, with the
   side-input streams of a stream-table join's table added (side inputs have no operator).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from samza_dagster.application.app import StreamApplicationDescriptor
from samza_dagster.application.specs import (
    JOIN_SPEC_TYPES,
    InputOperatorSpec,
    OperatorSpec,
    OutputOperatorSpec,
    PartitionByOperatorSpec,
    SendToTableOperatorSpec,
    StreamTableJoinOperatorSpec,
)
from samza_dagster.planner.graph_utils import traverse


class SendToTableVisitor:
    """Observes SendToTable and StreamTableJoin operators, by table id."""

    def __init__(self) -> None:
        self.send_to_tables: dict[str, list[SendToTableOperatorSpec]] = {}
        self.stream_table_joins: dict[str, list[StreamTableJoinOperatorSpec]] = {}

    def __call__(self, spec: OperatorSpec) -> None:
        if isinstance(spec, SendToTableOperatorSpec):
            self.send_to_tables.setdefault(spec.table_spec.table_id, []).append(spec)
        elif isinstance(spec, StreamTableJoinOperatorSpec):
            self.stream_table_joins.setdefault(spec.table_spec.table_id, []).append(spec)

    def send_to_table_to_stream_table_join(self) -> dict[int, list[StreamTableJoinOperatorSpec]]:
        """SendToTable (by id()) → the stream-table joins sharing its table."""
        result: dict[int, list[StreamTableJoinOperatorSpec]] = {}
        for table_id, senders in self.send_to_tables.items():
            joins = self.stream_table_joins.get(table_id, [])
            for sender in senders:
                result[id(sender)] = joins
        return result


class SendToTableConnector:
    """``next_vertices`` with virtual SendToTable → StreamTableJoin connections."""

    def __init__(self, connections: dict[int, list[StreamTableJoinOperatorSpec]]) -> None:
        self._connections = connections

    def __call__(self, spec: OperatorSpec) -> Iterable[OperatorSpec]:
        if isinstance(spec, SendToTableOperatorSpec):
            return self._connections.get(id(spec), ())
        return spec.registered_operator_specs


@dataclass
class _ReachVisitor:
    """What one source reaches: joins, and streams/tables it writes."""

    joins: list[OperatorSpec] = field(default_factory=list)
    streams: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)

    def __call__(self, spec: OperatorSpec) -> None:
        if isinstance(spec, JOIN_SPEC_TYPES):
            self.joins.append(spec)
        elif isinstance(spec, (OutputOperatorSpec, PartitionByOperatorSpec)):
            self.streams.append(spec.output_stream.stream_id)
        elif isinstance(spec, SendToTableOperatorSpec):
            self.tables.append(spec.table_spec.table_id)


@dataclass
class JoinGroup:
    """The streams whose partition counts must agree because of one join."""

    join: OperatorSpec
    stream_ids: list[str]

    @property
    def table_id(self) -> str | None:
        return self.join.table_spec.table_id if isinstance(self.join, StreamTableJoinOperatorSpec) else None


@dataclass
class GraphAnalysis:
    groups: list[JoinGroup]
    #: stream or ``table:<id>`` → the source streams feeding it (lineage)
    upstream: dict[str, set[str]]


def analyze(app: StreamApplicationDescriptor) -> GraphAnalysis:
    inputs: list[InputOperatorSpec] = list(app.input_operators.values())

    # Phase 1a: SendToTable → StreamTableJoins of the same table.
    tables_visitor = SendToTableVisitor()
    visited: set[int] = set()
    # traverse's vertex type is every operator, not only the inputs it starts from
    roots: list[OperatorSpec] = list(inputs)
    for root in roots:
        traverse(root, tables_visitor, _registered, visited)
    connector = SendToTableConnector(tables_visitor.send_to_table_to_stream_table_join())

    # Phase 1b: input → joins reached through the virtual connections.
    join_inputs: dict[int, tuple[OperatorSpec, list[str]]] = {}
    upstream: dict[str, set[str]] = {}
    for spec, root in zip(inputs, roots, strict=True):
        reach = _ReachVisitor()
        traverse(root, reach, connector)
        for join in reach.joins:
            entry = join_inputs.setdefault(id(join), (join, []))
            entry[1].append(spec.stream_id)
        _record(upstream, spec.stream_id, reach)

    # Side inputs feed their table and, through it, every join of that table.
    for table in app.tables.values():
        if not table.side_inputs:
            continue
        reach = _ReachVisitor()
        seen: set[int] = set()
        joins: list[OperatorSpec] = list(tables_visitor.stream_table_joins.get(table.table_id, []))
        for join in joins:
            traverse(join, reach, connector, seen)
        for sid in table.side_inputs:
            upstream.setdefault(f"table:{table.table_id}", set()).add(sid)
            _record(upstream, sid, reach)

    # Phase 2: groups of stream ids, side inputs of joined tables added; in operator order.
    order = {id(op): i for i, op in enumerate(app.operators.values())}
    groups: list[JoinGroup] = []
    for join, stream_ids in sorted(join_inputs.values(), key=lambda e: order.get(id(e[0]), 0)):
        ids = list(dict.fromkeys(stream_ids))
        if isinstance(join, StreamTableJoinOperatorSpec):
            for sid in join.table_spec.side_inputs:
                if sid not in ids:
                    ids.append(sid)
        groups.append(JoinGroup(join, ids))
    return GraphAnalysis(groups, upstream)


def _registered(spec: OperatorSpec) -> list[OperatorSpec]:
    return spec.registered_operator_specs


def _record(upstream: dict[str, set[str]], source: str, reach: _ReachVisitor) -> None:
    for sid in reach.streams:
        upstream.setdefault(sid, set()).add(source)
    for tid in reach.tables:
        upstream.setdefault(f"table:{tid}", set()).add(source)
