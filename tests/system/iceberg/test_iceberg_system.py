"""The iceberg system: Parquet files → pass-through job → an Iceberg table, exactly once.

SIGKILL ten times while the job writes the table — at points it has reached (before a table
commit, between the table commit and the checkpoint, mid-processing), signalled by a marker file
the fault hook writes — then run it to the end: every input row is in the table exactly once, and
after every kill the table is readable (by a fresh pyiceberg reader) and holds no row twice. Two
containers append to one table and both land (conflicts retried), each container's checkpoint tag on
its newest commit. A row that does not fit the
table's schema fails the job naming the table and the row.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog import load_catalog

from samza_dagster.config import Config
from samza_dagster.runtime import run_job
from samza_dagster.runtime.process_runner import ProcessJobRunner
from samza_dagster.system import OutgoingMessageEnvelope, SystemStream
from samza_dagster.system.iceberg import IcebergSystemFactory, IcebergSystemProducer
from samza_dagster.system.iceberg.checkpoints import TAG_PREFIX, checkpoint_tag, table_checkpoints
from samza_dagster.task.api import BatchStreamTask, StreamTask
from tests.kill_points import KillPoint, Kills, ThreadedRun, fault_points, kill_at_each_point

ROWS = 4_000
FILES = 4
SEED = 40


class SlowCopyTask(StreamTask):
    """Copies each row to ice.copy, a little slowly, pausing mid-processing when a fault asks."""

    def init(self, context):
        self.points = fault_points(context.config)
        self.out = SystemStream("ice", "copy")
        self.delay = context.config.get_int("test.process.delay.us", 0) / 1e6

    def process(self, envelope, collector, coordinator):
        self.points.at("process")
        time.sleep(self.delay)
        collector.send(OutgoingMessageEnvelope(self.out, envelope.message))


class SlowColumnarCopyTask(BatchStreamTask):
    """SlowCopyTask on the columnar path: takes each batch as a pyarrow Table (the files
    consumer's Arrow batches, no row objects) and sends it on whole."""

    batch_format = "arrow"

    def init(self, context):
        self.points = fault_points(context.config)
        self.out = SystemStream("ice", "copy")
        self.delay = context.config.get_int("test.process.delay.us", 0) / 1e6

    def process_batch(self, table, collector, coordinator):
        assert isinstance(table, pa.Table), type(table)
        self.points.at("process")
        time.sleep(self.delay * table.num_rows)
        collector.send_table(self.out, table)


#: each task, with the range of its k-th ``process`` call a kill lands after (per row, per batch)
COPY_TASKS = {"rows": ("SlowCopyTask", (50, 300)), "columnar": ("SlowColumnarCopyTask", (2, 12))}


class _FaultyIcebergProducer(IcebergSystemProducer):
    def commit_checkpoints(self, container_id, checkpoints):
        points = fault_points(self._config)
        points.at("before-table-commit")
        made = super().commit_checkpoints(container_id, checkpoints)
        points.at("after-table-commit")  # the table holds the commit; the checkpoint stream does not yet
        return made


class FaultyIcebergFactory(IcebergSystemFactory):
    producer_class: type[_FaultyIcebergProducer] = _FaultyIcebergProducer

    def get_producer(self, system_name, config):
        producer = self.producer_class(system_name, config)
        producer._config = config
        return producer


def _write_lake(root: Path) -> None:
    per_file = ROWS // FILES
    for n in range(FILES):
        ids = list(range(n * per_file, (n + 1) * per_file))
        table = pa.table({"id": ids, "city": [f"city-{i % 7}" for i in ids], "amount": [i * 0.5 for i in ids]})
        path = root / "trips" / f"part-{n % 2}-{n}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path, row_group_size=100)


def _config(tmp_path: Path, **extra: str) -> Config:
    entries = {
        "job.name": "to-iceberg",
        "job.factory.class": "process",
        "job.processing.guarantee": "exactly-once",
        "systems.files.samza.factory": "files",
        "systems.files.files.root": str(tmp_path / "lake"),
        "systems.files.files.fetch.size": "50",
        "systems.files.partitioner.defaultPartitioner.groupPattern": "part-[id]-.*",
        "systems.ice.samza.factory": "tests.system.iceberg.test_iceberg_system:FaultyIcebergFactory",
        "systems.ice.iceberg.catalog.type": "sql",
        "systems.ice.iceberg.catalog.uri": f"sqlite:///{tmp_path}/catalog.db",
        "systems.ice.iceberg.catalog.warehouse": f"file://{tmp_path}/warehouse",
        # commits as often as task.commit.ms says: the kills land at the first table commits
        "systems.ice.iceberg.commit.interval.ms": "0",
        "systems.log.samza.factory": "log",
        "systems.log.log.path": str(tmp_path / "log"),
        "task.inputs": "files.trips",
        "task.class": "tests.system.iceberg.test_iceberg_system:SlowCopyTask",
        "task.commit.ms": "1000",
    }
    entries.update(extra)
    return Config(entries)


def _table_ids(tmp_path: Path) -> list[int]:
    """The table as a fresh reader sees it now (nothing: no table yet)."""
    catalog = load_catalog(
        "ice", type="sql", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/warehouse"
    )
    if not catalog.table_exists(("samza", "copy")):
        return []
    return catalog.load_table(("samza", "copy")).scan().to_arrow()["id"].to_pylist()


@pytest.mark.parametrize("path", sorted(COPY_TASKS))
def test_sigkill_ten_times_while_writing_a_table_leaves_every_row_exactly_once(tmp_path, path):
    task, (first, last) = COPY_TASKS[path]
    _write_lake(tmp_path / "lake")
    rnd = random.Random(SEED)
    phases = ["after-table-commit", "before-table-commit", "process"]
    points = [
        KillPoint(phase, rnd.randint(1, 2) if phase != "process" else rnd.randint(first, last))
        for phase in (phases[kill % len(phases)] for kill in range(10))
    ]
    kills = Kills(tmp_path / "faults", points)
    task_class = f"tests.system.iceberg.test_iceberg_system:{task}"
    config = _config(
        tmp_path,
        **{"task.commit.ms": "500", "test.process.delay.us": "3000", "task.class": task_class, **kills.config},
    )

    def readable_and_no_row_twice(point: KillPoint) -> None:
        ids = _table_ids(tmp_path)  # readable at every moment, and never a row twice
        duplicates = [i for i, n in Counter(ids).items() if n > 1]
        assert not duplicates, f"after the kill at {point}: rows twice in the table: {duplicates[:10]}"

    kill_at_each_point(kills, lambda: ThreadedRun(ProcessJobRunner(config).run), readable_and_no_row_twice)
    assert kills.landed == points

    result = run_job(_config(tmp_path, **{"task.class": task_class}))
    assert result.succeeded, result.summary_line()
    assert Counter(_table_ids(tmp_path)) == Counter(range(ROWS))


def test_two_containers_append_to_one_table_and_both_land(tmp_path):
    _write_lake(tmp_path / "lake")
    config = _config(
        tmp_path,
        **{"job.factory.class": "thread", "job.container.count": "2", "task.commit.ms": "500"},
    )
    result = run_job(config)
    assert result.succeeded, result.summary_line()
    assert Counter(_table_ids(tmp_path)) == Counter(range(ROWS))
    catalog = load_catalog(
        "ice", type="sql", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/warehouse"
    )
    table = catalog.load_table(("samza", "copy"))
    writers = {s.summary.get("samza.container") for s in table.metadata.snapshots}
    assert writers == {"0", "1"}
    commits = {s.container_id: s.metrics["table_commits"]["samza.copy"] for s in result.summaries}
    assert sum(c["rows"] for c in commits.values()) == ROWS
    assert all(c["commits"] >= 1 for c in commits.values())


def test_each_containers_tag_follows_its_newest_commit_through_a_conflicting_commit(tmp_path):
    """Container 1 commits on a table container 0 has moved on since it loaded it: pyiceberg's own
    retry re-stages the snapshot, and the container's tag still lands on it (snapshot expiry keeps
    tagged snapshots: tests/spark/test_spark_iceberg.py)."""
    config = _config(tmp_path, **{"systems.ice.samza.factory": "iceberg"})
    producers = [IcebergSystemProducer("ice", config) for _ in range(2)]
    copy = SystemStream("ice", "copy")
    for n, producer in enumerate(producers):  # both load the table before either commits again
        producer.send("t", OutgoingMessageEnvelope(copy, {"id": n}))
        producer.commit_checkpoints(str(n), {f"Partition {n}": b'{"n": 0}'})
        producer.send("t", OutgoingMessageEnvelope(copy, {"id": 10 + n}))
        producer.flush("t")
    made = [p.commit_checkpoints(str(n), {f"Partition {n}": b'{"n": 1}'}) for n, p in enumerate(producers)]
    catalog = load_catalog("ice", **{k: v for k, v in config.subset("systems.ice.iceberg.catalog.").items()})
    table = catalog.load_table(("samza", "copy"))
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == [0, 1, 10, 11]
    tags = {name: ref.snapshot_id for name, ref in table.metadata.refs.items() if name.startswith(TAG_PREFIX)}
    assert tags == {checkpoint_tag("to-iceberg-1", str(n)): made[n][0].snapshot_id for n in range(2)}
    assert table.current_snapshot().snapshot_id == made[1][0].snapshot_id
    assert table.current_snapshot().parent_snapshot_id == made[0][0].snapshot_id  # container 1 retried over 0
    assert table_checkpoints(table, "to-iceberg-1", ["Partition 0", "Partition 1"]) == {
        "Partition 0": b'{"n": 1}',
        "Partition 1": b'{"n": 1}',
    }


class MisfitTask(StreamTask):
    """Sends a row whose ``id`` is a string after the table has integer ids."""

    def process(self, envelope, collector, coordinator):
        row = dict(envelope.message)
        if row["id"] == 1500:
            row["id"] = "fifteen hundred"
        collector.send(OutgoingMessageEnvelope(SystemStream("ice", "copy"), row))


def test_a_row_that_does_not_fit_the_table_fails_the_job_naming_table_and_row(tmp_path):
    _write_lake(tmp_path / "lake")
    config = _config(
        tmp_path,
        **{
            "job.factory.class": "thread",
            "task.class": "tests.system.iceberg.test_iceberg_system:MisfitTask",
            "systems.ice.iceberg.buffer.rows": "100",
        },
    )
    result = run_job(config)
    assert not result.succeeded
    assert "iceberg table samza.copy" in result.error and "fifteen hundred" in result.error, result.error
    assert all(n == 1 for n in Counter(_table_ids(tmp_path)).values())  # what was committed is whole and once


def test_timed_commits_of_a_container_writing_a_table_are_spaced_by_the_tables_commit_interval(tmp_path):
    """``task.commit.ms=50`` would make a snapshot every 50 ms; the table's commit interval
    (``iceberg.commit.interval.ms``) spaces them, and a job's last commit still happens at its end."""
    _write_lake(tmp_path / "lake")

    def snapshots(interval_ms: str, name: str) -> tuple[int, float]:  # snapshots the job made, seconds
        config = _config(
            tmp_path,
            **{
                "job.name": name,
                "job.factory.class": "thread",
                "job.processing.guarantee": "at-least-once",
                "systems.ice.samza.factory": "iceberg",
                "systems.ice.iceberg.commit.interval.ms": interval_ms,
                "task.commit.ms": "50",
                "test.process.delay.us": "400",
            },
        )
        started = time.monotonic()
        result = run_job(config)
        elapsed = time.monotonic() - started
        assert result.succeeded, result.summary_line()
        catalog = load_catalog(
            "ice", type="sql", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/warehouse"
        )
        table = catalog.load_table(("samza", "copy"))
        made = [s for s in table.snapshots() if s.summary and s.summary.get("samza.job", "").startswith(name)]
        return len(made), elapsed

    # unspaced, the same job made a snapshot per 50 ms and slowed to a crawl: pyiceberg copies the
    # table's metadata, which grows with every snapshot, at each commit
    spaced, spaced_s = snapshots("1000", "spaced")
    assert 2 <= spaced <= spaced_s / 1.0 + 2, (spaced, spaced_s)


def test_the_default_catalog_is_under_the_jobs_log_root_whatever_the_processs_environment_says(tmp_path, monkeypatch):
    """A container runs where the environment may be another job's (a Spark worker started for an
    earlier one): the job's config — which the CLI and the Dagster resource set from
    ``SAMZA_LOG_PATH`` or ``log_path`` — names the catalog's root, the environment only when it
    names none."""
    from samza_dagster.system.iceberg.config import IcebergSystemConfig

    monkeypatch.setenv("SAMZA_LOG_PATH", str(tmp_path / "another-jobs-root"))
    config = Config(
        {"job.name": "j", "systems.log.samza.factory": "log", "systems.log.log.path": str(tmp_path / "log")}
    )
    uri = IcebergSystemConfig.from_config("ice", config).catalog_properties["uri"]
    assert uri == f"sqlite:///{tmp_path / 'log' / 'iceberg' / 'ice' / 'catalog.db'}"
    # no log path in the config: the deployment's root
    bare = Config({"job.name": "j", "systems.log.samza.factory": "log"})
    uri = IcebergSystemConfig.from_config("ice", bare).catalog_properties["uri"]
    assert uri.startswith(f"sqlite:///{tmp_path / 'another-jobs-root'}")
