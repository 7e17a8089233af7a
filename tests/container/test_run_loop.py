"""RunLoop happens-before guarantees, concurrency and failure paths (in-memory system)."""

from __future__ import annotations

import re
import threading
from typing import NamedTuple

import pytest

from samza_dagster.config import Config
from samza_dagster.container import (
    CallbackTimeoutError,
    ContainerStatus,
    SamzaContainer,
    TaskProcessError,
)
from samza_dagster.model import SystemStreamPartition
from samza_dagster.system import inmemory
from samza_dagster.task import StreamTask
from support.waiting import wait_until
from tests.apps.harness import FnTaskFactory, ManualClock, create_stream, job_model, produce, read_checkpoints
from tests.apps.tasks import Recorder, RecordingTask, ThreadedAsyncTask
from tests.kill_points import ThreadedRun


@pytest.fixture(autouse=True)
def _fresh_inmemory():
    inmemory.reset()
    yield
    inmemory.reset()


def _config(**extra) -> Config:
    entries = {
        "job.name": "runloop",
        "job.default.system": "mem",
        "systems.mem.samza.factory": "inmemory",
        "task.inputs": "mem.input",
        "systems.mem.streams.input.samza.bounded": "true",
    }
    entries.update(extra)
    return Config(entries)


def _setup(config: Config, partitions: int, per_partition: int) -> None:
    create_stream(config, "mem", "input", partitions)
    produce(config, "mem", "input", [(p, None, i) for i in range(per_partition) for p in range(partitions)])


def _run(config: Config, make) -> tuple[SamzaContainer, FnTaskFactory]:
    factory = FnTaskFactory(make)
    container = SamzaContainer("0", job_model(config), task_factory=factory)
    container.run()
    return container, factory


def _by_task(events):
    out: dict[str, list] = {}
    for e in events:
        out.setdefault(e.task, []).append(e)
    return out


def test_max_concurrency_one_each_process_completes_before_the_next_starts_in_a_pool():
    config = _config(**{"job.container.thread.pool.size": "4"})
    _setup(config, 4, 15)
    rec = Recorder()
    container, _ = _run(config, lambda name: RecordingTask(name, rec, sleep_s=0.002))
    assert container.summary.status is ContainerStatus.COMPLETED
    per_task = _by_task(rec.of("process"))
    assert len(per_task) == 4
    threads = set()
    for name, events in per_task.items():
        assert [int(e.offset) for e in events] == list(range(15)), "in order within the partition"
        for prev, nxt in zip(events, events[1:], strict=False):
            assert prev.end <= nxt.start, f"{name}: a process started before the previous one completed"
        threads |= {e.thread for e in events}
    assert threading.get_ident() not in threads, "sync tasks ran in the pool"
    assert len(threads) > 1


@pytest.mark.parametrize("pool", ["0", "4"])
def test_window_runs_only_when_no_process_is_pending_and_blocks_new_ones(pool):
    config = _config(**{"job.container.thread.pool.size": pool, "task.window.ms": "10"})
    _setup(config, 2, 40)
    rec = Recorder()
    _run(config, lambda name: RecordingTask(name, rec, sleep_s=0.001, window_sleep_s=0.001))
    assert rec.of("violation") == []
    windows = _by_task(rec.of("window"))
    processes = _by_task(rec.of("process"))
    assert sum(len(w) for w in windows.values()) >= 2
    # as Samza's AsyncRunLoop: with a pool, a sync task's window runs there, not on the loop's thread
    window_threads = {w[2] for ws in windows.values() for w in ws}
    assert (threading.get_ident() in window_threads) == (pool == "0")
    for name, ws in windows.items():
        for w in ws:
            for p in processes[name]:
                overlap = p.start < w.end and w.start < p.end
                assert not overlap, (
                    f"{name}: window {w.start:.4f}-{w.end:.4f} overlaps process {p.start:.4f}-{p.end:.4f}"
                )


class _CommitSeen(NamedTuple):
    """A task at the moment the container committed it."""

    task: str
    in_flight: int
    offsets: dict[SystemStreamPartition, str]
    completed: set[str | None]


class _CommitWatchingContainer(SamzaContainer):
    """Records, at every commit, how many messages of the task were in flight and what the
    task had completed, to check commits against the guarantees."""

    def __init__(self, *args, recorder: Recorder, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.recorder = recorder
        self.commits: list[_CommitSeen] = []

    def _commit(self, tasks) -> None:
        for ti in tasks:
            completed = {e.offset for e in self.recorder.of("complete") if e.task == ti.task_name}
            in_flight = self.run_loop.workers[ti.task_name].in_flight
            self.commits.append(_CommitSeen(ti.task_name, in_flight, dict(ti.last_processed), completed))
        super()._commit(tasks)


def test_async_out_of_order_completion_commit_covers_only_a_completed_prefix():
    config = _config(**{"task.max.concurrency": "4", "task.commit.ms": "5"})
    _setup(config, 1, 60)
    rec = Recorder()
    factory = FnTaskFactory(lambda name: ThreadedAsyncTask(name, rec, delay_s=0.004, reverse=True))
    container = _CommitWatchingContainer("0", job_model(config), task_factory=factory, recorder=rec)
    container.run()
    assert container.summary.status is ContainerStatus.COMPLETED
    assert len(container.commits) >= 3
    for commit in container.commits:
        assert commit.in_flight == 0, "commit ran while a message was in flight"
        for offset in commit.offsets.values():
            covered = {str(i) for i in range(int(offset) + 1)}
            assert covered <= commit.completed, f"checkpoint {offset} covers a message not completed"
    # completions really were out of order and on other threads
    starts = rec.of("start")
    completes = [e.offset for e in rec.of("complete")]
    assert completes != sorted(completes, key=int)
    assert {e.thread for e in starts} == {starts[0].thread}
    assert {e.thread for e in rec.of("complete")}.isdisjoint({starts[0].thread})
    assert read_checkpoints(config)["Partition 0"].offsets == {("mem", "input", 0): "59"}


def test_a_pool_of_four_runs_four_tasks_process_calls_at_the_same_time():
    # each process call waits until four are running at once: a loop that ran them one at a
    # time would break the barrier (its timeout is only the test's deadline)
    barrier = threading.Barrier(4, timeout=30)

    class MeetingTask(StreamTask):
        def process(self, envelope, collector, coordinator):
            barrier.wait()

    config = _config(**{"job.container.thread.pool.size": "4"})
    _setup(config, 4, 20)
    container, _ = _run(config, lambda name: MeetingTask())
    assert container.summary.messages_processed == 80
    assert not barrier.broken


def test_callback_completed_twice_fails_the_job_clearly():
    config = _config()
    _setup(config, 1, 5)
    rec = Recorder()
    factory = FnTaskFactory(lambda name: ThreadedAsyncTask(name, rec, delay_s=0.001, complete_twice=True))
    container = SamzaContainer("0", job_model(config), task_factory=factory)
    with pytest.raises(TaskProcessError, match="completed more than once") as info:
        container.run()
    assert "Partition 0" in str(info.value) and "offset 0" in str(info.value)
    assert factory.tasks["Partition 0"].second_error, "the second complete() raised in the caller too"
    assert container.summary.status is ContainerStatus.FAILED


def test_callback_timeout_is_read_off_the_run_loops_clock_and_names_task_and_offset():
    """A ten-minute ``task.callback.timeout.ms`` fails the message as soon as ten minutes pass on
    the container's clock — no real waiting."""
    config = _config(**{"task.callback.timeout.ms": "600000"})
    _setup(config, 1, 3)
    rec = Recorder()
    clock = ManualClock()
    factory = FnTaskFactory(lambda name: ThreadedAsyncTask(name, rec, never_complete=True))
    container = SamzaContainer("0", job_model(config), task_factory=factory, clock=clock)
    run = ThreadedRun(container.run, stop=container.stop)
    try:
        wait_until(lambda: rec.of("start"), what="the task started its first message")
        assert run.running(), "the timeout fired before its clock moved"
        clock.now += 600.001
        run.wait(10)
    finally:
        run.abandon()
    assert isinstance(run.error, CallbackTimeoutError), run.error
    assert re.search(r"'Partition 0'.*offset 0.*task.callback.timeout.ms=600000", str(run.error)), run.error


def test_async_failure_fails_the_job_with_coordinates():
    config = _config()
    _setup(config, 1, 5)
    rec = Recorder()
    factory = FnTaskFactory(lambda name: ThreadedAsyncTask(name, rec, delay_s=0.001, fail_offset="2"))
    with pytest.raises(TaskProcessError, match=r"Partition 0.*mem.input partition 0 offset 2"):
        SamzaContainer("0", job_model(config), task_factory=factory).run()


@pytest.mark.parametrize("pool", ["0", "2"])
def test_process_that_raises_fails_with_coordinates_and_checkpoint_stays_before_it(pool):
    config = _config(
        **{"task.class": "tests.apps.tasks:FailingTask", "task.commit.ms": "1", "job.container.thread.pool.size": pool}
    )
    create_stream(config, "mem", "input", 1)
    messages = [(0, None, f"m{i}") for i in range(500)] + [(0, None, "boom")] + [(0, None, "after")] * 10
    produce(config, "mem", "input", messages)
    container = SamzaContainer("0", job_model(config))
    with pytest.raises(TaskProcessError) as info:
        container.run()
    text = str(info.value)
    assert "'Partition 0'" in text and "mem.input partition 0 offset 500" in text and "bad message boom" in text
    assert info.value.offset == "500"
    cps = read_checkpoints(config)
    if "Partition 0" in cps:
        assert int(cps["Partition 0"].offsets[("mem", "input", 0)]) < 500


def test_shutdown_all_tasks_stops_the_container_after_a_commit():
    config = _config(
        **{
            "task.class": "tests.apps.tasks:ShutdownAfterTask",
            "test.shutdown.after": "7",
            "systems.mem.streams.input.samza.bounded": "false",
        }
    )
    _setup(config, 1, 50)
    summary = SamzaContainer("0", job_model(config)).run()
    assert summary.status is ContainerStatus.SHUTDOWN
    assert read_checkpoints(config)["Partition 0"].offsets[("mem", "input", 0)] == "6"


def test_stop_event_stops_an_unbounded_container_gracefully():
    config = _config(**{"systems.mem.streams.input.samza.bounded": "false", "task.class": "tests.apps.tasks:NoOpTask"})
    _setup(config, 2, 10)
    stop = threading.Event()
    container = SamzaContainer("0", job_model(config), stop_event=stop)
    t = threading.Thread(target=container.run)
    t.start()
    wait_until(
        lambda: sum(ti.metrics.envelopes_processed for ti in list(container.tasks.values())) == 20,
        what="every message processed",
    )
    stop.set()
    t.join(5)
    assert not t.is_alive()
    assert container.summary.status is ContainerStatus.SHUTDOWN
    assert container.summary.messages_processed == 20
    cps = read_checkpoints(config)
    assert cps["Partition 1"].offsets[("mem", "input", 1)] == "9"


def test_windows_and_commits_follow_the_run_loops_clock_not_the_wall():
    """task.window.ms and task.commit.ms are read off the clock the container is given: with the
    clock held, no window and no timed commit happens however long the job runs; each move past
    a period fires exactly one — no sleeping for real periods."""
    config = _config(
        **{
            "systems.mem.streams.input.samza.bounded": "false",
            "task.class": "tests.apps.tasks:NoOpTask",
            "task.window.ms": "600000",
            "task.commit.ms": "1200000",
        }
    )
    _setup(config, 1, 10)
    recorder = Recorder()
    clock = ManualClock()
    stop = threading.Event()
    factory = FnTaskFactory(lambda name: RecordingTask(name, recorder))
    container = SamzaContainer("0", job_model(config), task_factory=factory, stop_event=stop, clock=clock)
    t = threading.Thread(target=container.run)
    t.start()

    def passes_after(before: int, n: int = 3) -> None:  # the loop looked at its timers again
        wait_until(lambda: container.metrics.null_chooses >= before + n, what=f"{n} idle run-loop passes")

    try:
        wait_until(
            lambda: sum(ti.metrics.envelopes_processed for ti in list(container.tasks.values())) == 10,
            what="every message processed",
        )
        (ti,) = container.tasks.values()
        passes_after(container.metrics.null_chooses)
        assert ti.metrics.window_count == 0 and ti.metrics.commit_count == 0
        clock.now += 599.999
        passes_after(container.metrics.null_chooses)
        assert ti.metrics.window_count == 0
        clock.now += 0.002  # past 10 minutes: one window
        wait_until(lambda: ti.metrics.window_count == 1, what="the window after 10 minutes")
        passes_after(container.metrics.null_chooses)
        assert ti.metrics.window_count == 1 and ti.metrics.commit_count == 0
        clock.now += 600.0  # 20 minutes: the second window and the timed commit
        wait_until(lambda: ti.metrics.window_count == 2 and ti.metrics.commit_count == 1, what="window 2 and a commit")
        assert read_checkpoints(config)["Partition 0"].offsets[("mem", "input", 0)] == "9"
    finally:
        stop.set()
        t.join(10)
    assert not t.is_alive()
