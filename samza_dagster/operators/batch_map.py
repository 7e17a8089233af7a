"""``map_batches``: the high-level API's operator over batches of messages (beyond Samza).

The operator keeps what reaches it until the task's batch is done (``flush``), then hands it to
the user's function as one pandas DataFrame or Arrow table and passes the result on. The task
(:class:`~samza_dagster.operators.task.BatchOperatorTask`) flushes every batch map, upstream ones
first, at the end of each batch and after anything else that sends messages into the graph
(a window's timer, a watermark, a partition's end), so nothing waits across a commit, a window
or a watermark, and the order of messages within a partition is kept.

Two ways in. Messages one at a time (``__call__``), like every operator's (operators/impl.py):
a dict message's keys are the columns; a ``KV`` (after ``partition_by``, or from a keyed input)
is the columns ``key`` and ``value``; any other message is one value of the column ``message``.
Or Arrow record batches whole (``add_batch``): an input that reads columns (the files system)
straight into a batch map arrives as the batches it read, with no Python object per row — the
function gets them as one table (one per schema, when a partition's files differ).

Two ways out. To an output stream whose system appends tables (Iceberg, files) the result goes
whole (``collector.send_table``), unless it is a batch of plain values or KVs (below). Anything
else gets each row as a message: a dict — a ``KV`` when the columns are exactly ``key`` and
``value``, the value alone when the only column is ``message`` — so a map_batches over strings
returns strings and one over KVs returns KVs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from samza_dagster.application.kv import KV
from samza_dagster.operators.errors import OperatorError

#: the column holding messages that are neither dicts nor KVs
MESSAGE_COLUMN = "message"
KV_COLUMNS = ["key", "value"]


def _columns(messages: list[Any]) -> dict[str, list[Any]] | list[Any]:
    """The messages as columns (KVs, plain values) or as the records they are (dicts)."""
    first = messages[0]
    if isinstance(first, Mapping):
        return messages
    if isinstance(first, KV):
        return {"key": [m[0] for m in messages], "value": [m[1] for m in messages]}
    return {MESSAGE_COLUMN: messages}


def _messages(columns: list[Any], records: Callable[[], list[Any]], column: Callable[[str], list[Any]]) -> list[Any]:
    if columns == [MESSAGE_COLUMN]:
        return column(MESSAGE_COLUMN)
    if columns == KV_COLUMNS:
        return [KV(k, v) for k, v in zip(column("key"), column("value"), strict=True)]
    return records()


Next = Callable[[Any], None]


def _to_pandas(messages: list[Any]) -> Any:
    import pandas as pd  # imported when a job uses map_batches: the engine does not need it

    columns = _columns(messages)
    return pd.DataFrame.from_records(columns) if isinstance(columns, list) else pd.DataFrame(columns)


def _pandas_columns(frame: Any, op_id: str) -> list[Any]:
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise OperatorError(
            f"operator {op_id!r}: the map_batches function returned {type(frame).__name__}, not a pandas DataFrame"
        )
    return list(frame.columns)


def _from_pandas(frame: Any, columns: list[Any]) -> list[Any]:
    return _messages(columns, lambda: frame.to_dict("records"), lambda c: frame[c].tolist())


def _to_arrow(messages: list[Any]) -> Any:
    import pyarrow as pa

    columns = _columns(messages)
    return pa.Table.from_pylist(columns) if isinstance(columns, list) else pa.table(columns)


def _arrow_columns(table: Any, op_id: str) -> list[str]:
    import pyarrow as pa

    if not isinstance(table, (pa.Table, pa.RecordBatch)):
        raise OperatorError(
            f"operator {op_id!r}: the map_batches function returned {type(table).__name__}, not a pyarrow Table"
        )
    return list(table.column_names)


def _from_arrow(table: Any, columns: list[str]) -> list[Any]:
    return _messages(columns, table.to_pylist, lambda c: table.column(c).to_pylist())


def _tables(batches: list[Any]) -> list[Any]:
    """Record batches as tables without copying, one per run of batches sharing a schema."""
    import pyarrow as pa

    tables, group = [], [batches[0]]
    for batch in batches[1:]:
        if batch.schema != group[0].schema:
            tables.append(pa.Table.from_batches(group))
            group = []
        group.append(batch)
    tables.append(pa.Table.from_batches(group))
    return tables


#: format → (messages to a batch, a result's columns (checking its type), a result's messages)
_FORMATS: dict[str, tuple[Callable[[list[Any]], Any], Callable[[Any, str], list[Any]], Callable[..., list[Any]]]] = {
    "pandas": (_to_pandas, _pandas_columns, _from_pandas),
    "pyarrow": (_to_arrow, _arrow_columns, _from_arrow),
}


class TableOutput:
    """A downstream output stream whose system appends tables: a result goes to it whole
    (``send_table``), or — a batch of plain values or KVs — one message at a time (``row``: the
    output's per-message operator)."""

    __slots__ = ("send_table", "row")

    def __init__(self, send_table: Callable[[Any], None], row: Next) -> None:
        self.send_table = send_table
        self.row = row


class BatchMap:
    """Collects the messages (or record batches) of the current batch; ``flush`` maps them as
    one batch. ``tables`` are the downstream outputs that take a result whole; ``nxt`` the
    others, one message at a time (None when there are none)."""

    __slots__ = ("op_id", "fn", "nxt", "tables", "pending", "batches", "_pandas", "_to_batch", "_columns", "_rows")

    def __init__(
        self,
        op_id: str,
        fn: Callable[[Any], Any],
        batch_format: str,
        nxt: Next | None,
        tables: list[TableOutput] | None = None,
    ) -> None:
        self.op_id = op_id
        self.fn = fn
        self.nxt = nxt
        self.tables = tables or []
        self.pending: list[Any] = []
        #: Arrow record batches handed over whole (``add_batch``)
        self.batches: list[Any] = []
        self._pandas = batch_format == "pandas"
        self._to_batch, self._columns, self._rows = _FORMATS[batch_format]

    def __call__(self, message: Any) -> None:
        self.pending.append(message)

    def add_batch(self, batch: Any) -> None:
        """A ``pyarrow.RecordBatch`` of rows, as a columnar input read it."""
        self.batches.append(batch)

    def flush(self) -> None:
        if self.pending:
            messages, self.pending = self.pending, []
            self._map(self._to_batch, messages, len(messages))
        if self.batches:
            batches, self.batches = self.batches, []
            for table in _tables(batches):
                self._map(_as_pandas if self._pandas else _as_is, table, table.num_rows)

    def _map(self, to_batch: Callable[[Any], Any], what: Any, count: int) -> None:
        try:
            result = self.fn(to_batch(what))
        except OperatorError:
            raise
        except Exception as exc:
            raise OperatorError(
                f"operator {self.op_id!r}: the map_batches function failed on a batch of {count} "
                f"messages: {type(exc).__name__}: {exc}"
            ) from exc
        columns = self._columns(result, self.op_id)
        rows: list[Any] | None = None
        if self.tables:
            whole = columns != [MESSAGE_COLUMN] and columns != KV_COLUMNS
            for output in self.tables:
                if whole:
                    output.send_table(result)
                    continue
                rows = self._rows(result, columns) if rows is None else rows
                row = output.row
                for out in rows:
                    row(out)
        nxt = self.nxt
        if nxt is not None:
            for out in self._rows(result, columns) if rows is None else rows:
                nxt(out)


def _as_pandas(table: Any) -> Any:
    return table.to_pandas()


def _as_is(table: Any) -> Any:
    return table
