"""Static facts about the spec graph the runtime needs, computed once per job:
operators in topological order, the input streams upstream of each operator (an operator is
at end-of-stream / has a watermark once those partitions of the task have), and store names."""

from __future__ import annotations

import graphlib
import re
from collections.abc import Iterable

from samza_dagster.application.app import StreamApplicationDescriptor
from samza_dagster.application.specs import (
    JoinOperatorSpec,
    OperatorSpec,
    WindowOperatorSpec,
)


def topological(specs: Iterable[OperatorSpec]) -> list[OperatorSpec]:
    """``specs`` in data-flow order (graphlib): upstream before downstream, ties in the order
    given and then in each operator's registration order. Edges to operators outside ``specs``
    are ignored; a cycle raises ``graphlib.CycleError`` (the descriptor refuses one when built)."""
    specs = list(specs)
    members = {id(s) for s in specs}
    sorter: graphlib.TopologicalSorter[OperatorSpec] = graphlib.TopologicalSorter()
    for spec in specs:  # first, so operators with no upstream are ready in the order given
        sorter.add(spec)
    for spec in specs:
        for down in spec.registered_operator_specs:
            if id(down) in members:
                sorter.add(down, spec)
    return list(sorter.static_order())


def upstream_inputs(app: StreamApplicationDescriptor) -> dict[str, set[str]]:
    """operator id → ids of the (input or intermediate) streams whose messages reach it."""
    result: dict[str, set[str]] = {}
    for spec in app.input_operators.values():
        stack: list[OperatorSpec] = [spec]
        seen: set[int] = set()
        while stack:
            s = stack.pop()
            if id(s) in seen:
                continue
            seen.add(id(s))
            result.setdefault(s.op_id, set()).add(spec.stream_id)
            stack.extend(s.registered_operator_specs)
    return result


def store_name(op_id: str, suffix: str = "") -> str:
    """A store name usable in ``stores.<name>.*`` keys (no dots)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", op_id) + suffix


def operator_stores(app: StreamApplicationDescriptor, op_ids: set[str]) -> dict[str, bool]:
    """store name → whether it needs a changelog (side-input tables are rebuilt from their
    side inputs instead)."""
    stores: dict[str, bool] = {}
    for spec in app.operators.values():
        if spec.op_id not in op_ids:
            continue
        if isinstance(spec, JoinOperatorSpec):
            stores[store_name(spec.op_id, "-L")] = True
            stores[store_name(spec.op_id, "-R")] = True
        elif isinstance(spec, WindowOperatorSpec):
            stores[store_name(spec.op_id, "-w")] = True
        table = getattr(spec, "table_spec", None)
        if table is not None:
            stores[store_name("table-" + table.table_id)] = not table.side_inputs
    return stores
