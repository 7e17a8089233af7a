"""``SAMZA_LOG_PATH`` is where every command reads and writes the embedded log — as the Dagster
code location's ``samza_systems`` resource has it — winning over the .properties' log path, so a
shell and ``dagster dev`` started with the same variable see the same streams."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from samza_dagster.coordinator.stream.messages import coordinator_stream_name
from tests import REPO

BIN = Path(sys.executable).parent / "samza-dagster"


def test_every_command_uses_samza_log_path(tmp_path):
    root, ignored = tmp_path / "shared-log", tmp_path / "from-properties"
    (tmp_path / "job.properties").write_text(
        "job.name=shared\njob.factory.class=thread\ntask.class=tests.apps.tasks:CopyTask\n"
        f"task.inputs=log.sentences\nsystems.log.log.path={ignored}\nsystems.log.samza.msg.serde=string\n"
        "streams.sentences.samza.bounded=true\nstreams.output.partitions=1\n"
    )
    (tmp_path / "in.txt").write_text("one\ntwo\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "SAMZA_LOG_PATH": str(root)}

    def cli(*argv: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([str(BIN), *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done

    cli("streams", "create", "log.sentences", "--partitions", "1", "--config-path", "job.properties")
    cli("streams", "produce", "log.sentences", "--file", "in.txt", "--config-path", "job.properties")
    cli(
        "coordinator-stream-writer",
        "--config-path",
        "job.properties",
        "--type",
        "set-config",
        "--key",
        "task.commit.ms",
        "--value",
        "500",
    )
    cli("run", "--config-path", "job.properties")
    tail = cli("streams", "tail", "log.output", "--config-path", "job.properties")

    assert sorted(line.split("\t")[-1] for line in tail.stdout.splitlines() if line.strip()) == ["one", "two"]
    written = {p.name for p in root.glob("*.db")}
    assert {"sentences.db", "output.db", f"{coordinator_stream_name('shared', '1')}.db"} <= written
    assert not ignored.exists()
