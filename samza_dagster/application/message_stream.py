"""MessageStream, OutputStream and Table: the fluent high-level API over the OperatorSpec graph.

Every method registers one operator spec downstream of this stream's spec and returns the
stream of its output (terminal operators return None), so the graph is built exactly as the
user wrote it. What user functions receive is described in
:mod:`samza_dagster.application.descriptors` (values, or ``KV`` pairs for keyed streams);
after ``partition_by`` messages are ``KV(key, value)``; after ``window`` they are
:class:`~samza_dagster.application.windows.WindowPane`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from samza_dagster.application.descriptors import TableDescriptor
from samza_dagster.application.errors import ApplicationError
from samza_dagster.application.specs import (
    BATCH_FORMATS,
    FILTER,
    FLAT_MAP,
    JOIN,
    MAP,
    MAP_BATCHES,
    MERGE,
    SEND_TO,
    SINK,
    WINDOW,
    BatchMapOperatorSpec,
    FilterOperatorSpec,
    FlatMapOperatorSpec,
    JoinOperatorSpec,
    MapOperatorSpec,
    MergeOperatorSpec,
    OperatorSpec,
    OutputOperatorSpec,
    OutputStreamImpl,
    SendToTableOperatorSpec,
    SinkOperatorSpec,
    StreamTableJoinOperatorSpec,
    TableSpec,
    WindowOperatorSpec,
)
from samza_dagster.application.windows import WindowDefinition


class ApplicationGraph(Protocol):
    """What a stream handle needs of the application descriptor that owns it (implemented by
    :class:`samza_dagster.application.app.StreamApplicationDescriptor`). A protocol here, so this
    module does not import ``app`` — which imports this one to hand out streams."""

    def _next_op_id(self, op_code: str, user_op_id: str | None) -> str: ...

    def _register_operator(self, spec: OperatorSpec) -> None: ...

    def _check_same_app(self, other: ApplicationGraph, op_id: str) -> None: ...

    def _defined_table(self, table: Table | TableDescriptor, op_id: str, verb: str) -> TableSpec: ...

    def _partition_by(
        self,
        stream: MessageStream,
        key_fn: Callable[[Any], Any],
        value_fn: Callable[[Any], Any] | None,
        user_op_id: str | None,
        serde: Any,
        key_serde: Any,
    ) -> MessageStream: ...


class OutputStream:
    """An output stream handle returned by ``get_output_stream``; pass it to ``send_to``."""

    __slots__ = ("app", "impl")

    def __init__(self, app: ApplicationGraph, impl: OutputStreamImpl) -> None:
        self.app = app
        self.impl = impl

    @property
    def stream_id(self) -> str:
        return self.impl.stream_id

    def __repr__(self) -> str:
        return f"OutputStream({self.impl.stream_id!r})"


class Table:
    """A table handle returned by ``get_table``; ``send_to`` it, or ``join`` a stream with it."""

    __slots__ = ("app", "spec")

    def __init__(self, app: ApplicationGraph, spec: TableSpec) -> None:
        self.app = app
        self.spec = spec

    @property
    def table_id(self) -> str:
        return self.spec.table_id

    def __repr__(self) -> str:
        return f"Table({self.spec.table_id!r})"


def _require_callable(fn: Any, what: str, op_id: str) -> None:
    if not callable(fn):
        raise ApplicationError(f"operator {op_id!r}: {what} must be callable, got {fn!r}", operator=op_id)


class MessageStream:
    """A stream of messages inside the application (Samza's ``MessageStream``)."""

    __slots__ = ("app", "spec")

    def __init__(self, app: ApplicationGraph, spec: OperatorSpec) -> None:
        self.app = app
        self.spec = spec

    def __repr__(self) -> str:
        return f"MessageStream(after {self.spec.op_id!r})"

    # -- one-in-one-out operators --------------------------------------------------------------
    def _chain(self, spec: OperatorSpec) -> MessageStream:
        self.spec.register_operator_spec(spec)
        self.app._register_operator(spec)
        return MessageStream(self.app, spec)

    def map(self, fn: Callable[[Any], Any], *, op_id: str | None = None) -> MessageStream:
        """``fn(message) -> new message``."""
        full_id = self.app._next_op_id(MAP, op_id)
        _require_callable(fn, "map function", full_id)
        return self._chain(MapOperatorSpec(full_id, op_id, fn))

    def map_batches(
        self, fn: Callable[[Any], Any], *, batch_format: str = "pandas", op_id: str | None = None
    ) -> MessageStream:
        """``fn(batch) -> batch`` over the messages of one batch at a time (beyond Samza): a
        pandas DataFrame (``batch_format="pandas"``) or an Arrow table (``"pyarrow"``) with one
        row per message — a dict message's keys are its columns, any other message is the column
        ``message`` — and each row ``fn`` returns passes on as one message (a dict; the value
        alone when the only column is ``message``). A batch is what the task was handed at once:
        up to ``task.consumer.batch.size`` messages of one input partition (default 4,096), never
        spanning a commit, a window or a watermark. The job's tasks then process batches: see
        docs/reference.md, "Batches"."""
        full_id = self.app._next_op_id(MAP_BATCHES, op_id)
        _require_callable(fn, "map_batches function", full_id)
        if batch_format not in BATCH_FORMATS:
            raise ApplicationError(
                f"operator {full_id!r}: batch_format must be one of {', '.join(BATCH_FORMATS)}, got {batch_format!r}",
                operator=full_id,
            )
        return self._chain(BatchMapOperatorSpec(full_id, op_id, fn, batch_format))

    def flat_map(self, fn: Callable[[Any], Iterable[Any]], *, op_id: str | None = None) -> MessageStream:
        """``fn(message) -> iterable of messages`` (each passed on)."""
        full_id = self.app._next_op_id(FLAT_MAP, op_id)
        _require_callable(fn, "flat_map function", full_id)
        return self._chain(FlatMapOperatorSpec(full_id, op_id, fn))

    def filter(self, fn: Callable[[Any], bool], *, op_id: str | None = None) -> MessageStream:
        """Keep the messages for which ``fn(message)`` is true."""
        full_id = self.app._next_op_id(FILTER, op_id)
        _require_callable(fn, "filter predicate", full_id)
        return self._chain(FilterOperatorSpec(full_id, op_id, fn))

    def window(self, window: WindowDefinition, *, op_id: str | None = None) -> MessageStream:
        """Group messages into panes (see :class:`~samza_dagster.application.windows.Windows`);
        the result is a stream of WindowPane."""
        full_id = self.app._next_op_id(WINDOW, op_id)
        if not isinstance(window, WindowDefinition):
            raise ApplicationError(
                f"operator {full_id!r}: window() expects a Windows.keyed_tumbling/tumbling/keyed_session "
                f"definition, got {window!r}",
                operator=full_id,
            )
        return self._chain(WindowOperatorSpec(full_id, op_id, window))

    # -- merge ---------------------------------------------------------------------------------
    def merge(self, *others: MessageStream | Iterable[MessageStream], op_id: str | None = None) -> MessageStream:
        """One stream with the messages of this stream and ``others`` (streams, or one iterable
        of streams as Samza's ``merge(Collection)``)."""
        streams: list[MessageStream] = []
        for other in others:
            if isinstance(other, MessageStream):
                streams.append(other)
            elif isinstance(other, Iterable) and not isinstance(other, (str, bytes)):
                streams.extend(other)
            else:
                raise ApplicationError(f"merge() expects MessageStreams, got {other!r}")
        full_id = self.app._next_op_id(MERGE, op_id)
        seen = {id(self.spec)}
        for other in streams:
            if not isinstance(other, MessageStream):
                raise ApplicationError(
                    f"operator {full_id!r}: merge() expects MessageStreams, got {other!r}", operator=full_id
                )
            self.app._check_same_app(other.app, full_id)
            if id(other.spec) in seen:
                raise ApplicationError(
                    f"operator {full_id!r}: the stream after {other.spec.op_id!r} is merged twice", operator=full_id
                )
            seen.add(id(other.spec))
        spec = MergeOperatorSpec(full_id, op_id)
        self.spec.register_operator_spec(spec)
        for other in streams:
            other.spec.register_operator_spec(spec)
        self.app._register_operator(spec)
        return MessageStream(self.app, spec)

    # -- re-partitioning -----------------------------------------------------------------------
    def partition_by(
        self,
        key: Callable[[Any], Any],
        value: Callable[[Any], Any] | None = None,
        *,
        op_id: str | None = None,
        serde: Any = None,
        key_serde: Any = None,
    ) -> MessageStream:
        """Re-partition by ``key(message)`` through the intermediate stream
        ``<job.name>-<job.id>-partition_by-<op_id>``; downstream sees ``KV(key, value)``
        (``value(message)``, or the message itself)."""
        return self.app._partition_by(self, key, value, op_id, serde, key_serde)

    # -- joins ---------------------------------------------------------------------------------
    def join(
        self,
        other: MessageStream | Table | TableDescriptor,
        fn: Callable[[Any, Any], Any],
        *,
        key: Callable[[Any], Any],
        other_key: Callable[[Any], Any] | None = None,
        ttl_ms: int | None = None,
        op_id: str | None = None,
        key_serde: Any = None,
        value_serde: Any = None,
        other_value_serde: Any = None,
    ) -> MessageStream:
        """Stream-stream join (``other`` a MessageStream: ``other_key`` and ``ttl_ms`` required)
        or stream-table join (``other`` a Table from ``get_table``: ``fn(message, value_or_None)``)."""
        full_id = self.app._next_op_id(JOIN, op_id)
        _require_callable(fn, "join function", full_id)
        _require_callable(key, "key", full_id)
        if isinstance(other, MessageStream):
            self.app._check_same_app(other.app, full_id)
            if other_key is None or ttl_ms is None:
                raise ApplicationError(
                    f"operator {full_id!r}: a stream-stream join needs other_key and ttl_ms", operator=full_id
                )
            _require_callable(other_key, "other_key", full_id)
            if isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int) or ttl_ms <= 0:
                raise ApplicationError(
                    f"operator {full_id!r}: ttl_ms must be a positive integer, got {ttl_ms!r}", operator=full_id
                )
            if other.spec is self.spec:
                raise ApplicationError(f"operator {full_id!r}: a stream cannot be joined with itself", operator=full_id)
            spec: OperatorSpec = JoinOperatorSpec(
                full_id,
                op_id,
                self.spec,
                other.spec,
                fn,
                key,
                other_key,
                ttl_ms,
                key_serde=key_serde,
                value_serde=value_serde,
                other_value_serde=other_value_serde,
            )
            self.spec.register_operator_spec(spec)
            other.spec.register_operator_spec(spec)
            self.app._register_operator(spec)
            return MessageStream(self.app, spec)
        if isinstance(other, (Table, TableDescriptor)):
            if other_key is not None or ttl_ms is not None:
                raise ApplicationError(
                    f"operator {full_id!r}: a stream-table join takes no other_key or ttl_ms", operator=full_id
                )
            table_spec = self.app._defined_table(other, full_id, "joins")
            return self._chain(StreamTableJoinOperatorSpec(full_id, op_id, table_spec, fn, key))
        raise ApplicationError(
            f"operator {full_id!r}: join() expects a MessageStream or a Table, got {other!r}", operator=full_id
        )

    # -- terminal operators --------------------------------------------------------------------
    def send_to(self, target: OutputStream | Table | TableDescriptor, *, op_id: str | None = None) -> None:
        """Send every message to an output stream (``get_output_stream``) or put it into a table
        (messages are ``KV(key, value)`` pairs)."""
        full_id = self.app._next_op_id(SEND_TO, op_id)
        if isinstance(target, OutputStream):
            self.app._check_same_app(target.app, full_id)
            self._chain(OutputOperatorSpec(full_id, op_id, target.impl))
            return None
        if isinstance(target, (Table, TableDescriptor)):
            table_spec = self.app._defined_table(target, full_id, "sends to")
            self._chain(SendToTableOperatorSpec(full_id, op_id, table_spec))
            return None
        raise ApplicationError(
            f"operator {full_id!r}: send_to() expects an output stream from get_output_stream or a Table "
            f"from get_table, got {target!r}",
            operator=full_id,
        )

    def sink(self, fn: Callable[..., Any], *, op_id: str | None = None) -> None:
        """Hand every message to ``fn(message, collector, coordinator)``."""
        full_id = self.app._next_op_id(SINK, op_id)
        _require_callable(fn, "sink function", full_id)
        self._chain(SinkOperatorSpec(full_id, op_id, fn))
        return None
