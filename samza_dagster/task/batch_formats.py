"""The columnar forms a batch task can take its batches in (``BatchStreamTask.batch_format``).

A run of :class:`~samza_dagster.model.ColumnarEnvelope` (an input that reads columns: the files
system) becomes a ``pyarrow.Table`` of its record batches without copying, one table per schema
(the files of one partition may differ: each keeps its own); a run of ordinary envelopes (the log,
Kafka) becomes the table of its messages — a dict's keys are the columns, any other message is
the column ``message``. ``"pandas"`` is that table as a DataFrame.

pyarrow (and pandas) load only when a task asks for a columnar form.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from samza_dagster.model import ColumnarEnvelope, IncomingMessageEnvelope
from samza_dagster.task.errors import BatchFormatError

#: the forms a batch task can take its batches in (``BatchStreamTask.batch_format``)
BATCH_FORMATS = ("envelopes", "arrow", "pandas")
#: the column of messages that are not dicts
MESSAGE_COLUMN = "message"


def columnar_format(task: object) -> str | None:
    """``"arrow"`` or ``"pandas"`` for a task that takes columnar batches; None for envelopes."""
    fmt = getattr(task, "batch_format", "envelopes")
    if fmt not in BATCH_FORMATS:
        raise BatchFormatError(
            f"task class {type(task).__module__}.{type(task).__qualname__}: batch_format {fmt!r} "
            f"is not one of {', '.join(BATCH_FORMATS)}"
        )
    return None if fmt == "envelopes" else str(fmt)


def rows_in(run: Sequence[IncomingMessageEnvelope]) -> int:
    """The messages a run holds: a columnar envelope's rows, one for any other envelope (a bad
    row of a files input sits among the batches as one)."""
    return sum(envelope.rows if type(envelope) is ColumnarEnvelope else 1 for envelope in run)  # type: ignore[attr-defined]


def columnar_batches(batch: Sequence[IncomingMessageEnvelope], fmt: str) -> Iterator[Any]:
    """The batch as tables (``fmt`` "arrow") or DataFrames ("pandas"), in offset order."""
    for table in _tables(batch):
        yield table.to_pandas() if fmt == "pandas" else table


def _tables(batch: Sequence[IncomingMessageEnvelope]) -> Iterator[Any]:
    import pyarrow as pa

    if type(batch[0]) is not ColumnarEnvelope:
        messages = [envelope.message for envelope in batch]
        if isinstance(messages[0], dict):
            yield pa.Table.from_pylist(messages)
        else:
            yield pa.table({MESSAGE_COLUMN: messages})
        return
    group: list[Any] = []
    for envelope in batch:
        record_batch = envelope.message
        if group and record_batch.schema != group[0].schema:
            yield pa.Table.from_batches(group)
            group = []
        group.append(record_batch)
    yield pa.Table.from_batches(group)


def table_rows(table: Any) -> list[dict[str, Any]]:
    """A pyarrow Table / RecordBatch or pandas DataFrame as one dict per row (for producers that
    take messages, not tables)."""
    to_pylist = getattr(table, "to_pylist", None)
    if callable(to_pylist):
        return list(to_pylist())
    to_dict = getattr(table, "to_dict", None)
    if callable(to_dict):
        return list(to_dict("records"))
    raise BatchFormatError(
        f"send_table takes a pyarrow Table or RecordBatch or a pandas DataFrame, not {type(table).__name__}"
    )
