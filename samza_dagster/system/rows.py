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
