"""Exactly-once across a changelogged store and two Iceberg tables, under SIGKILL.

A stateful job reads Parquet files and, per row, counts the row's city in a RocksDB store whose
changelog is on the embedded log (the checkpoint system, whose transactions hold the changelog
writes), then sends the row to table ``copy`` and its running count to table ``tally``. Each
commit appends to ``copy`` first, then ``tally``, then commits the transaction that holds the
changelog writes and the checkpoint stream. The container is SIGKILLed at points it has reached —
between the two tables' commits (``copy`` holds the commit, ``tally`` and the changelog do not),
after both, before both, mid-restore, mid-process — and restarted after each.

Checked: every input row is in ``copy`` exactly once; every (partition, city)'s running counts in
``tally`` are exactly 1..n, each once — so each table got every row once even when the crash fell
between them, and the store was exact at every restart (a store restored past or short of the
checkpoint would repeat or skip a count). Both with rows one by one and with Arrow batches.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog import load_catalog

from samza_dagster.config import Config
from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.runtime import run_job
from samza_dagster.runtime.process_runner import ProcessJobRunner
from samza_dagster.task.api import BatchStreamTask, StreamTask
from tests.kill_points import KillPoint, Kills, ThreadedRun, fault_points, kill_at_each_point, with_kill_points
from tests.system.iceberg.test_iceberg_system import FaultyIcebergFactory, _FaultyIcebergProducer

ROWS = 2_000
CITIES = 7
COPY = SystemStream("ice", "copy")
TALLY = SystemStream("ice", "tally")


class TallyTask(StreamTask):
    """Counts each row's city in the store; sends the row to ``copy`` and its count to ``tally``."""

    def init(self, context):
        self.points = fault_points(context.config)
        self.store = context.get_store("tally")
        self.delay = context.config.get_int("test.process.delay.us", 0) / 1e6

    def process(self, envelope, collector, coordinator):
        self.points.at("process")
        time.sleep(self.delay)
        row = envelope.message
        n = (self.store.get(row["city"]) or 0) + 1
        self.store.put(row["city"], n)
        collector.send(OutgoingMessageEnvelope(COPY, row))
        collector.send(OutgoingMessageEnvelope(TALLY, {"id": row["id"], "city": row["city"], "n": n}))


class ColumnarTallyTask(BatchStreamTask):
    """TallyTask on Arrow batches: each batch goes to ``copy`` whole, its counts to ``tally`` as one table."""

    batch_format = "arrow"

    def init(self, context):
        self.points = fault_points(context.config)
        self.store = context.get_store("tally")
        self.delay = context.config.get_int("test.process.delay.us", 0) / 1e6

    def process_batch(self, table, collector, coordinator):
        self.points.at("process")
        time.sleep(self.delay * table.num_rows)
        counts = []
        for city in table["city"].to_pylist():
            n = (self.store.get(city) or 0) + 1
            self.store.put(city, n)
            counts.append(n)
        collector.send_table(COPY, table)
        collector.send_table(TALLY, pa.table({"id": table["id"], "city": table["city"], "n": counts}))


class _FaultyTablesProducer(_FaultyIcebergProducer):
    """Pauses for a kill before the tables' commits and after them (its parent), and between them."""

    def _commit(self, name, pending, props, container):
        made = super()._commit(name, pending, props, container)
        if name == COPY.stream:  # committed first (tables commit in name order): tally has not
            fault_points(self._config).at("between-tables")
        return made


class FaultyTablesFactory(FaultyIcebergFactory):
    producer_class = _FaultyTablesProducer


def _write_lake(root: Path) -> None:
    for part in range(2):
        ids = list(range(part, ROWS, 2))
        table = pa.table({"id": ids, "city": [f"city-{i % CITIES}" for i in ids]})
        path = root / "trips" / f"part-{part}-0.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path, row_group_size=100)


def _config(tmp_path: Path, task: str, **extra: str) -> Config:
    return Config(
        {
            "job.name": "tally",
            "job.factory.class": "process",
            "job.processing.guarantee": "exactly-once",
            "job.default.system": "log",
            "job.logged.store.base.dir": str(tmp_path / "state"),
            "systems.files.samza.factory": "files",
            "systems.files.files.root": str(tmp_path / "lake"),
            "systems.files.files.fetch.size": "50",
            "systems.files.partitioner.defaultPartitioner.groupPattern": "part-[id]-.*",
            "systems.ice.samza.factory": f"{__name__}:FaultyTablesFactory",
            "systems.ice.iceberg.catalog.type": "sql",
            "systems.ice.iceberg.catalog.uri": f"sqlite:///{tmp_path}/catalog.db",
            "systems.ice.iceberg.catalog.warehouse": f"file://{tmp_path}/warehouse",
            "systems.ice.iceberg.commit.interval.ms": "0",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(tmp_path / "log"),
            "stores.tally.factory": "rocksdb",
            "stores.tally.key.serde": "string",
            "stores.tally.msg.serde": "long",
            "stores.tally.changelog": "log.tally-changelog",
            "task.inputs": "files.trips",
            "task.class": f"{__name__}:{task}",
            "task.commit.ms": "300",
            **extra,
        }
    )


def _tables(tmp_path: Path) -> tuple[list[int], list[tuple[int, str, int]]]:
    """``copy``'s ids and ``tally``'s (id, city, n) rows, as a fresh reader sees them now."""
    catalog = load_catalog(
        "ice", type="sql", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/warehouse"
    )
    copy = catalog.load_table(("samza", "copy")).scan().to_arrow() if catalog.table_exists(("samza", "copy")) else None
    tally = (
        catalog.load_table(("samza", "tally")).scan().to_arrow() if catalog.table_exists(("samza", "tally")) else None
    )
    ids = copy["id"].to_pylist() if copy is not None else []
    counts = list(zip(*(tally[c].to_pylist() for c in ("id", "city", "n")), strict=True)) if tally is not None else []
    return ids, counts


def _check_tally(counts: list[tuple[int, str, int]], *, complete: bool) -> None:
    """Per (partition, city), the running counts are 1..n each once (a prefix of them while the
    job has not finished: a later commit may still add the rest)."""
    by_key: dict[tuple[int, str], list[int]] = {}
    for row_id, city, n in counts:
        by_key.setdefault((row_id % 2, city), []).append(n)
    for key, ns in by_key.items():
        assert sorted(ns) == list(range(1, len(ns) + 1)), f"{key}: counts {sorted(Counter(ns).items())[:12]}..."
    if complete:
        expected = Counter((i % 2, f"city-{i % CITIES}") for i in range(ROWS))
        assert {k: len(v) for k, v in by_key.items()} == dict(expected)


#: the kills of each run, in order; "between-tables" leaves ``copy`` ahead of ``tally`` and the store
PLANS = {
    "TallyTask": ["between-tables:1", "after-table-commit:1", "between-tables:2", "restore", "process:150"],
    "ColumnarTallyTask": ["between-tables:1", "after-table-commit:2", "between-tables:2", "process:6"],
}


@pytest.mark.parametrize("task", sorted(PLANS))
def test_sigkill_between_two_tables_and_a_changelogged_store_leaves_each_row_once_and_the_store_exact(tmp_path, task):
    _write_lake(tmp_path / "lake")
    points = [KillPoint.parse(p) for p in PLANS[task]]
    kills = Kills(tmp_path / "faults", points)
    # slow enough that a run makes several commits: the kills land at the second ones too
    config = with_kill_points(_config(tmp_path, task, **{"test.process.delay.us": "800"}), "log", kills)

    def no_row_twice_and_counts_exact(point: KillPoint) -> None:
        ids, counts = _tables(tmp_path)
        twice = [i for i, n in Counter(ids).items() if n > 1]
        assert not twice, f"after the kill at {point}: rows twice in copy: {twice[:10]}"
        _check_tally(counts, complete=False)

    kill_at_each_point(kills, lambda: ThreadedRun(ProcessJobRunner(config).run), no_row_twice_and_counts_exact)
    assert kills.landed == points

    result = run_job(_config(tmp_path, task))
    assert result.succeeded, result.summary_line()
    ids, counts = _tables(tmp_path)
    assert Counter(ids) == Counter(range(ROWS))
    assert sorted(row_id for row_id, _, _ in counts) == list(range(ROWS))
    _check_tally(counts, complete=True)
