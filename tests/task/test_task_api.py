"""Task API: task.class loading errors, the collector's serialization and unknown systems,
TaskCoordinator scopes, TaskCallback misuse, lazy deserialization in TaskInstance,
``TaskContext.set_start_offset``."""

from __future__ import annotations

import pytest

from samza_dagster.config import Config, ConfigError
from samza_dagster.container import ContainerStatus, DeserializationError, SamzaContainer
from samza_dagster.model import SystemStreamPartition
from samza_dagster.serde import SerdeRegistry
from samza_dagster.system import OutgoingMessageEnvelope, SystemStream, inmemory
from samza_dagster.system.inmemory import InMemorySystemFactory
from samza_dagster.task import (
    CallbackError,
    ClassTaskFactory,
    MessageCollector,
    RequestScope,
    TaskCallback,
    UnknownSystemError,
)
from samza_dagster.task.coordinator import ContainerRequests, TaskCoordinator
from samza_dagster.task.errors import NotTheTasksPartitionError
from tests.apps.harness import FnTaskFactory, create_stream, inmemory_config, job_model, produce, read_checkpoints


@pytest.fixture(autouse=True)
def _fresh_inmemory():
    inmemory.reset()
    yield
    inmemory.reset()


def test_task_class_missing_names_the_key():
    with pytest.raises(ConfigError, match="'task.class'") as info:
        ClassTaskFactory(Config({"job.name": "j"}))
    assert info.value.key == "task.class"


def test_task_class_that_does_not_exist_names_the_key():
    with pytest.raises(ConfigError, match=r"'task.class'.*no attribute 'Nope'"):
        ClassTaskFactory(Config({"task.class": "tests.apps.tasks:Nope"}))
    with pytest.raises(ConfigError, match=r"'task.class'.*cannot import module"):
        ClassTaskFactory(Config({"task.class": "tests.apps.no_such_module:Task"}))


def test_task_class_that_is_not_a_task_is_rejected():
    with pytest.raises(ConfigError, match=r"'task.class'.*NotATask is not a task class"):
        ClassTaskFactory(Config({"task.class": "tests.apps.tasks:NotATask"}))


def test_container_with_bad_task_class_fails_clearly():
    config = inmemory_config("bad", **{"task.class": "tests.apps.tasks:NotATask"})
    create_stream(config, "mem", "input", 1)
    with pytest.raises(ConfigError, match="task.class"):
        SamzaContainer("0", job_model(config)).run()


def _collector(config: Config) -> tuple[MessageCollector, object]:
    factory = InMemorySystemFactory()
    producer = factory.get_producer("mem", config)
    producer.register("Partition 0")
    producer.start()
    return MessageCollector("Partition 0", {"mem": producer}, SerdeRegistry(config)), producer


def test_collector_serializes_with_the_streams_serdes():
    config = Config(
        {
            "systems.mem.samza.factory": "inmemory",
            "systems.mem.samza.msg.serde": "json",
            "systems.mem.samza.key.serde": "string",
        }
    )
    create_stream(config, "mem", "out", 1)
    collector, producer = _collector(config)
    collector.send(OutgoingMessageEnvelope(SystemStream("mem", "out"), {"a": 1}, key="k"))
    producer.flush("Partition 0")
    consumer = InMemorySystemFactory().get_consumer("mem", config)
    from samza_dagster.system import SystemStreamPartition

    ssp = SystemStreamPartition("mem", "out", 0)
    consumer.register(ssp, "0")
    consumer.start()
    [env] = consumer.poll([ssp], 1.0)[ssp]
    assert env.key == b"k" and env.message == b'{"a":1}'


def test_collector_unknown_system_is_a_clear_error():
    config = Config({"systems.mem.samza.factory": "inmemory"})
    collector, _ = _collector(config)
    with pytest.raises(UnknownSystemError, match=r"system 'nope' is not configured.*configured systems: mem"):
        collector.send(OutgoingMessageEnvelope(SystemStream("nope", "out"), b"x"))


def test_coordinator_scopes_set_the_right_flags():
    requests = ContainerRequests()
    coordinator = TaskCoordinator("t", requests)
    coordinator.commit(RequestScope.CURRENT_TASK)
    assert coordinator.commit_requested and not requests.commit_all and requests.pending
    coordinator.shutdown(coordinator.ALL_TASKS_IN_CONTAINER)
    assert requests.shutdown_all and not coordinator.shutdown_requested


def test_callback_completed_twice_raises():
    seen = []
    from samza_dagster.system import IncomingMessageEnvelope, SystemStreamPartition

    env = IncomingMessageEnvelope(SystemStreamPartition("s", "t", 3), "17", None, None)
    cb = TaskCallback("Partition 3", env, lambda c, e: seen.append(e), 0.0)
    cb.complete()
    with pytest.raises(CallbackError, match=r"'Partition 3'.*s.t partition 3 offset 17.*more than once"):
        cb.failure(RuntimeError("late"))
    assert seen[0] is None and isinstance(seen[1], CallbackError)


def _deser_job(drop: bool):
    config = inmemory_config(
        "deser",
        **{
            "task.class": "tests.apps.tasks:NoOpTask",
            "systems.mem.samza.msg.serde": "json",
            "task.drop.deserialization.errors": str(drop).lower(),
        },
    )
    create_stream(config, "mem", "input", 1)
    produce(config, "mem", "input", [(0, None, b'{"n":1}'), (0, None, b"not json"), (0, None, b'{"n":3}')])
    return config


def test_bad_message_fails_with_task_stream_partition_and_offset():
    config = _deser_job(drop=False)
    with pytest.raises(DeserializationError, match=r"'Partition 0'.*mem.input partition 0 offset 1.*json"):
        SamzaContainer("0", job_model(config)).run()


def test_dropped_deserialization_errors_are_counted_and_their_offset_processed():
    config = _deser_job(drop=True)
    summary = SamzaContainer("0", job_model(config)).run()
    assert summary.status is ContainerStatus.COMPLETED
    assert summary.metrics["tasks"]["Partition 0"]["deserialization_errors_dropped"] == 1
    assert read_checkpoints(config)["Partition 0"].offsets[("mem", "input", 0)] == "2"


class _StartAtTask:
    """Asks, at init, to start its partition at ``start``; records the offsets it processes."""

    def __init__(self, start: str | None, partition: int = 0) -> None:
        self.start = start
        self.partition = partition
        self.offsets: list[str] = []

    def init(self, context) -> None:
        if self.start is not None:
            context.set_start_offset(SystemStreamPartition("mem", "input", self.partition), self.start)

    def process(self, envelope, collector, coordinator) -> None:
        self.offsets.append(envelope.offset)


def _run_start_at(config: Config, start: str | None, partition: int = 0) -> _StartAtTask:
    task = _StartAtTask(start, partition)
    summary = SamzaContainer("0", job_model(config), task_factory=FnTaskFactory(lambda name: task)).run()
    assert summary.status is ContainerStatus.COMPLETED
    return task


def test_set_start_offset_wins_over_the_checkpoint():
    config = inmemory_config("start-at")
    create_stream(config, "mem", "input", 1)
    produce(config, "mem", "input", [(0, None, f"m{i}".encode()) for i in range(5)])
    assert _run_start_at(config, "2").offsets == ["2", "3", "4"]
    assert read_checkpoints(config)["Partition 0"].offsets[("mem", "input", 0)] == "4"
    produce(config, "mem", "input", [(0, None, b"m5")])
    # without it the checkpoint decides; with it the task reads from where it asked
    assert _run_start_at(config, None).offsets == ["5"]
    assert _run_start_at(config, "1").offsets == ["1", "2", "3", "4", "5"]


def test_set_start_offset_for_another_tasks_partition_is_refused():
    config = inmemory_config("start-at-other")
    create_stream(config, "mem", "input", 1)
    with pytest.raises(NotTheTasksPartitionError, match=r"'Partition 0'.*mem\.input\[3\]"):
        _run_start_at(config, "0", partition=3)
