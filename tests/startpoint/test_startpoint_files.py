"""Timestamp startpoints on a files stream: by the files' modification times (row 0 of the first file,
in offset order, modified at or after the time), or by the stream's timestamp column (the first row
at or after it, mid-file) — set from outside the job, then applied at its next start, which reads
from there; a time after every file or row is refused naming the partition, nothing written."""

from __future__ import annotations

import os
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from samza_dagster.runtime import run_job
from samza_dagster.runtime.startpoints import list_startpoints, set_startpoints
from samza_dagster.startpoint import StartpointError, StartpointTimestamp
from tests.system.files.test_files_columnar import _config, _output  # ArrowCopy: files.events → files.out

DAY = 86_400_000
T0 = 1_709_251_200_000  # 2024-03-01T00:00:00Z


def _lake(tmp_path):
    """One partition of three files, a day apart by name, modification time and event time: 100
    rows each, ``ts`` every 10 minutes from the file's day."""
    for n, name in enumerate(("part-0-a.parquet", "part-0-b.parquet", "part-0-c.parquet")):
        ids = list(range(n * 100, n * 100 + 100))
        ts = pa.array([T0 + n * DAY + i * 600_000 for i in range(100)], pa.timestamp("ms", "UTC"))
        path = tmp_path / "lake" / "events" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": ids, "amount": [i / 4 for i in ids], "ts": ts}), path)
        os.utime(path, ns=((T0 + n * DAY) * 1_000_000,) * 2)


@pytest.mark.parametrize(
    ("extra", "at", "offset", "first_id"),
    [
        ({}, T0 + DAY // 2, "part-0-b.parquet:0", 100),  # modified on day 1: file b, whole
        ({"streams.events.files.timestamp.column": "ts"}, T0 + DAY + 3_600_000, "part-0-b.parquet:6", 106),
    ],
    ids=["modification-time", "timestamp-column"],
)
def test_a_timestamp_startpoint_on_files_resolves_and_the_job_reads_from_there(tmp_path, extra, at, offset, first_id):
    _lake(tmp_path)
    config = _config(tmp_path, **{"streams.events.samza.system": "files", **extra})
    ssp_offsets = set_startpoints(config, "files.events", StartpointTimestamp(at)).offsets
    assert list(ssp_offsets.values()) == [offset]
    assert [sp.timestamp for sp in list_startpoints(config).values()] == [at]  # type: ignore[attr-defined]
    result = run_job(config)
    assert result.succeeded, result.summary_line()
    assert Counter(_output(tmp_path / "lake")["id"].to_pylist()) == Counter(range(first_id, 300))


def test_a_time_after_every_file_or_row_is_refused_naming_the_partition(tmp_path):
    _lake(tmp_path)
    late = T0 + 3 * DAY
    for extra in ({}, {"streams.events.files.timestamp.column": "ts"}):
        config = _config(tmp_path, **{"streams.events.samza.system": "files", **extra})
        with pytest.raises(StartpointError, match=r"files.events partition 0: no message at or after that time"):
            set_startpoints(config, "files.events", StartpointTimestamp(late))
        assert list_startpoints(config) == {}
    wrong = _config(tmp_path, **{"streams.events.samza.system": "files", "streams.events.files.timestamp.column": "id"})
    assert list(set_startpoints(wrong, "files.events", StartpointTimestamp(150)).offsets.values()) == [
        "part-0-b.parquet:50"  # an integer column: epoch milliseconds
    ]
    missing = _config(
        tmp_path, **{"streams.events.samza.system": "files", "streams.events.files.timestamp.column": "t"}
    )
    with pytest.raises(Exception, match=r"no column 't' \(the stream's timestamp column, streams.events.files"):
        set_startpoints(missing, "files.events", StartpointTimestamp(T0))
