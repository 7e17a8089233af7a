"""A truncated Parquet file in a files input, and the run log a rerun would overwrite — run as a
user runs them (the console script in a fresh directory)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tests import REPO

BIN = Path(sys.executable).parent / "samza-dagster"


def _run(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("SAMZA_LOG_PATH", None)
    return subprocess.run([str(BIN), *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_a_truncated_parquet_file_is_a_config_error_naming_its_path_and_the_blacklist_key(tmp_path):
    trips = tmp_path / "data" / "trips"
    trips.mkdir(parents=True)
    pq.write_table(pa.table({"id": [1, 2, 3]}), trips / "part-0.parquet")
    pq.write_table(pa.table({"id": [4, 5, 6]}), trips / "part-1.parquet")
    whole = (trips / "part-1.parquet").read_bytes()
    (trips / "part-1.parquet").write_bytes(whole[: len(whole) // 2])  # a copy cut short
    (tmp_path / "job.properties").write_text(
        "job.name=trips\njob.factory.class=thread\ntask.class=tests.apps.tasks:NoOpTask\ntask.inputs=files.trips\n"
        "systems.files.samza.factory=files\nsystems.files.files.root=data\n"
    )
    done = _run(tmp_path, "run", "--config-path", "job.properties")
    assert done.returncode == 2, done.stdout + done.stderr
    key = "systems.files.partitioner.defaultPartitioner.blacklist"
    assert f"files stream files.trips partition 1: {trips.resolve()}/part-1.parquet: not a Parquet file" in done.stderr
    assert f"leave it out with {key}=" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    # the advice works as given: the job reads the partition that is whole
    given = done.stderr.strip().rsplit(f"{key}=", 1)[1]
    rerun = _run(tmp_path, "run", "--config-path", "job.properties", "--config", f"{key}={given}")
    assert rerun.returncode == 0, rerun.stderr
    assert "1 container completed, 3 messages" in rerun.stdout


def test_a_rerun_keeps_the_failed_runs_log(tmp_path):
    """The failed run's log (its trace) survives the rerun that follows it, as ``*.previous.log``."""
    (tmp_path / "job.properties").write_text(
        "job.name=boom\njob.factory.class=thread\ntask.class=tests.apps.tasks:FailingTask\ntask.inputs=log.in\n"
        "systems.log.samza.msg.serde=string\nstreams.in.samza.bounded=true\n"
    )
    (tmp_path / "in.txt").write_text("boom\n")
    assert _run(tmp_path, "streams", "create", "log.in", "--partitions", "1").returncode == 0
    assert _run(tmp_path, "streams", "produce", "log.in", "--file", "in.txt").returncode == 0
    failed = _run(tmp_path, "run", "--config-path", "job.properties")
    assert failed.returncode == 1, failed.stderr
    log = Path(failed.stderr.split("the run's log, with the full trace: ")[1].split(")")[0])
    assert "bad message boom" in log.read_text()
    rerun = _run(tmp_path, "run", "--config-path", "job.properties", "--config", "task.class=tests.apps.tasks:NoOpTask")
    assert rerun.returncode == 0, rerun.stderr
    assert "bad message boom" not in log.read_text() and "completed" in log.read_text()
    previous = log.with_suffix(".previous.log")
    assert "Traceback" in previous.read_text() and "bad message boom" in previous.read_text()
