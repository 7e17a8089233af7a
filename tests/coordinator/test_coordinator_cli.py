"""The job coordinator and the coordinator stream writer as separate processes sharing the
embedded log system (as a user runs them from two terminals)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from samza_dagster.config import Config
from samza_dagster.coordinator.client import fetch_job_model, poll_version
from samza_dagster.system import StreamSpec, system_factory
from tests import REPO


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "samza_dagster.cli", *args]


def test_cli_coordinator_sees_writer_changes_across_processes(tmp_path: Path) -> None:
    entries = {
        "job.name": "cli_job",
        "systems.log.samza.factory": "log",
        "systems.log.log.path": str(tmp_path / "log"),
        "task.inputs": "log.events",
        "stores.totals.factory": "inmemory",
        "stores.totals.changelog": "log.totals-changelog",
        "job.coordinator.monitor.interval.ms": "100",
    }
    config = Config(entries)
    system_factory(config, "log").get_admin("log", config).create_stream(StreamSpec("events", "events", "log", 3))
    properties = tmp_path / "job.properties"
    properties.write_text("".join(f"{k}={v}\n" for k, v in entries.items()))
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    coordinator = subprocess.Popen(
        _cli("job-coordinator", "--config-path", str(properties)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert coordinator.stdout is not None
        line = coordinator.stdout.readline().strip()
        assert line.startswith("SAMZA_COORDINATOR_URL=http://127.0.0.1:"), line
        url = line.split("=", 1)[1]
        model = fetch_job_model(url)
        assert model.version == 1 and sorted(model.all_tasks()) == ["Partition 0", "Partition 1", "Partition 2"]

        writer = subprocess.run(
            _cli(
                "coordinator-stream-writer",
                "--config-path",
                str(properties),
                "--type",
                "set-config",
                "--key",
                "job.container.count",
                "--value",
                "3",
            ),
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert writer.returncode == 0, writer.stderr
        # it says what it wrote, to which stream on which log root, at which offset
        assert re.search(
            r"wrote set-config job.container.count=3 to the coordinator stream log\.__samza_coordinator_\S+ "
            rf"on the embedded log at {re.escape(str(tmp_path / 'log'))} at offset \d+",
            writer.stdout,
        ), writer.stdout
        assert "warning" not in writer.stderr, writer.stderr  # the coordinator submitted the job there
        deadline = time.monotonic() + 10
        while poll_version(url) < 2:
            assert time.monotonic() < deadline, "coordinator did not pick up the change"
            time.sleep(0.05)
        changed = fetch_job_model(url)
        assert sorted(changed.containers) == ["0", "1", "2"]
        assert {n: t.changelog_partition for n, t in changed.all_tasks().items()} == {
            n: t.changelog_partition for n, t in model.all_tasks().items()
        }

        refused = subprocess.run(
            _cli(
                "coordinator-stream-writer",
                "--config-path",
                str(properties),
                "--type",
                "set-config",
                "--key",
                "stores.totals.changelog",
                "--value",
                "log.other",
            ),
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert refused.returncode == 2
        assert "stores.totals.changelog" in refused.stderr and "'log.totals-changelog'" in refused.stderr
        assert "'log.other'" in refused.stderr
    finally:
        coordinator.send_signal(signal.SIGTERM)
        try:
            coordinator.wait(timeout=15)
        finally:
            if coordinator.poll() is None:
                coordinator.kill()
    assert coordinator.returncode == 0, coordinator.stderr.read() if coordinator.stderr else ""


def test_the_writer_names_the_log_root_and_warns_where_no_job_ever_ran(tmp_path: Path) -> None:
    """The writer run without the root the job uses (the Dagster UI's SAMZA_LOG_PATH) writes to
    ./.samza-log: it says so, and warns that no job has run against that stream there."""
    properties = tmp_path / "job.properties"
    properties.write_text("job.name=clicks\ntask.inputs=log.input\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("SAMZA_LOG_PATH", None)
    args = ["coordinator-stream-writer", "--config-path", str(properties), "--type", "set-config"]
    done = subprocess.run(
        _cli(*args, "--key", "task.commit.ms", "--value", "500"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert f"on the embedded log at {tmp_path / '.samza-log'} at offset 0" in done.stdout, done.stdout
    (warning,) = [line for line in done.stderr.splitlines() if "warning" in line]
    assert (
        f"no job has run against the coordinator stream log.__samza_coordinator_clicks_1 on the embedded log at {tmp_path / '.samza-log'}"
        in warning
    )
    assert "SAMZA_LOG_PATH=<that root>" in warning
