"""The iceberg system's tables on Spark: Apache Iceberg's own Spark runtime (fetched from Maven
Central, samza_dagster/spark/iceberg.py) over the catalog a job wrote through pyiceberg.

clicks_lake's job (two containers, so two checkpoint-bearing commits per run) lands click events
in web.clicks on the thread runner; Spark, with catalog ``lake`` from the job's own config, reads
every row and every snapshot summary as pyiceberg does, appends rows pyiceberg then reads, and
expires snapshots without losing the ones whose summaries hold the job's checkpoints. One Spark
session for the module (a session costs 7-14 s)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import date

import pyarrow as pa
import pytest

from jobs.clicks_lake.data import clicks, load_clicks
from jobs.clicks_lake.scenario import load_config
from jobs.demo.runner import run_job
from samza_dagster.config.errors import ConfigError
from samza_dagster.system.iceberg.catalog import IcebergTables
from samza_dagster.system.iceberg.checkpoints import TAG_PREFIX, table_checkpoints
from samza_dagster.system.iceberg.config import IcebergSystemConfig

pytestmark = pytest.mark.spark

JOB = "clicks-lake-1"
TASKS = ["Partition 0", "Partition 1"]
COLUMNS = ["source_partition", "source_offset", "user_id", "page", "country", "clicked_at_us"]


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    """A log root whose web.clicks two runs of the job wrote (two containers each), the job's
    config, and a Spark session whose catalog ``lake`` is that system."""
    saved = os.environ.pop("SAMZA_LOG_PATH", None)  # the config's log.path is the root
    root = tmp_path_factory.mktemp("lake") / "log"
    config = load_config(root, **{"job.container.count": "2"})
    for n, day in enumerate((date(2024, 3, 1), date(2024, 3, 2))):
        load_clicks(config, clicks([day], 150, seed=40 + n))
        run_job(config, runner="thread")
    from samza_dagster.spark.iceberg import iceberg_session

    spark = iceberg_session(config, "lake", master="local[1]", app_name="test-spark-iceberg")
    yield config, spark
    spark.stop()
    if saved is not None:
        os.environ["SAMZA_LOG_PATH"] = saved


def _table(config):
    tables = IcebergTables(IcebergSystemConfig.from_config("lake", config))
    table = tables.load("clicks")
    assert table is not None
    return table


def _pyiceberg_rows(table) -> list[tuple]:
    data = table.scan().to_arrow()
    micros = data["clicked_at"].cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())
    data = data.append_column("clicked_at_us", micros)
    return sorted(tuple(r[c] for c in COLUMNS) for r in data.select(COLUMNS).to_pylist())


def _spark_rows(spark) -> list[tuple]:
    df = spark.sql(
        "SELECT source_partition, source_offset, user_id, page, country, unix_micros(clicked_at) AS clicked_at_us "
        "FROM lake.web.clicks"
    )
    return sorted(tuple(r) for r in df.collect())


def test_spark_reads_every_row_and_snapshot_summary_the_job_wrote(lake):
    config, spark = lake
    table = _table(config)
    rows = _pyiceberg_rows(table)
    assert len(rows) == 300 and len({(r[0], r[1]) for r in rows}) == 300
    assert _spark_rows(spark) == rows

    theirs = {s.snapshot_id: dict(s.summary.additional_properties) for s in table.metadata.snapshots}
    spark_snapshots = spark.sql("SELECT snapshot_id, summary FROM lake.web.clicks.snapshots").collect()
    ours = {r.snapshot_id: {k: v for k, v in r.summary.items() if k in theirs[r.snapshot_id]} for r in spark_snapshots}
    assert ours == theirs
    assert all(table_checkpoints(table, JOB, TASKS).values()) and len(table_checkpoints(table, JOB, TASKS)) == 2
    tags = {r.name: r.snapshot_id for r in spark.sql("SELECT name, snapshot_id FROM lake.web.clicks.refs").collect()}
    assert {name for name in tags if name.startswith(TAG_PREFIX)} == {f"{TAG_PREFIX}{JOB}-0", f"{TAG_PREFIX}{JOB}-1"}


def test_spark_appends_and_pyiceberg_reads_it_and_the_job_appends_after(lake):
    config, spark = lake
    before = _pyiceberg_rows(_table(config))
    spark.sql(
        "INSERT INTO lake.web.clicks SELECT clicked_at, user_id, '/spark' AS page, country, source_partition, "
        "source_offset + 1000000 AS source_offset FROM lake.web.clicks WHERE page = '/docs'"
    )
    docs = [r for r in before if r[3] == "/docs"]
    after = _pyiceberg_rows(_table(config))
    assert sorted(after) == sorted(before + [(r[0], r[1] + 1_000_000, r[2], "/spark", r[4], r[5]) for r in docs])
    assert _table(config).current_snapshot().summary["added-records"] == str(len(docs))

    # the job resumes over Spark's snapshot: only the new events land, once
    load_clicks(config, clicks([date(2024, 3, 3)], 40, seed=47))
    run_job(config, runner="thread")
    final = _pyiceberg_rows(_table(config))
    assert len(final) == len(after) + 40
    assert _spark_rows(spark) == final  # cache-enabled=false: Spark sees the job's commit at once


def test_spark_snapshot_expiry_keeps_the_snapshots_holding_the_jobs_checkpoints(lake):
    config, spark = lake
    for n in range(3):  # other writers' snapshots on top of the job's
        spark.sql(
            f"INSERT INTO lake.web.clicks SELECT clicked_at, user_id, '/n{n}', country, 9, {n} FROM lake.web.clicks LIMIT 1"
        )
    table = _table(config)
    checkpoints = table_checkpoints(table, JOB, TASKS)
    tagged = {ref.snapshot_id for name, ref in table.metadata.refs.items() if name.startswith(TAG_PREFIX)}
    rows = _pyiceberg_rows(table)
    snapshots = {s.snapshot_id for s in table.metadata.snapshots}

    now = spark.sql("SELECT current_timestamp() + INTERVAL 1 SECOND AS t").first().t
    result = spark.sql(
        f"CALL lake.system.expire_snapshots(table => 'lake.web.clicks', older_than => TIMESTAMP '{now}', retain_last => 1)"
    ).first()
    assert result.deleted_manifest_lists_count > 0  # expiry did expire snapshots

    table = _table(config)
    left = {s.snapshot_id for s in table.metadata.snapshots}
    assert left < snapshots
    assert tagged <= left and table.current_snapshot().snapshot_id in left
    assert len(left) == len(tagged | {table.current_snapshot().snapshot_id})
    assert table_checkpoints(table, JOB, TASKS) == checkpoints
    assert _pyiceberg_rows(table) == rows == _spark_rows(spark)


def test_a_misspelt_catalog_file_is_one_error_and_creates_nothing(lake, tmp_path):
    from samza_dagster.spark.iceberg import iceberg_spark_conf

    config, _ = lake
    uri = (
        config.get("systems.lake.iceberg.catalog.uri")
        or IcebergSystemConfig.from_config("lake", config).catalog_properties["uri"]
    )
    wrong = uri.replace("catalog.db", "catalgo.db")
    bad = config.with_overrides({"systems.lake.iceberg.catalog.type": "sql", "systems.lake.iceberg.catalog.uri": wrong})
    with pytest.raises(ConfigError) as err:
        iceberg_spark_conf(bad, "lake", jars=False)
    message = str(err.value)
    assert "systems.lake.iceberg.catalog.uri" in message and "catalgo.db" in message and "\n" not in message
    assert not os.path.exists(wrong.removeprefix("sqlite:///"))
    good = iceberg_spark_conf(config, "lake", jars=False)
    assert good["spark.sql.catalog.lake.uri"] == "jdbc:sqlite:" + uri.removeprefix("sqlite:///")


def test_a_jvm_started_without_the_runtime_is_refused_in_one_line(lake, tmp_path):
    """A process whose first Spark session had no Iceberg runtime (its JVM's classpath is fixed):
    the iceberg session is refused naming preload_runtime, not a Py4J trace at the first query."""
    config, _ = lake
    script = (
        "import sys\n"
        "from samza_dagster.config import Config\n"
        "from samza_dagster.config.errors import ConfigError\n"
        "from samza_dagster.spark.iceberg import iceberg_session\n"
        "from samza_dagster.spark.session import get_or_create_spark\n"
        "get_or_create_spark(master='local[1]').stop()\n"
        "config = Config(dict(line.split('=', 1) for line in sys.stdin.read().splitlines()))\n"
        "try:\n"
        "    iceberg_session(config, 'lake', master='local[1]')\n"
        "except ConfigError as exc:\n"
        "    print(exc)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_SUBMIT_ARGS"}  # no preloaded runtime
    done = subprocess.run(
        [sys.executable, "-c", script],
        input="\n".join(f"{k}={v}" for k, v in config.items()),
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (line,) = done.stdout.splitlines()
    assert "iceberg system 'lake'" in line and "without Iceberg's Spark runtime" in line and "preload_runtime()" in line
