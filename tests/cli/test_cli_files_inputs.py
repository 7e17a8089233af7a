"""A files input that is not there, run as a user runs it (the console script in a fresh
directory): the error names the directory looked in and the stream a typo meant, never advice
that cannot work, and a job whose files input holds no file does not "complete" with 0 messages."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tests import REPO

BIN = Path(sys.executable).parent / "samza-dagster"

JOB = (
    "job.name=trips\njob.factory.class=thread\ntask.class=tests.apps.tasks:NoOpTask\ntask.inputs=files.trip\n"
    "systems.files.samza.factory=files\nsystems.files.files.root=data\n"
)


def test_a_missing_or_empty_files_input_names_the_directory_and_the_stream_meant(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("SAMZA_LOG_PATH", None)
    (tmp_path / "data" / "trips").mkdir(parents=True)
    pq.write_table(pa.table({"id": [1, 2, 3]}), tmp_path / "data" / "trips" / "part-0.parquet")
    (tmp_path / "job.properties").write_text(JOB)

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(BIN), *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)

    def refused(done: subprocess.CompletedProcess[str], *needles: str) -> None:
        assert done.returncode == 2, done.stdout + done.stderr
        for needle in needles:
            assert needle in done.stderr, done.stderr
        assert "streams create" not in done.stderr  # an empty directory is no input: never the advice
        assert "Traceback" not in done.stderr and "completed" not in done.stdout
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr

    data = (tmp_path / "data").resolve()
    misspelt = run("run", "--config-path", "job.properties")
    refused(
        misspelt,
        "input stream files.trip does not exist (config key 'task.inputs')",
        f"no directory {data}/trip under the files root (config key 'systems.files.files.root')",
        "did you mean files.trips?",
    )
    # `plan` (what `dg check defs` and a Dagster launch plan with) says what `run` says
    planned = run("plan", "--config-path", "job.properties")
    assert planned.returncode == 2 and misspelt.stderr.split(": ", 2)[2] in planned.stderr, planned.stderr

    no_root = run("run", "--config-path", "job.properties", "--config", "systems.files.files.root=dta")
    refused(no_root, f"the files root {tmp_path.resolve()}/dta does not exist (config key 'systems.files.files.root')")

    # a directory without a file to read (what `streams create files.trip` makes) is refused too:
    # before, the job "completed" with 0 messages, exit 0
    assert (
        run("streams", "create", "files.trip", "--partitions", "1", "--config-path", "job.properties").returncode == 0
    )
    (tmp_path / "data" / "trip" / "_SUCCESS").write_text("")
    empty = run("run", "--config-path", "job.properties")
    refused(
        empty,
        "input stream files.trip has no partition (config key 'task.inputs')",
        f"no file to read in {data}/trip (names starting with '.' or '_' are skipped, whitelist '.*')",
    )
    assert "did you mean files.trips?" in empty.stderr  # the directory it made is not the one meant

    # the files system lists its streams (partitions; its offsets are <file>:<row>, not counted)
    listed = run("streams", "list", "--system", "files", "--config-path", "job.properties")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == ["files.trip  0 partitions  0 messages", "files.trips  1 partition"]
    described = run("streams", "describe", "files.trps", "--config-path", "job.properties")
    assert described.returncode == 1 and "did you mean files.trips?" in described.stderr, described.stderr
