"""The progress ``samza-dagster run`` shows, watched from the streams as any client sees them:
processed and lag from the job's checkpoints, written from its outputs' offsets; plain lines
when the output is not a terminal."""

from __future__ import annotations

import io
import time
from pathlib import Path

from jobs.stream_helpers import create_streams, produce
from samza_dagster.cli.progress import JobWatch, show_progress
from samza_dagster.config import Config
from samza_dagster.runtime import run_job
from samza_dagster.runtime.provision import provision_streams

MESSAGES = 300


def _job(tmp_path: Path) -> Config:
    return Config(
        {
            "job.name": "progress",
            "job.factory.class": "thread",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(tmp_path / "log"),
            "systems.log.samza.msg.serde": "string",
            "systems.log.samza.offset.default": "oldest",
            "task.class": "tests.apps.tasks:CopyTask",
            "task.inputs": "log.in",
            "test.output.stream": "out",
            "streams.in.partitions": "2",
            "streams.in.samza.bounded": "true",
            "streams.out.partitions": "2",
            "task.commit.ms": "50",
        }
    )


def test_the_watch_counts_processed_lag_and_written(tmp_path):
    config = _job(tmp_path)
    create_streams(config, {"in": 2})  # an input is never created by the job
    provisioned = provision_streams(config)
    streams = [*provisioned.created, *provisioned.existing]
    assert {(s.physical_name, s.reads) for s in streams} == {("in", True), ("out", False)}
    produce(config, "in", ((str(i).encode(), str(i).encode(), None) for i in range(MESSAGES)))
    watch = JobWatch(config, streams)
    try:
        before = watch.sample()
        assert (before.processed, before.lag, before.written) == (0, MESSAGES, 0)
        assert run_job(config).succeeded
        after = watch.sample()
        assert (after.processed, after.lag, after.written) == (MESSAGES, 0, MESSAGES)
    finally:
        watch.close()


def test_plain_lines_when_not_a_terminal(tmp_path):
    config = _job(tmp_path)
    create_streams(config, {"in": 2})
    provisioned = provision_streams(config)
    streams = [*provisioned.created, *provisioned.existing]
    produce(config, "in", ((None, b"x", None) for _ in range(7)))
    out = io.StringIO()  # not a terminal
    with show_progress("progress", config, streams, out=out, interval_s=0.05):
        deadline = time.monotonic() + 30
        while "progress: 0 processed" not in out.getvalue():
            assert time.monotonic() < deadline, out.getvalue()
            time.sleep(0.05)
    assert "lag 7, 0 written" in out.getvalue()
