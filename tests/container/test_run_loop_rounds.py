"""The inline run loop over rounds (a round-robin chooser: SystemConsumers.choose_rounds hands over
many picks at once, and the loop records offsets per list) and over runs (a batching chooser,
``task.consumer.batch.size``: one partition's envelopes per decision), timed or not: a commit, a
shutdown or a failure in the middle of a list sees exactly the messages processed before it, as
with one pick at a time."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest

from samza_dagster.config import Config
from samza_dagster.container import ContainerStatus, SamzaContainer, TaskProcessError
from samza_dagster.container.run_loop import DeadlineAlarm
from samza_dagster.model import SystemStreamPartition
from samza_dagster.system.consumers import SystemConsumers
from samza_dagster.task import StreamTask, WindowableTask
from samza_dagster.task.coordinator import ContainerRequests, RequestScope
from support.waiting import wait_until
from tests.apps.harness import FnTaskFactory, create_stream, job_model, produce, read_checkpoints

PARTITIONS = 4
PER_PARTITION = 3000


#: the loop variants: the config that selects each, and the SystemConsumers call it takes lists from
VARIANTS = {
    "rounds": ({}, "choose_rounds"),
    "rounds-untimed": ({"metrics.timer.enabled": "false"}, "choose_rounds"),
    "runs": ({"task.consumer.batch.size": "700"}, "choose_run"),
    "runs-untimed": ({"task.consumer.batch.size": "700", "metrics.timer.enabled": "false"}, "choose_run"),
}


@pytest.fixture(params=sorted(VARIANTS))
def variant(request, monkeypatch):
    """A loop variant's config, and the sizes of the lists it was handed (to show it ran on them)."""
    extra, method = VARIANTS[request.param]
    sizes: list[int] = []
    original = getattr(SystemConsumers, method)

    def recording(self, timeout_s=0.0):
        batch = original(self, timeout_s)
        if batch is not None:
            sizes.append(len(batch))
        return batch

    monkeypatch.setattr(SystemConsumers, method, recording)
    return extra, sizes


def _config(tmp_path: Path, extra: dict[str, str]) -> Config:
    config = Config(
        {
            "job.name": "rounds",
            "job.default.system": "log",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(tmp_path / "log"),
            "task.inputs": "log.input",
            "systems.log.streams.input.samza.bounded": "true",
            "task.commit.ms": "600000",
            **extra,
        }
    )
    create_stream(config, "log", "input", PARTITIONS)
    produce(config, "log", "input", [(i % PARTITIONS, None, b"x") for i in range(PARTITIONS * PER_PARTITION)])
    return config


class Shared:
    """What every task of a run saw: messages processed in all, the last offset per partition."""

    def __init__(self, act_at: int, act) -> None:
        self.total = 0
        self.last: dict[SystemStreamPartition, str] = {}
        self.counts: dict[SystemStreamPartition, int] = {}
        self.act_at = act_at
        self.act = act
        self.seen_after: dict | None = None


class ActingTask(StreamTask):
    """Counts what it processes; at the ``act_at``-th message of the run does ``act``."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared

    def process(self, envelope, collector, coordinator):
        shared = self.shared
        if shared.total == shared.act_at:
            shared.act(envelope, coordinator)  # may raise: then this message is not processed
        shared.total += 1
        shared.last[envelope.ssp] = envelope.offset
        shared.counts[envelope.ssp] = shared.counts.get(envelope.ssp, 0) + 1


def _run(config: Config, shared: Shared) -> SamzaContainer:
    container = SamzaContainer("0", job_model(config), task_factory=FnTaskFactory(lambda name: ActingTask(shared)))
    try:
        container.run()
    except TaskProcessError:
        pass
    return container


def _processed(container: SamzaContainer) -> tuple[dict, dict]:
    last, counts = {}, {}
    for ti in container.tasks.values():
        last.update(ti.last_processed)
        counts.update({ssp: n for ssp, n in ti.metrics.processed.items() if n})
    return last, counts


def test_a_shutdown_in_the_middle_of_a_list_checkpoints_exactly_what_was_processed(tmp_path, variant):
    extra, lists = variant
    config = _config(tmp_path, extra)
    shared = Shared(5001, lambda env, coordinator: coordinator.shutdown(RequestScope.ALL_TASKS_IN_CONTAINER))
    container = _run(config, shared)
    assert container.summary.status is ContainerStatus.SHUTDOWN
    assert max(lists) > 100, "the loop did not run on rounds"
    assert shared.total == 5002  # the message that asked is processed; none after it
    last, counts = _processed(container)
    assert last == shared.last and counts == shared.counts
    checkpoints = read_checkpoints(config)
    offsets = {ssp: offset for cp in checkpoints.values() for ssp, offset in cp.offsets.items()}
    assert offsets == {(s.system, s.stream, s.partition): o for s, o in shared.last.items()}


def test_a_failure_in_the_middle_of_a_list_leaves_its_message_unprocessed(tmp_path, variant):
    extra, lists = variant
    config = _config(tmp_path, extra)

    def fail(envelope, coordinator):
        raise ValueError("boom")

    shared = Shared(4321, fail)
    container = _run(config, shared)
    assert container.summary.status is ContainerStatus.FAILED
    assert "boom" in str(container.summary.error)
    assert max(lists) > 100
    assert shared.total == 4321
    last, counts = _processed(container)
    assert last == shared.last and counts == shared.counts


def test_a_commit_asked_in_the_middle_of_a_list_is_made_before_the_next_message(tmp_path, variant):
    extra, lists = variant
    config = _config(tmp_path, extra)
    shared = Shared(3001, lambda env, coordinator: coordinator.commit())
    asked: dict = {}

    class CheckingTask(ActingTask):
        def process(self, envelope, collector, coordinator):
            if shared.total == shared.act_at + 1:  # the next message of the run: the commit is made
                asked["checkpoints"] = read_checkpoints(config)
                asked["last"] = dict(shared.last)
            super().process(envelope, collector, coordinator)

    container = SamzaContainer("0", job_model(config), task_factory=FnTaskFactory(lambda name: CheckingTask(shared)))
    container.run()
    assert container.summary.status is ContainerStatus.COMPLETED
    assert max(lists) > 100
    asking = [ssp for ssp, offset in asked["last"].items()]
    committed = {ssp: offset for cp in asked["checkpoints"].values() for ssp, offset in cp.offsets.items()}
    # the asking task's checkpoint holds its partition's offset of the asking message, exactly
    (ssp,) = [s for s in asking if (s.system, s.stream, s.partition) in committed]
    assert committed[(ssp.system, ssp.stream, ssp.partition)] == asked["last"][ssp]


class SlowWindowedTask(StreamTask):
    """Half a millisecond per message; counts its windows and the messages seen between them."""

    def __init__(self, log: list) -> None:
        self.log = log

    def process(self, envelope, collector, coordinator):
        self.log.append("m")
        deadline = time.perf_counter() + 0.0005
        while time.perf_counter() < deadline:
            pass

    def window(self, collector, coordinator):
        self.log.append("w")


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_windows_fall_due_while_a_list_is_processed(tmp_path, name):
    """Timed, the loop's clock reads are the look at the timers; untimed, the deadline alarm's flag:
    either way a window due in the middle of a list runs before the next message."""
    extra, _ = VARIANTS[name]
    config = Config(
        {
            "job.name": "windows",
            "job.default.system": "log",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(tmp_path / "log"),
            "task.inputs": "log.input",
            "systems.log.streams.input.samza.bounded": "true",
            "task.window.ms": "20",
            **extra,
        }
    )
    create_stream(config, "log", "input", 1)  # one task: its windows and messages in one log
    produce(config, "log", "input", [(0, None, b"x") for _ in range(600)])
    log: list[str] = []

    class Windowed(SlowWindowedTask, WindowableTask):
        pass

    container = SamzaContainer("0", job_model(config), task_factory=FnTaskFactory(lambda n: Windowed(log)))
    container.run()
    assert container.summary.status is ContainerStatus.COMPLETED and log.count("m") == 600
    # ~300 ms of messages, a window due every 20 ms: windows between the messages, not at the end
    gaps = [len(run) for run in "".join(log).split("w")]
    assert log.count("w") >= 5 and max(gaps) < 200, gaps


def test_the_deadline_alarm_raises_the_flag_at_its_deadline_and_not_before():
    requests = ContainerRequests()
    alarm = DeadlineAlarm(requests)
    try:
        alarm.arm(math.inf)
        time.sleep(0.05)
        assert not requests.pending
        armed = time.monotonic()
        alarm.arm(armed + 0.1)
        wait_until(lambda: requests.pending, what="the alarm")
        assert time.monotonic() - armed >= 0.099
        requests.looked()
        time.sleep(0.05)
        assert not requests.pending  # fired once: until armed again
        alarm.arm(time.monotonic() + 0.05)
        alarm.arm(math.inf)  # disarmed before it fell due
        time.sleep(0.1)
        assert not requests.pending
    finally:
        alarm.stop()
