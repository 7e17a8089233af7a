"""Rows (dicts of column → value) into Arrow record batches, for the systems that write tables
and files (files, iceberg): one batch per write, and a row that does not fit is one clear error.

The first batch's schema is inferred by pyarrow — its columns are the first row's — and after that
every row must fit it: no column it does not have, and values of its columns' types (a missing
column is null). A row
that does not fit fails the write with a :class:`TableWriteError` naming where it goes, the row
and pyarrow's cause — never dropped, never silently truncated to the schema.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from samza_dagster.system.errors import TableWriteError

_PREVIEW = 200


def _preview(row: object) -> str:
    text = repr(row)
    return text if len(text) <= _PREVIEW else text[:_PREVIEW] + "..."


def rows_to_batch(rows: list[Any], schema: pa.Schema | None, where: str) -> pa.RecordBatch:
    """``rows`` as one record batch of ``schema`` (inferred from them when None)."""
    if not rows:
        raise TableWriteError(f"{where}: no rows to write")  # a programming error: callers write only rows
    first = rows[0]
    names = set(schema.names) if schema is not None else set(first) if isinstance(first, dict) else set()
    for row in rows:
        if not isinstance(row, dict):
            raise TableWriteError(f"{where}: a message is not a row (a dict of column to value): {_preview(row)}")
        if not row.keys() <= names:
            extra = sorted(map(str, set(row) - names))
            raise TableWriteError(
                f"{where}: row {_preview(row)} has column(s) {', '.join(extra)} that the schema "
                f"({', '.join(sorted(map(str, names)))}) does not"
            )
    try:
        return pa.RecordBatch.from_pylist(rows, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError) as exc:
        raise _bad_row(rows, schema, where, exc) from None


def _bad_row(rows: list[Any], schema: pa.Schema | None, where: str, exc: BaseException) -> TableWriteError:
    """The first row that does not convert on its own (or against the first row's types)."""
    if schema is None and rows:
        try:
            schema = pa.RecordBatch.from_pylist(rows[:1]).schema
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError) as first:
            return TableWriteError(f"{where}: row {_preview(rows[0])} does not convert to Arrow: {first}")
    for row in rows:
        try:
            pa.RecordBatch.from_pylist([row], schema=schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError) as cause:
            return TableWriteError(f"{where}: row {_preview(row)} does not fit the schema ({schema}): {cause}")
    return TableWriteError(f"{where}: the rows do not convert to Arrow: {exc}")


def as_arrow_table(data: Any, where: str) -> pa.Table:
    """A batch a task sent whole (``send_table``) as a ``pyarrow.Table``: a Table as it is, a
    RecordBatch wrapped (no copy), a pandas DataFrame converted (without its index)."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if type(data).__name__ == "DataFrame" and hasattr(data, "to_dict"):  # pandas, loaded only if the task uses it
        return pa.Table.from_pandas(data, preserve_index=False)
    raise TableWriteError(
        f"{where}: send_table takes a pyarrow Table or RecordBatch or a pandas DataFrame, not {type(data).__name__}"
    )


def fit_table(table: pa.Table, schema: pa.Schema, where: str) -> pa.Table:
    """``table`` with ``schema``'s columns in its order and types: a column the schema lacks is an
    error naming it, a column the table lacks is null, a value that does not cast is an error
    naming its column (and the first row of the batch that holds one)."""
    if table.schema.equals(schema):
        return table
    extra = [name for name in table.column_names if schema.get_field_index(name) < 0]
    if extra:
        raise TableWriteError(
            f"{where}: the batch has column(s) {', '.join(extra)} that the schema ({', '.join(schema.names)}) does not"
        )
    columns = []
    for field in schema:
        if table.schema.get_field_index(field.name) < 0:
            columns.append(pa.nulls(table.num_rows, field.type))
            continue
        column = table.column(field.name)
        try:
            columns.append(column.cast(field.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            raise TableWriteError(
                f"{where}: column {field.name!r} ({column.type}) does not fit the schema's {field.type}"
                f"{_first_bad_value(column, field.type)}: {str(exc).strip().splitlines()[0]}"
            ) from None
    return pa.Table.from_arrays(columns, schema=schema)


def _first_bad_value(column: pa.ChunkedArray, target: pa.DataType) -> str:
    """`` at row N (value V)`` for the first value of ``column`` that does not cast to ``target``
    (found by halving: a handful of casts, not one per row)."""
    lo, hi = 0, len(column)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            column.slice(lo, mid - lo).cast(target)
            lo = mid
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            hi = mid
    if hi - lo != 1:
        return ""
    return f" at row {lo} of the batch (value {_preview(column[lo].as_py())})"
