"""The OperatorSpec graph: the logical description of an application, built exactly as the
user wrote it (as Samza's ``OperatorSpec`` classes).

* Every operator has a stable id ``<job.name>-<job.id>-<opcode>-<op_id or index>``; an input
  (or intermediate) stream's operator is named by its stream id, as in Samza.
* ``registered_operator_specs`` are the downstream operators, in registration order;
  ``upstream_specs`` the operators feeding this one (the planner and the plan JSON use both).
* ``partition_by`` ends in a terminal :class:`PartitionByOperatorSpec` writing the intermediate
  stream; the stream is read back by a separate intermediate :class:`InputOperatorSpec` — as in
  Samza, the two are connected only through the stream id, which is where a job can be split.
* :class:`SendToTableOperatorSpec` is terminal; :class:`StreamTableJoinOperatorSpec` only
  references the :class:`TableSpec` — the planner adds the virtual connection between them.

Each spec keeps what a runtime needs to execute it: user functions, serdes, TTLs, window
definitions, table specs and its downstream specs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from samza_dagster.application.windows import WindowDefinition

# Samza's OpCode names, lower-cased: they appear in operator ids.
INPUT = "input"
MAP = "map"
FLAT_MAP = "flat_map"
FILTER = "filter"
SINK = "sink"
SEND_TO = "send_to"
JOIN = "join"
WINDOW = "window"
MERGE = "merge"
PARTITION_BY = "partition_by"
#: beyond Samza: a map over batches of messages (pandas DataFrames or Arrow tables)
MAP_BATCHES = "map_batches"

#: the batch formats a ``map_batches`` function may take and return
BATCH_FORMATS = ("pandas", "pyarrow")


def function_name(fn: Any) -> str | None:
    """``module:qualname`` of a user function, for the plan (stable across runs)."""
    if fn is None:
        return None
    module = getattr(fn, "__module__", None) or type(fn).__module__
    qualname = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    return f"{module}:{qualname}"


@dataclass(eq=False)
class TableSpec:
    """A table of the application: its id, side-input streams (ids, resolved to systems) and
    serdes. ``side_input_fn`` turns a side-input message into table entries."""

    table_id: str
    side_inputs: tuple[str, ...] = ()
    side_input_systems: dict[str, str] = field(default_factory=dict)
    side_input_physical_names: dict[str, str] = field(default_factory=dict)
    side_input_fn: Callable[[Any], Any] | None = None
    key_serde: Any = None
    value_serde: Any = None


@dataclass(eq=False)
class OutputStreamImpl:
    """An output (or intermediate) stream the application writes to."""

    stream_id: str
    system: str
    physical_name: str
    serde: Any = None
    key_serde: Any = None
    kv: bool = False
    is_intermediate: bool = False
    partitions: int | None = None


class OperatorSpec:
    """Base of every operator spec. Identity-hashed: two specs are equal only if they are one."""

    op_code: str = ""
    #: The type name in the plan JSON; distinguishes e.g. map from filter and
    #: stream-stream from stream-table joins, which share Samza op codes.
    op_type: str = ""

    def __init__(self, op_id: str, user_op_id: str | None = None) -> None:
        self.op_id = op_id
        self.user_op_id = user_op_id
        self.registered_operator_specs: list[OperatorSpec] = []
        self.upstream_specs: list[OperatorSpec] = []

    def register_operator_spec(self, downstream: OperatorSpec) -> None:
        self.registered_operator_specs.append(downstream)
        downstream.upstream_specs.append(self)

    def properties(self) -> dict[str, Any]:
        """Operator-specific fields for the plan JSON."""
        return {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.op_id!r})"


class InputOperatorSpec(OperatorSpec):
    """An input stream, or an intermediate stream read back after ``partition_by``."""

    op_code = INPUT
    op_type = "input"

    def __init__(
        self,
        stream_id: str,
        system: str,
        physical_name: str,
        *,
        serde: Any = None,
        key_serde: Any = None,
        kv: bool = False,
        is_intermediate: bool = False,
        partitions: int | None = None,
    ) -> None:
        super().__init__(stream_id)
        self.stream_id = stream_id
        self.system = system
        self.physical_name = physical_name
        self.serde = serde
        self.key_serde = key_serde
        self.kv = kv
        self.is_intermediate = is_intermediate
        self.partitions = partitions

    def properties(self) -> dict[str, Any]:
        return {"stream": self.stream_id, "intermediate": self.is_intermediate, "kv": self.kv}


class _FunctionOperatorSpec(OperatorSpec):
    def __init__(self, op_id: str, user_op_id: str | None, fn: Callable[..., Any]) -> None:
        super().__init__(op_id, user_op_id)
        self.fn = fn

    def properties(self) -> dict[str, Any]:
        return {"function": function_name(self.fn)}


class MapOperatorSpec(_FunctionOperatorSpec):
    """``fn(message) -> message`` (None drops nothing: it is passed on, as Samza's map)."""

    op_code = MAP
    op_type = "map"


class BatchMapOperatorSpec(_FunctionOperatorSpec):
    """``fn(batch) -> batch``: a batch of messages as a pandas DataFrame or an Arrow table, one row
    per message (beyond Samza; operators/batch_map.py says how messages become rows and back)."""

    op_code = MAP_BATCHES
    op_type = "map_batches"

    def __init__(self, op_id: str, user_op_id: str | None, fn: Callable[..., Any], batch_format: str) -> None:
        super().__init__(op_id, user_op_id, fn)
        self.batch_format = batch_format

    def properties(self) -> dict[str, Any]:
        return {**super().properties(), "batch_format": self.batch_format}


class FlatMapOperatorSpec(_FunctionOperatorSpec):
    """``fn(message) -> iterable of messages``."""

    op_code = FLAT_MAP
    op_type = "flat_map"


class FilterOperatorSpec(_FunctionOperatorSpec):
    """``fn(message) -> bool``: the message passes on when true."""

    op_code = FILTER
    op_type = "filter"


class SinkOperatorSpec(_FunctionOperatorSpec):
    """``fn(message, collector, coordinator)``: terminal, the user sends what they want."""

    op_code = SINK
    op_type = "sink"


class MergeOperatorSpec(OperatorSpec):
    """Messages of every upstream stream pass on unchanged."""

    op_code = MERGE
    op_type = "merge"


class OutputOperatorSpec(OperatorSpec):
    """``send_to(output_stream)``: terminal; writes to ``output_stream``."""

    op_code = SEND_TO
    op_type = "send_to"

    def __init__(self, op_id: str, user_op_id: str | None, output_stream: OutputStreamImpl) -> None:
        super().__init__(op_id, user_op_id)
        self.output_stream = output_stream

    def properties(self) -> dict[str, Any]:
        return {"stream": self.output_stream.stream_id}


class PartitionByOperatorSpec(OperatorSpec):
    """Terminal: writes ``KV(key_fn(m), value_fn(m))`` to the intermediate stream, partitioned
    by the key. The stream is read back by an intermediate InputOperatorSpec."""

    op_code = PARTITION_BY
    op_type = "partition_by"

    def __init__(
        self,
        op_id: str,
        user_op_id: str | None,
        output_stream: OutputStreamImpl,
        key_fn: Callable[[Any], Any],
        value_fn: Callable[[Any], Any] | None,
    ) -> None:
        super().__init__(op_id, user_op_id)
        self.output_stream = output_stream
        self.key_fn = key_fn
        self.value_fn = value_fn

    def properties(self) -> dict[str, Any]:
        return {
            "stream": self.output_stream.stream_id,
            "key_function": function_name(self.key_fn),
            "value_function": function_name(self.value_fn),
        }


class JoinOperatorSpec(OperatorSpec):
    """A stream-stream join, registered downstream of both sides.

    ``fn(message, other_message)`` is applied to pairs whose keys (``key_fn`` on the left,
    ``other_key_fn`` on the right) match within ``ttl_ms``; ``left_spec``/``right_spec`` tell a
    runtime which side a message came from (Samza's partial joins)."""

    op_code = JOIN
    op_type = "join"

    def __init__(
        self,
        op_id: str,
        user_op_id: str | None,
        left_spec: OperatorSpec,
        right_spec: OperatorSpec,
        fn: Callable[[Any, Any], Any],
        key_fn: Callable[[Any], Any],
        other_key_fn: Callable[[Any], Any],
        ttl_ms: int,
        *,
        key_serde: Any = None,
        value_serde: Any = None,
        other_value_serde: Any = None,
    ) -> None:
        super().__init__(op_id, user_op_id)
        self.left_spec = left_spec
        self.right_spec = right_spec
        self.fn = fn
        self.key_fn = key_fn
        self.other_key_fn = other_key_fn
        self.ttl_ms = ttl_ms
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.other_value_serde = other_value_serde

    def properties(self) -> dict[str, Any]:
        return {
            "function": function_name(self.fn),
            "left": self.left_spec.op_id,
            "right": self.right_spec.op_id,
            "ttl_ms": self.ttl_ms,
        }


class StreamTableJoinOperatorSpec(OperatorSpec):
    """A stream-table join: ``fn(message, value_or_None)`` with the table's value at
    ``key_fn(message)``; a None result is dropped. References the TableSpec only."""

    op_code = JOIN
    op_type = "stream_table_join"

    def __init__(
        self,
        op_id: str,
        user_op_id: str | None,
        table_spec: TableSpec,
        fn: Callable[[Any, Any], Any],
        key_fn: Callable[[Any], Any],
    ) -> None:
        super().__init__(op_id, user_op_id)
        self.table_spec = table_spec
        self.fn = fn
        self.key_fn = key_fn

    def properties(self) -> dict[str, Any]:
        return {"function": function_name(self.fn), "table": self.table_spec.table_id}


class SendToTableOperatorSpec(OperatorSpec):
    """``send_to(table)``: terminal; messages are ``KV(key, value)`` pairs put into the table
    (a None value deletes the key)."""

    op_code = SEND_TO
    op_type = "send_to_table"

    def __init__(self, op_id: str, user_op_id: str | None, table_spec: TableSpec) -> None:
        super().__init__(op_id, user_op_id)
        self.table_spec = table_spec

    def properties(self) -> dict[str, Any]:
        return {"table": self.table_spec.table_id}


class WindowOperatorSpec(OperatorSpec):
    """Groups messages into panes per ``window`` and emits WindowPane values."""

    op_code = WINDOW
    op_type = "window"

    def __init__(self, op_id: str, user_op_id: str | None, window: WindowDefinition) -> None:
        super().__init__(op_id, user_op_id)
        self.window = window

    def properties(self) -> dict[str, Any]:
        props = self.window.describe()
        props["fold_function"] = function_name(self.window.fold)
        props["key_function"] = function_name(self.window.key_fn)
        return {"window": props}


JOIN_SPEC_TYPES = (JoinOperatorSpec, StreamTableJoinOperatorSpec)
