"""Container lifecycle: metrics and summary, changelog partition checks at start-up, graceful
stop through the thread runner, the shutdown timeout."""

from __future__ import annotations

import threading

import pytest

from samza_dagster.config import Config
from samza_dagster.container import ContainerError, ContainerStatus, SamzaContainer
from samza_dagster.runtime.thread_runner import ThreadJobRunner
from samza_dagster.storage import ChangelogPartitionMismatchError
from samza_dagster.system import inmemory
from support.waiting import wait_until
from tests.apps.harness import FnTaskFactory, ManualClock, create_stream, inmemory_config, job_model, produce
from tests.apps.tasks import Recorder, ThreadedAsyncTask
from tests.kill_points import ThreadedRun


@pytest.fixture(autouse=True)
def _fresh_inmemory():
    inmemory.reset()
    yield
    inmemory.reset()


def test_summary_has_per_stream_counts_offsets_metrics_and_lag():
    config = inmemory_config("metrics", **{"task.class": "tests.apps.tasks:CopyTask", "test.output.system": "mem"})
    create_stream(config, "mem", "input", 2)
    create_stream(config, "mem", "output", 1)
    produce(config, "mem", "input", [(i % 2, None, i) for i in range(10)])
    summary = SamzaContainer("0", job_model(config)).run()
    assert summary.messages_per_stream == {"mem.input": 10}
    assert summary.final_offsets == {"Partition 0": {"mem.input[0]": "4"}, "Partition 1": {"mem.input[1]": "4"}}
    task = summary.metrics["tasks"]["Partition 0"]
    assert task["envelopes_processed"] == 5 and task["commit_count"] >= 1 and task["process_s"] > 0
    assert summary.metrics["lag"] == {"mem.input[0]": 0, "mem.input[1]": 0}
    assert "system-consumers" in summary.metrics and summary.metrics["system-consumers"]["buffered_total"] == 0
    assert "container 0 completed: 10 messages" in summary.one_line()
    assert ContainerStatus(summary.to_dict()["status"]) is ContainerStatus.COMPLETED


def test_store_changelog_with_the_wrong_partition_count_fails_the_container():
    config = inmemory_config("cl", **{"stores.counts.factory": "inmemory", "stores.counts.changelog": "mem.counts-cl"})
    create_stream(config, "mem", "input", 2)
    create_stream(config, "mem", "counts-cl", 5)
    with pytest.raises(ChangelogPartitionMismatchError, match=r"'counts'.*mem.counts-cl has 5 partitions.*2 tasks"):
        SamzaContainer("0", job_model(config)).run()


def test_thread_runner_stop_is_graceful(tmp_path):
    config = Config(
        {
            "job.name": "stopme",
            "job.factory.class": "thread",
            "job.container.count": "2",
            "job.default.system": "log",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(tmp_path / "log"),
            "task.inputs": "log.input",
            "task.class": "tests.apps.tasks:NoOpTask",
        }
    )
    create_stream(config, "log", "input", 2)
    produce(config, "log", "input", [(i % 2, None, b"x") for i in range(100)])
    runner = ThreadJobRunner(config)
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("r", runner.run()))
    t.start()
    wait_until(
        lambda: sum(ti.metrics.envelopes_processed for c in runner.containers for ti in list(c.tasks.values())) == 100,
        what="every message processed",
    )
    runner.stop()
    t.join(20)
    result = box["r"]
    assert result.succeeded, result.summary_line()
    assert {s.status for s in result.summaries} == {ContainerStatus.SHUTDOWN}
    assert result.messages_processed == 100


def test_shutdown_timeout_fails_when_in_flight_work_never_completes():
    """``task.shutdown.ms`` is measured on the container's clock: ten minutes passing on it after
    a stop fail the stuck task at once, with no real waiting."""
    config = inmemory_config(
        "stuck", **{"task.shutdown.ms": "600000", "systems.mem.streams.input.samza.bounded": "false"}
    )
    create_stream(config, "mem", "input", 1)
    produce(config, "mem", "input", [(0, None, 1)])
    rec = Recorder()
    clock = ManualClock()
    factory = FnTaskFactory(lambda n: ThreadedAsyncTask(n, rec, never_complete=True))
    container = SamzaContainer("0", job_model(config), task_factory=factory, clock=clock)
    run = ThreadedRun(container.run)
    wait_until(lambda: rec.of("start"), what="the task started its message")
    container.stop()
    assert run.running(), "the container stopped with a message in flight"

    def ten_minutes_later() -> bool:
        # moved again on every look: the first move may come before the loop saw the stop
        clock.now += 600.001
        return not run.running()

    wait_until(ten_minutes_later, timeout_s=10, what="the shutdown timeout on the moved clock")
    assert isinstance(run.error, ContainerError), run.error
    assert "task.shutdown.ms=600000" in str(run.error) and "Partition 0" in str(run.error)


def test_thread_runner_restarts_containers_on_a_new_job_model_without_reprocessing(tmp_path):
    from samza_dagster.coordinator.stream.writer_tool import run_coordinator_stream_writer

    config = Config(
        {
            "job.name": "reconf",
            "job.factory.class": "thread",
            "job.default.system": "log",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(tmp_path / "log"),
            "task.inputs": "log.input",
            "task.class": "tests.apps.tasks:NoOpTask",
            "job.coordinator.monitor.interval.ms": "100",
            "job.coordinator.watch.interval.ms": "100",
        }
    )
    create_stream(config, "log", "input", 1)
    produce(config, "log", "input", [(0, None, b"x") for _ in range(20)])
    runner = ThreadJobRunner(config)
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("r", runner.run()))
    t.start()
    wait_until(
        lambda: any(ti.metrics.envelopes_processed == 20 for c in runner.containers for ti in list(c.tasks.values())),
        what="every message processed",
    )
    run_coordinator_stream_writer(config, "set-config", "test.new.key", "1")
    wait_until(
        lambda: runner.containers and runner.containers[0].config.get_str("test.new.key") == "1",
        what="the containers running on the new JobModel",
    )
    runner.stop()
    t.join(20)
    result = box["r"]
    assert result.succeeded, result.summary_line()
    assert result.runs == 2 and result.model_version == 2
    # the restarted containers resumed after the graceful commit: they processed nothing, and
    # the job's count is every message once
    assert sum(s.messages_processed for s in result.summaries) == 0, "the restarted container reprocessed"
    assert result.messages_processed == 20


def test_process_runner_restarts_containers_on_a_new_job_model_without_reprocessing(tmp_path):
    from samza_dagster.coordinator.stream.writer_tool import run_coordinator_stream_writer
    from samza_dagster.runtime.process_runner import ProcessJobRunner
    from samza_dagster.system.factories import system_factory

    config = Config(
        {
            "job.name": "reconf-process",
            "job.factory.class": "process",
            "job.default.system": "log",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(tmp_path / "log"),
            "task.inputs": "log.input",
            "task.class": "tests.apps.tasks:CopyTask",
            "task.commit.ms": "100",
            "job.coordinator.monitor.interval.ms": "100",
            "job.coordinator.watch.interval.ms": "100",
        }
    )
    create_stream(config, "log", "input", 1)
    create_stream(config, "log", "output", 1)
    produce(config, "log", "input", [(0, None, b"x") for _ in range(20)])
    admin = system_factory(config, "log").get_admin("log", config)

    def copied() -> int:
        newest = admin.get_system_stream_metadata(["output"])["output"].partitions
        return sum(int(pm.newest_offset) + 1 for pm in newest.values() if pm.newest_offset is not None)

    runner = ProcessJobRunner(config)
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("r", runner.run()))
    t.start()
    try:
        wait_until(lambda: copied() == 20, what="the first 20 messages copied")
        run_coordinator_stream_writer(config, "set-config", "test.new.key", "1")
        wait_until(lambda: runner.runs == 2, what="the containers started again on the new JobModel")
        produce(config, "log", "input", [(0, None, b"y") for _ in range(10)])
        wait_until(lambda: copied() == 30, what="the next 10 messages copied by the restarted container")
    finally:
        runner.stop()
        t.join(60)
    result = box["r"]
    assert result.succeeded, result.summary_line()
    assert result.runs == 2 and result.model_version == 2
    # the restarted container resumed after the graceful commit: every message copied once
    assert result.messages_processed == 30 and copied() == 30


def test_unbounded_log_job_output_is_readable_before_the_commit_and_checkpointed_after_it(tmp_path):
    """A new user's first try: an unbounded job on the embedded log with the default commit
    interval (60 s), two lines produced from elsewhere. Their outputs must be readable at once
    (the log producer lingers like Kafka's), not at the commit; the checkpoint written at stop
    still covers them only after they are written."""
    from samza_dagster.model import SystemStreamPartition
    from samza_dagster.system.factories import system_factory
    from tests.apps.harness import read_checkpoints

    config = Config(
        {
            "job.name": "first-try",
            "job.default.system": "log",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(tmp_path / "log"),
            "systems.log.samza.offset.default": "oldest",
            "task.inputs": "log.lines",
            "task.class": "tests.apps.tasks:CopyTask",
            "test.output.stream": "copied",
        }
    )
    create_stream(config, "log", "lines", 1)
    create_stream(config, "log", "copied", 1)
    container = SamzaContainer("0", job_model(config))
    runner = threading.Thread(target=container.run)
    runner.start()
    out = SystemStreamPartition("log", "copied", 0)
    reader = system_factory(config, "log").get_consumer("log", config)
    reader.register(out, "0")
    reader.start()
    try:
        produce(config, "log", "lines", [(0, None, b"hello"), (0, None, b"world")])
        seen: list[bytes] = []
        deadline = threading.Event()
        timer = threading.Timer(50, deadline.set)  # well inside the 60 s commit interval
        timer.start()
        while len(seen) < 2 and not deadline.is_set():
            seen += [e.message for e in reader.poll([out], 0.1).get(out, [])]
        timer.cancel()
        assert seen == [b"hello", b"world"], f"outputs {seen} not readable before the commit"
    finally:
        reader.stop()
        container.stop()
        runner.join(60)
    assert not runner.is_alive()
    # Samza checkpoints the last processed offset: both lines, after their outputs
    assert read_checkpoints(config)["Partition 0"].offsets[SystemStreamPartition("log", "lines", 0)] == "1"


def test_the_summary_lag_is_the_final_metrics_lag_looked_up_once_at_the_stop(monkeypatch):
    """One offsets lookup of the inputs when the container stops: the summary's lag is the one the
    final metrics snapshot computed (messages-behind-high-watermark), not a second lookup."""
    from samza_dagster.container.container import SamzaContainer as Container
    from samza_dagster.metrics import LOG_CONSUMER_GROUP
    from samza_dagster.system.inmemory.admin import InMemorySystemAdmin

    config = inmemory_config("lagonce", **{"task.class": "tests.apps.tasks:CopyTask", "test.output.system": "mem"})
    create_stream(config, "mem", "input", 2)
    create_stream(config, "mem", "output", 1)
    produce(config, "mem", "input", [(i % 2, None, i) for i in range(10)])
    lookups: list[list[str]] = []
    stopping = threading.Event()
    original_lookup = InMemorySystemAdmin.get_system_stream_metadata
    original_shutdown = Container._shutdown

    def lookup(self, stream_names):
        names = sorted(stream_names)
        if stopping.is_set() and "input" in names:
            lookups.append(names)
        return original_lookup(self, names)

    def shutdown(self, clean):
        stopping.set()
        return original_shutdown(self, clean)

    monkeypatch.setattr(InMemorySystemAdmin, "get_system_stream_metadata", lookup)
    monkeypatch.setattr(Container, "_shutdown", shutdown)
    summary = Container("0", job_model(config)).run()
    assert summary.metrics["lag"] == {"mem.input[0]": 0, "mem.input[1]": 0}
    assert len(lookups) == 1, lookups
    registry = summary.metrics["registry"]["samza-container-0"]
    groups = [g for g in registry if g.endswith("SystemConsumerMetrics") or g == LOG_CONSUMER_GROUP]
    behind = {k: v for g in groups for k, v in registry[g].items() if k.endswith("-messages-behind-high-watermark")}
    assert behind == {"mem-input-0-messages-behind-high-watermark": 0, "mem-input-1-messages-behind-high-watermark": 0}
