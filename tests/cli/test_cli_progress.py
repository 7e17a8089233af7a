"""The progress ``samza-dagster run`` shows: processed and lag from the furthest of the job's
checkpoints and the offsets its containers have processed so far (so a job shows its work before
its first commit), written from its outputs' offsets (not its metrics snapshots); a clock and
rates a person reads; plain lines when the output is not a terminal; a run log per job and
directory."""

from __future__ import annotations

import io
import threading
from pathlib import Path

import pytest

from jobs.stream_helpers import create_streams, message_count, produce
from samza_dagster.cli.commands import run_log_path
from samza_dagster.cli.progress import JobWatch, Sample, show_progress
from samza_dagster.config import Config
from samza_dagster.config.job_config import JobConfig
from samza_dagster.container.summary import ContainerStatus, ContainerSummary
from samza_dagster.runtime import create_runner, run_job
from samza_dagster.runtime.provision import provision_streams
from samza_dagster.runtime.result import JobResult, per_second
from support.waiting import wait_until
from tests.apps.harness import read_checkpoints

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
        wait_until(lambda: "progress: 0 processed" in out.getvalue(), 30, "the first progress line", poll_s=0.05)
    assert "lag 7, 0 written" in out.getvalue()


@pytest.mark.parametrize("runner", ["thread", "process"])
def test_processed_counts_as_messages_are_processed_not_at_the_first_commit(tmp_path, runner):
    """A commit interval of ten minutes: the checkpoints say nothing for ten minutes, but the
    runner's live positions do — processed is every message, lag 0, well before any commit."""
    config = _job(tmp_path).with_overrides(
        {"job.factory.class": runner, "streams.in.samza.bounded": "false", "task.commit.ms": "600000"}
    )
    create_streams(config, {"in": 2})
    provisioned = provision_streams(config)
    produce(config, "in", ((str(i).encode(), b"x", None) for i in range(MESSAGES)))
    job = create_runner(config)
    watch = JobWatch(config, [*provisioned.created, *provisioned.existing], job.live_positions)
    worker = threading.Thread(target=job.run, daemon=True)
    worker.start()
    try:
        # (the outputs follow within the producer's linger: written may lag processed by a moment)
        seen = wait_until(
            lambda: (s := watch.sample()).processed == MESSAGES and s.written == MESSAGES and s,
            60,
            what=f"{MESSAGES} processed and written before a commit",
        )
        assert seen.lag == 0
        assert read_checkpoints(config) == {} or not any(c.offsets for c in read_checkpoints(config).values())
    finally:
        job.stop()
        worker.join(60)
        watch.close()


def test_written_counts_the_outputs_not_the_jobs_own_metrics(tmp_path):
    """An idle job with a snapshot reporter writes snapshots all the time: not "written"."""
    config = _job(tmp_path).with_overrides(
        {
            "streams.in.samza.bounded": "false",
            "metrics.reporters": "snapshot",
            "metrics.reporter.snapshot.class": "snapshot",
            "metrics.reporter.snapshot.stream": "log.metrics",
            "metrics.reporter.snapshot.interval": "0.1",
            "streams.metrics.partitions": "1",
        }
    )
    create_streams(config, {"in": 2})
    provisioned = provision_streams(config)
    assert "metrics" in {s.physical_name for s in (*provisioned.created, *provisioned.existing)}
    job = create_runner(config)
    watch = JobWatch(config, [*provisioned.created, *provisioned.existing], job.live_positions)
    worker = threading.Thread(target=job.run, daemon=True)
    worker.start()
    try:
        wait_until(lambda: message_count(config, "metrics") >= 5, 60, what="metrics snapshots")
        assert watch.sample().written == 0
    finally:
        job.stop()
        worker.join(60)
        watch.close()


def test_the_clock_and_rates_a_person_reads():
    sample = Sample(processed=2, lag=0, written=9, elapsed_s=3725.4)
    assert sample.clock == "1:02:05" and sample.rate == "0.00054/s"
    assert sample.line("j") == "j: 2 processed (0.00054/s), lag 0, 9 written, 1:02:05"
    assert per_second(2, 29.85) == "0.067/s" and per_second(9, 2) == "4.5/s" and per_second(12_345, 1) == "12,345/s"
    assert per_second(0, 5) == "0/s"
    one = JobResult("j", "thread", [ContainerSummary("0", ContainerStatus.COMPLETED)], elapsed_s=29.85)
    assert one.summary_line().startswith("job j on thread: 1 container completed, 0 messages in 29.85 s (0/s)")


def test_the_run_log_is_one_per_job_and_directory(tmp_path, monkeypatch):
    job = JobConfig(Config({"job.name": "wordsplit"}))
    monkeypatch.chdir(tmp_path)
    here = run_log_path(job, "wordsplit.properties")
    (tmp_path / "other").mkdir()
    monkeypatch.chdir(tmp_path / "other")
    there = run_log_path(job, "wordsplit.properties")
    assert here != there and here.name.startswith("samza-dagster-wordsplit-1-") and here.suffix == ".log"
    assert run_log_path(job, "wordsplit.properties") == there  # the same job again: the same log


def test_the_rate_is_the_recent_one_an_idle_job_shows_none():
    """A job that processed 1,000 messages in its first seconds and none since: the rate of the
    last window, not the average since the start (an idle job showed "(999/s)")."""
    from samza_dagster.cli.progress import RecentRate

    recent = RecentRate(window_s=2.0)
    busy = recent(Sample(processed=1_000, lag=0, written=1_000, elapsed_s=1.0))
    assert busy.rate == "1,000/s"
    recent(Sample(processed=1_000, lag=0, written=1_000, elapsed_s=2.0))
    recent(Sample(processed=1_000, lag=0, written=1_000, elapsed_s=3.0))
    idle = recent(Sample(processed=1_000, lag=0, written=1_000, elapsed_s=4.0))
    assert idle.rate == "0/s" and Sample(1_000, 0, 1_000, 4.0).rate == "250/s"  # the average would say 250/s
    again = recent(Sample(processed=1_300, lag=0, written=1_300, elapsed_s=5.0))
    assert again.rate == "150/s"  # 300 over the last 2 s (the window starts at the sample of 3.0 s)


def test_a_running_job_that_went_idle_shows_no_rate(tmp_path):
    """Through the display a pipe gets, with a real job: it works off a backlog, then waits for
    messages that do not come; its lines go from a rate to ``(0/s)`` with everything processed."""
    config = _job(tmp_path).with_overrides({"streams.in.samza.bounded": "false"})
    create_streams(config, {"in": 2})
    provisioned = provision_streams(config)
    produce(config, "in", ((str(i).encode(), b"x", None) for i in range(MESSAGES)))
    job = create_runner(config)
    worker = threading.Thread(target=job.run, daemon=True)
    out = io.StringIO()
    streams = [*provisioned.created, *provisioned.existing]
    try:
        with show_progress(
            "idle", config, streams, out=out, interval_s=0.2, live=job.live_positions, rate_window_s=1.0
        ):
            worker.start()
            wait_until(lambda: f"idle: {MESSAGES} processed" in out.getvalue(), 60, "the backlog processed", poll_s=0.1)
            lines = len(out.getvalue().splitlines())
            wait_until(lambda: len(out.getvalue().splitlines()) >= lines + 8, 30, "1.6 s of idle lines", poll_s=0.1)
    finally:
        job.stop()
        worker.join(60)
    printed = out.getvalue().splitlines()
    assert any(f"{MESSAGES} processed" in line and "(0/s)" not in line for line in printed), printed
    assert printed[-1].startswith(f"idle: {MESSAGES} processed (0/s), lag 0"), printed[-1]
