"""``map_batches``: the high-level API's operator over batches of messages (beyond Samza).

Messages reach the operator one at a time, like every operator's (operators/impl.py); it keeps
them until the task's batch is done (``flush``), then hands them to the user's function as one
pandas DataFrame or Arrow table and passes each row of the result on as a message. The task
(:class:`~samza_dagster.operators.task.BatchOperatorTask`) flushes every batch map, upstream ones
first, at the end of each batch and after anything else that sends messages into the graph
(a window's timer, a watermark, a partition's end), so no message waits across a commit, a window
or a watermark, and the order of messages within a partition is kept.

Rows: a dict message's keys are the columns; a ``KV`` (after ``partition_by``, or from a keyed
input) is the columns ``key`` and ``value``; any other message is one value of the column
``message``. Back: each row of the returned batch is a dict message — a ``KV`` when the columns
are exactly ``key`` and ``value``, the value alone when the only column is ``message`` — so a
map_batches over strings returns strings and one over KVs returns KVs.
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


def _messages(columns: list[str], records: Callable[[], list[Any]], column: Callable[[str], list[Any]]) -> list[Any]:
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


def _from_pandas(frame: Any, op_id: str) -> list[Any]:
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise OperatorError(
            f"operator {op_id!r}: the map_batches function returned {type(frame).__name__}, not a pandas DataFrame"
        )
    return _messages(list(frame.columns), lambda: frame.to_dict("records"), lambda c: frame[c].tolist())


def _to_arrow(messages: list[Any]) -> Any:
    import pyarrow as pa

    columns = _columns(messages)
    return pa.Table.from_pylist(columns) if isinstance(columns, list) else pa.table(columns)


def _from_arrow(table: Any, op_id: str) -> list[Any]:
    import pyarrow as pa

    if not isinstance(table, (pa.Table, pa.RecordBatch)):
        raise OperatorError(
            f"operator {op_id!r}: the map_batches function returned {type(table).__name__}, not a pyarrow Table"
        )
    return _messages(list(table.column_names), table.to_pylist, lambda c: table.column(c).to_pylist())


_FORMATS: dict[str, tuple[Callable[[list[Any]], Any], Callable[[Any, str], list[Any]]]] = {
    "pandas": (_to_pandas, _from_pandas),
    "pyarrow": (_to_arrow, _from_arrow),
}


class BatchMap:
    """Collects the messages of the current batch; ``flush`` maps them as one batch."""

    __slots__ = ("op_id", "fn", "nxt", "pending", "_to_batch", "_from_batch")

    def __init__(self, op_id: str, fn: Callable[[Any], Any], batch_format: str, nxt: Next) -> None:
        self.op_id = op_id
        self.fn = fn
        self.nxt = nxt
        self.pending: list[Any] = []
        self._to_batch, self._from_batch = _FORMATS[batch_format]

    def __call__(self, message: Any) -> None:
        self.pending.append(message)

    def flush(self) -> None:
        messages = self.pending
        if not messages:
            return
        self.pending = []
        try:
            result = self.fn(self._to_batch(messages))
        except OperatorError:
            raise
        except Exception as exc:
            raise OperatorError(
                f"operator {self.op_id!r}: the map_batches function failed on a batch of {len(messages)} "
                f"messages: {type(exc).__name__}: {exc}"
            ) from exc
        nxt = self.nxt
        for out in self._from_batch(result, self.op_id):
            nxt(out)
