"""Splitting a job at partition_by boundaries into stages (see :mod:`samza_dagster.planner.plan`)."""

from __future__ import annotations

import graphlib

from samza_dagster.application.app import StreamApplicationDescriptor
from samza_dagster.application.specs import (
    InputOperatorSpec,
    OperatorSpec,
    OutputOperatorSpec,
    PartitionByOperatorSpec,
    SendToTableOperatorSpec,
    StreamTableJoinOperatorSpec,
)
from samza_dagster.planner.plan import Stage


class _UnionFind:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, x: int) -> int:
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def split_stages(app: StreamApplicationDescriptor) -> tuple[list[Stage], dict[str, str]]:  # noqa: C901 - one graph walk; split when it next changes
    """Stages in data-flow order, and operator id → stage id."""
    specs = app.all_operator_specs()
    index = {id(spec): i for i, spec in enumerate(specs)}
    uf = _UnionFind(len(specs))
    by_table: dict[str, int] = {}
    for i, spec in enumerate(specs):
        for down in spec.registered_operator_specs:
            uf.union(i, index[id(down)])
        if isinstance(spec, (SendToTableOperatorSpec, StreamTableJoinOperatorSpec)):
            tid = spec.table_spec.table_id
            if tid in by_table:
                uf.union(i, by_table[tid])
            else:
                by_table[tid] = i

    members: dict[int, list[OperatorSpec]] = {}
    for i, spec in enumerate(specs):
        members.setdefault(uf.find(i), []).append(spec)

    # Order: a stage producing an intermediate stream before the stages reading it.
    produced_by: dict[str, int] = {}
    for root, group in members.items():
        for spec in group:
            if isinstance(spec, PartitionByOperatorSpec):
                produced_by[spec.output_stream.stream_id] = root
    deps: dict[int, set[int]] = {root: set() for root in members}
    for root, group in members.items():
        for spec in group:
            if isinstance(spec, InputOperatorSpec) and spec.is_intermediate:
                producer = produced_by.get(spec.stream_id)
                if producer is not None and producer != root:
                    deps[root].add(producer)
    order = _topological(sorted(members), deps)

    stages: list[Stage] = []
    stage_of: dict[str, str] = {}
    for n, root in enumerate(order):
        stage_id = f"stage-{n}"
        inputs: list[str] = []
        side_inputs: list[str] = []
        outputs: list[str] = []
        intermediates: list[str] = []
        tables: list[str] = []
        ops: list[str] = []
        for spec in members[root]:
            ops.append(spec.op_id)
            stage_of[spec.op_id] = stage_id
            if isinstance(spec, InputOperatorSpec):
                inputs.append(spec.stream_id)
            elif isinstance(spec, PartitionByOperatorSpec):
                intermediates.append(spec.output_stream.stream_id)
            elif isinstance(spec, OutputOperatorSpec):
                outputs.append(spec.output_stream.stream_id)
            elif isinstance(spec, (SendToTableOperatorSpec, StreamTableJoinOperatorSpec)):
                table = spec.table_spec
                if table.table_id not in tables:
                    tables.append(table.table_id)
                    side_inputs.extend(table.side_inputs)
        stages.append(Stage(stage_id, inputs, side_inputs, sorted(set(outputs)), intermediates, tables, ops))
    return stages, stage_of


def _topological(roots: list[int], deps: dict[int, set[int]]) -> list[int]:
    """Stages in dependency order (graphlib), ties broken by first operator: every stage whose
    dependencies are all placed becomes ready in ``roots`` order, level by level. Stages on a
    cycle, and those after one, follow in ``roots`` order."""
    sorter: graphlib.TopologicalSorter[int] = graphlib.TopologicalSorter()
    for root in roots:  # first, so stages that depend on nothing are ready in roots order
        sorter.add(root)
    for root in roots:  # in order, so each stage's dependents become ready in roots order
        sorter.add(root, *sorted(deps[root]))
    try:
        sorter.prepare()
    except graphlib.CycleError:
        pass  # get_ready() still hands out every stage not blocked by the cycle
    order: list[int] = []
    while ready := sorter.get_ready():
        order.extend(ready)
        sorter.done(*ready)
    placed = set(order)
    order.extend(r for r in roots if r not in placed)
    return order
