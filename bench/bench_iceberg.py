"""B14: Parquet files → a pass-through job → an Iceberg table, against pyarrow + pyiceberg alone.

    python -m bench.bench_iceberg [rows] [repetitions]

``rows`` rows (id, a 20-character string, a double, a timestamp) in 4 Parquet files of 64 Ki-row
row groups. Each run is a fresh child process (bench/harness.py) with its own table:

* **baseline** — pyarrow reads the files in 1,024-row batches (the files system's default fetch)
  and pyiceberg appends them, 100,000 rows per append (one table commit each): the same reads and
  the same appends, with no stream processing around them;
* **job** — ``systems.files`` (1 partition: the 4 files grouped) → a batch task taking Arrow
  batches (``batch_format = "arrow"``) that sends each on whole (``send_table``) →
  ``systems.ice`` (iceberg, SQL catalog on SQLite), one container on the thread runner,
  at-least-once, ``iceberg.buffer.rows`` 100,000, commit every 60 s (Samza's default);
* **job-rows** — the same job with a StreamTask that sends each row on (the per-message path).

Prints rows/s of each (median, min–max), the ratio job / baseline per repetition (target ≥ 0.8),
and each run's peak RSS: a file larger than the container's buffer budget (50,000 envelopes)
never loads whole, so the job's RSS stays bounded by its buffers and one Iceberg buffer.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import column, fmt, isolated, load_average
from samza_dagster.system import OutgoingMessageEnvelope, SystemStream
from samza_dagster.task.api import BatchStreamTask, StreamTask

FILES = 4
BUFFER_ROWS = 100_000


class PassThroughRowTask(StreamTask):
    OUT = SystemStream("ice", "trips")

    def process(self, envelope, collector, coordinator):
        collector.send(OutgoingMessageEnvelope(self.OUT, envelope.message))


class PassThroughArrowTask(BatchStreamTask):
    """The columnar path: each Arrow batch of the files as it was read, sent on whole."""

    batch_format = "arrow"
    OUT = SystemStream("ice", "trips")

    def process_batch(self, table, collector, coordinator):
        collector.send_table(self.OUT, table)


#: the job's task per kind of run: the columnar path (the target) and the per-row one beside it
TASKS = {"job": "PassThroughArrowTask", "job-rows": "PassThroughRowTask"}


def write_lake(root: str, rows: int) -> None:
    import datetime

    import pyarrow as pa
    import pyarrow.parquet as pq

    per_file = rows // FILES
    base = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)
    for n in range(FILES):
        ids = pa.array(range(n * per_file, (n + 1) * per_file), pa.int64())
        table = pa.table(
            {
                "id": ids,
                "name": pa.array([f"rider-{i % 100_000:014d}" for i in range(len(ids))]),
                "amount": pa.array([i * 0.25 for i in range(len(ids))]),
                "ts": pa.array([base + datetime.timedelta(seconds=i) for i in range(len(ids))], pa.timestamp("us")),
            }
        )
        path = Path(root) / "lake" / "trips" / f"part-0-{n}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path, row_group_size=65_536)


def _catalog_props(root: str) -> dict[str, str]:
    return {"type": "sql", "uri": f"sqlite:///{root}/catalog.db", "warehouse": f"file://{root}/warehouse"}


def run_baseline(root: str, rows: int) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq
    import pyiceberg.io.pyarrow  # noqa: F401 - imported before the clock, as the job's modules are
    from pyiceberg.catalog import load_catalog

    files = sorted((Path(root) / "lake" / "trips").glob("*.parquet"))
    started = time.perf_counter()
    catalog = load_catalog("ice", **_catalog_props(root))
    catalog.create_namespace_if_not_exists("samza")
    table = None
    pending: list[pa.RecordBatch] = []
    count = 0
    for path in files:
        for batch in pq.ParquetFile(path).iter_batches(batch_size=1024):
            pending.append(batch)
            count += batch.num_rows
            if sum(b.num_rows for b in pending) >= BUFFER_ROWS:
                data = pa.Table.from_batches(pending)
                table = table or catalog.create_table_if_not_exists(("samza", "trips"), schema=data.schema)
                table.append(data)
                pending = []
    if pending:
        data = pa.Table.from_batches(pending)
        table = table or catalog.create_table_if_not_exists(("samza", "trips"), schema=data.schema)
        table.append(data)
    elapsed = time.perf_counter() - started
    assert count == rows, (count, rows)
    return {"rate": rows / elapsed, "seconds": elapsed}


def run_job_once(root: str, rows: int, task: str = TASKS["job"]) -> dict[str, Any]:
    # the modules a job loads as it starts, imported before the clock as the baseline's are: what
    # is timed is the work, not Python's first import of pyiceberg (a long-lived process, such as
    # a Dagster code server, has them loaded)
    import pyiceberg.io.pyarrow  # noqa: F401
    from pyiceberg.catalog import load_catalog
    from pyiceberg.catalog.sql import SqlCatalog  # noqa: F401

    import samza_dagster.system.files  # noqa: F401
    import samza_dagster.system.iceberg  # noqa: F401
    import samza_dagster.system.log  # noqa: F401
    from samza_dagster.config import Config
    from samza_dagster.runtime import run_job

    config = Config(
        {
            "job.name": "b14",
            "job.factory.class": "thread",
            "systems.files.samza.factory": "files",
            "systems.files.files.root": f"{root}/lake",
            "systems.files.partitioner.defaultPartitioner.groupPattern": "part-[id]-.*",
            "systems.ice.samza.factory": "iceberg",
            "systems.ice.iceberg.buffer.rows": str(BUFFER_ROWS),
            **{f"systems.ice.iceberg.catalog.{k}": v for k, v in _catalog_props(root).items()},
            "systems.log.samza.factory": "log",
            "systems.log.log.path": f"{root}/log",
            "task.inputs": "files.trips",
            "task.class": f"bench.bench_iceberg:{task}",
        }
    )
    started = time.perf_counter()
    result = run_job(config)
    elapsed = time.perf_counter() - started
    assert result.succeeded, result.summary_line()
    held = load_catalog("ice", **_catalog_props(root)).load_table(("samza", "trips"))
    total = int(held.current_snapshot().summary.get("total-records"))
    assert total == rows, (total, rows)
    return {"rate": rows / elapsed, "seconds": elapsed}


def measure(rows: int, repetitions: int) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="b14-") as tmp:
        write_lake(tmp, rows)
        results = []
        for rep in range(repetitions):
            for kind in ("baseline", *TASKS):
                root = Path(tmp) / f"{kind}-{rep}"
                root.mkdir()
                (root / "lake").symlink_to(Path(tmp) / "lake")
                if kind == "baseline":
                    result = isolated("bench.bench_iceberg:run_baseline", root=str(root), rows=rows)
                else:
                    result = isolated("bench.bench_iceberg:run_job_once", root=str(root), rows=rows, task=TASKS[kind])
                results.append({"kind": kind, "rep": rep, **result})
        return results


def report(results: list[dict[str, Any]], rows: int) -> str:
    base = [r for r in results if r["kind"] == "baseline"]
    job = [r for r in results if r["kind"] == "job"]
    per_row = [r for r in results if r["kind"] == "job-rows"]
    ratios = [j["rate"] / b["rate"] for b, j in zip(base, job, strict=True)]
    row_ratios = [j["rate"] / b["rate"] for b, j in zip(base, per_row, strict=True)]
    rss = max(column(job, "peak_rss_mb")) / max(column(base, "peak_rss_mb"))
    lines = [
        f"B14: {rows:,} rows, Parquet files → pass-through job → Iceberg (load {load_average()})",
        "",
        "| run | rows/s median (min–max) | peak RSS MB (max) |",
        "| --- | --- | --- |",
        f"| pyarrow read + pyiceberg append alone | {fmt(column(base, 'rate'))} | {max(column(base, 'peak_rss_mb')):,.0f} |",
        f"| files → columnar job (arrow batches) → iceberg | {fmt(column(job, 'rate'))} | {max(column(job, 'peak_rss_mb')):,.0f} |",
        f"| files → per-row job (StreamTask) → iceberg | {fmt(column(per_row, 'rate'))} | {max(column(per_row, 'peak_rss_mb')):,.0f} |",
        "",
        "ratio columnar job / baseline per repetition (target ≥ 0.8): " + ", ".join(f"{r:.2f}" for r in ratios),
        f"peak RSS columnar job / baseline (target ≤ 1.3): {rss:.2f}",
        "ratio per-row job / baseline per repetition: " + ", ".join(f"{r:.2f}" for r in row_ratios),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 400_000
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    print(report(measure(n, reps), n))
