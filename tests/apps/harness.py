"""Helpers: build JobModels with the coordinator's model builder, fill streams, make task
factories that hand tests' own task objects to the container."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from samza_dagster.config import Config
from samza_dagster.coordinator.model.builder import build_job_model
from samza_dagster.coordinator.model.job_model import JobModel
from samza_dagster.model import OutgoingMessageEnvelope, StreamSpec, SystemStream
from samza_dagster.system.factories import system_admin, system_factory


def job_model(config: Config) -> JobModel:
    return build_job_model(config).model


def create_stream(config: Config, system: str, stream: str, partitions: int) -> None:
    # closed afterwards: a Kafka admin left open keeps reconnecting (and logging errors into later
    # tests' caplog) once its broker stops, as a module's own broker does at the module's end
    with system_admin(config, system) as admin:
        admin.create_stream(StreamSpec(stream, stream, system, partitions))


def produce(
    config: Config, system: str, stream: str, messages: Iterable[tuple[int, Any, Any]], event_time: int | None = None
) -> int:
    """Write (partition, key, message) triples (with ``event_time`` as their timestamp, else
    now); returns how many."""
    producer = system_factory(config, system).get_producer(system, config)
    producer.register("test")
    producer.start()
    ss = SystemStream(system, stream)
    n = 0
    for partition, key, message in messages:
        producer.send("test", OutgoingMessageEnvelope(ss, message, key=key, partition=partition, event_time=event_time))
        n += 1
    producer.flush("test")
    producer.stop()
    return n


class FnTaskFactory:
    """A TaskFactory calling ``make(task_name)``; keeps what it made in ``tasks``."""

    def __init__(self, make: Callable[[str], Any]) -> None:
        self.make = make
        self.tasks: dict[str, Any] = {}

    def create_task(self, task_name: str) -> Any:
        task = self.tasks[task_name] = self.make(task_name)
        return task


def read_checkpoints(config: Config) -> dict:
    """The last checkpoint of every task, read back the way a container does."""
    from samza_dagster.checkpoint import CheckpointManager, checkpoint_system

    system = checkpoint_system(config)
    factory = system_factory(config, system)
    manager = CheckpointManager(
        config,
        factory.get_admin(system, config),
        factory.get_producer(system, config),
        lambda: factory.get_consumer(system, config),
    )
    return manager.read_last()


def inmemory_config(name: str, partitions: int = 1, **extra: Any) -> Config:
    """A bounded job on the in-memory system ``mem`` reading ``mem.input``."""
    entries = {
        "job.name": name,
        "job.default.system": "mem",
        "systems.mem.samza.factory": "inmemory",
        "task.inputs": "mem.input",
        "systems.mem.streams.input.samza.bounded": "true",
        "task.class": "tests.apps.tasks:NoOpTask",
    }
    entries.update({k.replace("__", "."): str(v) for k, v in extra.items()})
    return Config(entries)


class ManualClock:
    """A monotonic clock that moves only when the test moves it (``SamzaContainer(clock=...)``):
    windows, commits and timeouts of the run loop then fire without real waiting."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now
