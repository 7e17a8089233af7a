"""A checkpoint never covers output that the log producer has not written, across a SIGKILL of
the container.

The producer's thread writes lingering batches, ``send`` full ones (docs/decisions.md, "Embedded
log"): a batch taken from the buffer is neither buffered nor written until its transaction
commits. A commit flushes and then checkpoints; if the flush returned while such a batch was
still held, the checkpoint would cover inputs whose outputs die with the process. The test holds
the output file's write lock (as another container mid-fsync would, only longer), so the thread
(or ``send``) holds its batch for as long as the test likes; it kills the container process (process runner,
SIGKILL) in that state, then checks the last checkpoint against what the output stream holds, and
runs the job again to the end: every input reaches the output.

Two states: the job idle with the thread's lingering batch held (the run loop keeps committing —
the flush must wait), and the job busy with a full batch held by ``send`` (which waits for the
lock, and so does the next commit)."""

from __future__ import annotations

import os
import signal
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from samza_dagster.config import Config
from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.runtime import run_job
from samza_dagster.runtime.process_runner import ProcessJobRunner
from samza_dagster.system.log import storage
from samza_dagster.task.api import InitableTask, StreamTask
from support.waiting import wait_until
from tests.apps.harness import create_stream, produce, read_checkpoints
from tests.reliability.test_reliability_crash import read_all

PARTITIONS = 2


class CopyTask(StreamTask, InitableTask):
    """Copies each input (``m<i>``) to ``out``; writes the marker ``processed-<i>`` for the
    message named by ``test.marker.after``."""

    OUT = SystemStream("log", "out")

    def init(self, context):
        self.marker = context.config.get_str("test.marker.after") or None
        self.dir = context.config.get_str("test.dir")
        self.delay = (context.config.get_int("test.process.delay.us") or 0) / 1e6

    def process(self, envelope, collector, coordinator):
        collector.send(OutgoingMessageEnvelope(self.OUT, envelope.message, key=envelope.message))
        if envelope.message == self.marker:
            Path(self.dir, f"processed-{self.marker}").write_text(str(os.getpid()))
        if self.delay:
            time.sleep(self.delay)


def _config(tmp_path: Path, **extra: str) -> Config:
    entries = {
        "job.name": "thread-held",
        "job.factory.class": "process",
        "job.container.count": "1",
        "job.default.system": "log",
        "task.inputs": "log.in",
        "task.class": "tests.reliability.test_reliability_producer_thread:CopyTask",
        "task.commit.ms": "20",
        "systems.log.samza.factory": "log",
        "systems.log.log.path": str(tmp_path / "log"),
        "systems.log.samza.msg.serde": "string",
        "systems.log.samza.key.serde": "string",
        "systems.log.samza.offset.default": "oldest",
        "test.dir": str(tmp_path),
    }
    entries.update(extra)
    return Config(entries)


def _inputs(first: int, count: int) -> list[tuple[int, None, bytes]]:
    """``m<i>`` into partition i % 2: in each partition, message ``m<i>`` has offset i // 2."""
    return [(i % PARTITIONS, None, f"m{i}".encode()) for i in range(first, first + count)]


def _kill_while_the_output_is_locked(config: Config, tmp_path: Path, busy: bool) -> None:
    """Run the job with ``out``'s write lock held by this test — from the start (idle: until the
    task processed the last input), or taken once the job has written 60 outputs (busy) — and
    SIGKILL the container half a second (25 commit intervals) later; then free the lock."""
    out_file = storage.stream_file(str(tmp_path / "log"), "out")
    lock = sqlite3.connect(out_file, isolation_level=None, timeout=60)
    if not busy:
        lock.execute("BEGIN IMMEDIATE")
    runner = ProcessJobRunner(config)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    try:
        proc = wait_until(lambda: runner.processes.get("0"), 60, "the container process")
        if busy:
            wait_until(lambda: len(read_all(config, "out")) >= 60, 120, "60 outputs")
            lock.execute("BEGIN IMMEDIATE")  # after the container's transaction in flight, if any
        else:
            marker = config.get_str("test.marker.after")
            wait_until(lambda: (tmp_path / f"processed-{marker}").exists(), 120, f"the task to process {marker}")
        time.sleep(0.5)  # what is being shown: nothing the container does in this time is a checkpoint
        assert proc.poll() is None, "the container ended with its output file locked"
        os.kill(proc.pid, signal.SIGKILL)
        thread.join(60)
        assert not thread.is_alive()
    finally:
        if lock.in_transaction:
            lock.execute("ROLLBACK")
        lock.close()


def _checkpointed_inputs(config: Config) -> set[str]:
    """The inputs the last checkpoint covers (every message at or before its offset)."""
    covered: set[str] = set()
    for checkpoint in read_checkpoints(config).values():
        for ssp, offset in checkpoint.offsets.items():
            covered |= {f"m{2 * o + ssp.partition}" for o in range(int(offset) + 1)}
    return covered


@pytest.mark.parametrize(
    ("busy", "messages", "extra"),
    [
        # 30 messages and the default batch of 1,000: the linger hands all of them to the thread,
        # the run loop then idles and commits every 20 ms
        (False, 30, {"test.marker.after": "m29"}),
        # batches of 20, 2 ms a message, the lock taken mid-run: ``send`` holds a full batch
        (True, 400, {"systems.log.log.batch.size": "20", "test.process.delay.us": "2000"}),
    ],
    ids=["idle-lingering-batch-held", "busy-full-batch-held-by-send"],
)
def test_sigkill_with_the_threads_batch_unwritten_loses_no_checkpointed_input(tmp_path, busy, messages, extra):
    config = _config(tmp_path, **extra)
    create_stream(config, "log", "in", PARTITIONS)
    create_stream(config, "log", "out", 1)
    produce(config, "log", "in", _inputs(0, messages))

    _kill_while_the_output_is_locked(config, tmp_path, busy)

    written = {env.message.decode() for env in read_all(config, "out")}
    covered = _checkpointed_inputs(config)
    lost = sorted(covered - written, key=lambda m: int(m[1:]))
    assert not lost, f"the checkpoint covers {len(lost)} inputs whose output was never written: {lost[:5]}"
    assert len(written) < messages  # the kill came before the end

    # the job again, to the end of its input: every input reaches the output (at least once)
    final = run_job(config.with_overrides({"systems.log.streams.in.samza.bounded": "true", "task.commit.ms": "1000"}))
    assert final.succeeded, final.summary_line()
    written = {env.message.decode() for env in read_all(config, "out")}
    assert written == {f"m{i}" for i in range(messages)}
