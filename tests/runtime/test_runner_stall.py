"""A commit that waits on a system that does not answer is a stall (issue 53, point 3): the
container says so and the runner hands it to the progress display — here on the process runner,
whose containers are other processes (the thread runner's, on Kafka with two brokers down:
tests/reliability/test_reliability_kafka_failover.py). So is a run loop held anywhere else (a
send waiting for metadata, a consumer's poll; here a ``process()`` that sleeps).

The system is the embedded log, its producer's first flush after a send to the output held longer than a
stall takes to be reported (:data:`HOLD_S`), as a producer's flush waits for brokers that cannot
acknowledge."""

from __future__ import annotations

import io
import threading
import time
from typing import Any

from samza_dagster.cli.progress import show_progress
from samza_dagster.config import Config
from samza_dagster.container.container import STALL_AFTER_S
from samza_dagster.runtime import create_runner
from samza_dagster.runtime.provision import DeclaredStream
from samza_dagster.system.factories import system_factory
from samza_dagster.task.api import StreamTask
from tests.apps.harness import create_stream, produce
from tests.forwarding import ForwardingProducer

HOLD_S = STALL_AFTER_S + 2.0


class _HeldFlush(ForwardingProducer):
    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self._sent = self._held = False

    def send(self, source, envelope):
        # the job's output only: the coordinator stream's and the checkpoints' writers flush at once
        self._sent = self._sent or envelope.system_stream.stream == "out"
        self.inner.send(source, envelope)

    def flush(self, source):
        if self._sent and not self._held:
            self._held = True
            time.sleep(HOLD_S)
        self.inner.flush(source)


class HeldFlushLogFactory:
    """The embedded log, its producer's first flush after a send to ``out`` held :data:`HOLD_S`."""

    def _inner(self, system_name: str) -> Any:
        return system_factory(Config({f"systems.{system_name}.samza.factory": "log"}), system_name)

    def get_admin(self, system_name: str, config: Config) -> Any:
        return self._inner(system_name).get_admin(system_name, config)

    def get_consumer(self, system_name: str, config: Config) -> Any:
        return self._inner(system_name).get_consumer(system_name, config)

    def get_producer(self, system_name: str, config: Config) -> Any:
        return _HeldFlush(self._inner(system_name).get_producer(system_name, config))


class HeldOnceTask(StreamTask):
    """Its third message's ``process()`` takes :data:`HOLD_S` (as a send waiting for metadata would)."""

    def __init__(self) -> None:
        self.seen = 0

    def process(self, envelope, collector, coordinator):
        self.seen += 1
        if self.seen == 3:
            time.sleep(HOLD_S)


def _job(tmp_path, runner: str, factory: str, task: str) -> Config:
    config = Config(
        {
            "job.name": "stall",
            "job.factory.class": runner,
            "job.default.system": "log",
            "systems.log.samza.factory": factory,
            "systems.log.log.path": str(tmp_path / "log"),
            "systems.log.streams.in.samza.bounded": "true",
            "task.inputs": "log.in",
            "task.class": task,
            "test.output.stream": "out",
        }
    )
    create_stream(config, "log", "in", 1)
    create_stream(config, "log", "out", 1)
    produce(config, "log", "in", [(0, None, b"x%d" % i) for i in range(5)])
    return config


def _run_watching_stalls(config: Config) -> tuple[Any, list[str], str]:
    """The job run to its end; the runner's stalls seen meanwhile, and the progress display's lines."""
    runner = create_runner(config)
    seen: list[str] = []

    def watch() -> None:
        while thread.is_alive():
            seen.extend(runner.live_stalls())
            time.sleep(0.2)

    out = io.StringIO()
    box: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: box.setdefault("result", runner.run()), daemon=True)
    streams = [DeclaredStream("in", "log", "in", 1, reads=True), DeclaredStream("out", "log", "out", 1)]
    with show_progress(
        "stall", config, streams, out=out, interval_s=0.3, live=runner.live_positions, stalls=runner.live_stalls
    ):
        thread.start()
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        thread.join(120)
        watcher.join(5)
    return box["result"], seen, out.getvalue()


def test_a_stalled_commit_on_the_process_runner_reaches_the_progress_line(tmp_path):
    config = _job(tmp_path, "process", f"{__name__}:HeldFlushLogFactory", "tests.apps.tasks:CopyTask")
    result, seen, out = _run_watching_stalls(config)
    assert result.succeeded, result.summary_line()
    assert result.messages_processed == 5
    assert seen and all(s.startswith("container 0: commit waiting ") for s in seen), seen
    assert any("(flushing the producer of system 'log')" in s for s in seen), seen
    assert "— stalled: container 0: commit waiting" in out, out


def test_a_run_loop_held_outside_a_commit_is_a_stall_too(tmp_path, caplog):
    config = _job(tmp_path, "thread", "log", f"{__name__}:HeldOnceTask")
    result, seen, out = _run_watching_stalls(config)
    assert result.succeeded, result.summary_line()
    assert seen and all(s.startswith("container 0: run loop waiting ") for s in seen), seen
    assert "(processing or polling the inputs)" in seen[0]
    assert "— stalled: container 0: run loop waiting" in out, out
    logged = [r.getMessage() for r in caplog.records if r.name == "samza_dagster.container.container"]
    assert any("a system does not answer; the job waits for it" in m for m in logged), logged
    assert any("; the job goes on" in m for m in logged), logged
