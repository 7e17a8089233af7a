"""SamzaJobComponent with a files input and an Iceberg output, in a dg project of its own: the
Parquet directory is a bounded input asset, the declared Iceberg output (``ice.trips_clean``) the
table's asset — kind iceberg, read downstream through the default ``iceberg_io_manager``, which
finds the catalog the job's .properties names. ``dg check defs`` accepts the project; loaded for
real, the job turns the files into the table and a downstream asset reads it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog import load_catalog

TASK = """
from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.task import StreamTask


class CleanTripTask(StreamTask):
    def process(self, envelope, collector, coordinator):
        trip = envelope.message
        if trip["amount"] > 0:
            collector.send(OutgoingMessageEnvelope(SystemStream("ice", "trips_clean"), {**trip, "city": trip["city"].upper()}))
"""

REPORT = """
import dagster as dg
import pandas as pd


@dg.asset(key=["trips_lake", "amount_per_city"], ins={"trips": dg.AssetIn(["trips_lake", "trips_clean"])})
def amount_per_city(trips: pd.DataFrame) -> dict:
    return {city: float(amount) for city, amount in trips.groupby("city")["amount"].sum().items()}
"""


def _forget(package: str) -> None:
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[name]


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = tmp_path / "proj"
    defs = root / "lakeshop" / "defs"
    (defs / "trips").mkdir(parents=True)
    (root / "lakeshop" / "__init__.py").write_text("")
    (defs / "__init__.py").write_text("")
    (root / "lakeshop" / "tasks.py").write_text(TASK)
    (defs / "report.py").write_text(REPORT)
    (root / "lakeshop" / "definitions.py").write_text(
        "from pathlib import Path\nimport dagster as dg\n\n\n@dg.definitions\ndef defs():\n"
        "    return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)\n"
    )
    (root / "pyproject.toml").write_text(
        '[project]\nname = "lakeshop"\nversion = "0.1.0"\n\n[tool.dg]\ndirectory_type = "project"\n\n'
        '[tool.dg.project]\nroot_module = "lakeshop"\n'
    )
    lake = tmp_path / "lake" / "trips"
    lake.mkdir(parents=True)
    for n in range(3):  # three files: three partitions of the files input
        ids = list(range(n * 100, (n + 1) * 100))
        pq.write_table(
            pa.table({"id": ids, "city": [f"city-{i % 4}" for i in ids], "amount": [float(i % 9) for i in ids]}),
            lake / f"part-{n}.parquet",
        )
    catalog = {"type": "sql", "uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/warehouse"}
    (defs / "trips" / "job.properties").write_text(
        "\n".join(
            [
                "job.name=trips-lake",
                "job.factory.class=thread",
                "job.processing.guarantee=exactly-once",
                "task.class=lakeshop.tasks:CleanTripTask",
                "task.inputs=files.trips",
                "task.commit.ms=500",
                "systems.files.samza.factory=files",
                f"systems.files.files.root={tmp_path / 'lake'}",
                "systems.ice.samza.factory=iceberg",
                *(f"systems.ice.iceberg.catalog.{k}={v}" for k, v in catalog.items()),
                "systems.ice.iceberg.namespace=lake",
                "",
            ]
        )
    )
    (defs / "trips" / "defs.yaml").write_text(
        "type: samza_dagster.orchestration.SamzaJobComponent\nattributes:\n"
        "  config_path: job.properties\n  application: trips_lake\n  declared_outputs: [ice.trips_clean]\n"
    )
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("SAMZA_LOG_PATH", str(tmp_path / "log"))
    _forget("lakeshop")
    yield root, catalog
    _forget("lakeshop")


def test_dg_check_defs_accepts_files_inputs_and_iceberg_outputs(project, tmp_path):
    root, _ = project
    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run(
        [str(Path(sys.executable).parent / "dg"), "check", "defs"],
        cwd=root,
        env={**os.environ, "DAGSTER_HOME": str(home), "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]


def test_the_component_turns_files_into_a_table_a_downstream_asset_reads(project, tmp_path):
    root, catalog = project
    defs = dg.load_from_defs_folder(path_within_project=root / "lakeshop")
    graph = defs.resolve_asset_graph()
    trips, table = dg.AssetKey(["trips_lake", "trips"]), dg.AssetKey(["trips_lake", "trips_clean"])
    assert graph.get(trips).tags["samza/role"] == "batch"  # files are bounded: batch input
    assert set(graph.get(trips).kinds) == {"samza", "files"}
    spec = graph.get(table)
    assert set(spec.kinds) == {"samza", "iceberg"} and spec.parent_keys == {trips}
    assert spec.metadata["dagster/io_manager_key"] == "iceberg_io_manager"
    assert spec.metadata["dagster/table_name"] == "lake.trips_clean"

    (tmp_path / "dagster").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        result = defs.resolve_job_def("trips_lake_job").execute_in_process(instance=instance, raise_on_error=False)
        assert result.success, [e.step_failure_data.error.message for e in result.get_step_failure_events()]
        eos = [c for c in result.get_asset_check_evaluations() if c.check_name == "reached_end_of_stream"]
        assert eos and all(c.passed for c in eos)
        written = instance.fetch_materializations(table, limit=1).records[0].asset_materialization
        kept = [i for i in range(300) if i % 9 != 0]  # rows with amount 0 are dropped by the task
        assert written.metadata["rows_added"].value == len(kept)
        rows = load_catalog("ice", **catalog).load_table(("lake", "trips_clean")).scan().to_arrow()
        assert sorted(rows["id"].to_pylist()) == kept
        assert (
            written.metadata["snapshot_id"].value
            == load_catalog("ice", **catalog).load_table(("lake", "trips_clean")).current_snapshot().snapshot_id
        )

        report = dg.AssetKey(["trips_lake", "amount_per_city"])
        done = defs.resolve_implicit_global_asset_job_def().execute_in_process(
            instance=instance, asset_selection=[report]
        )
        expected: dict[str, float] = {}
        for i in kept:
            expected[f"CITY-{i % 4}"] = expected.get(f"CITY-{i % 4}", 0.0) + float(i % 9)
        assert done.asset_value(report) == expected
