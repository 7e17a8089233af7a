"""Typed view over the ``task.*`` keys."""

from __future__ import annotations

from dataclasses import dataclass

from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.model import SystemStream


@dataclass(frozen=True)
class TaskConfig:
    config: Config

    @property
    def inputs(self) -> list[SystemStream]:
        """``task.inputs`` as SystemStreams; each entry must be ``system.stream``."""
        result = []
        for entry in self.config.get_list("task.inputs"):
            result.append(parse_system_stream(entry, key="task.inputs"))
        return result

    @property
    def task_class(self) -> str | None:
        return self.config.get_str("task.class")

    @property
    def window_ms(self) -> int:
        return self.config.get_int("task.window.ms", -1) or -1

    @property
    def commit_ms(self) -> int:
        return self.config.get_int("task.commit.ms", 60_000) or 60_000

    @property
    def max_concurrency(self) -> int:
        value = self.config.get_int("task.max.concurrency", 1) or 1
        if value < 1:
            raise ConfigError(f"task.max.concurrency must be at least 1, got {value}", key="task.max.concurrency")
        return value

    @property
    def callback_timeout_ms(self) -> int:
        return self.config.get_int("task.callback.timeout.ms", -1) or -1

    @property
    def chooser_class(self) -> str | None:
        return self.config.get_str("task.chooser.class")

    @property
    def consumer_batch_size(self) -> int:
        return self.config.get_int("task.consumer.batch.size", 1) or 1

    @property
    def drop_deserialization_errors(self) -> bool:
        return self.config.get_bool("task.drop.deserialization.errors", False)

    @property
    def shutdown_ms(self) -> int:
        return self.config.get_int("task.shutdown.ms", 30_000) or 30_000

    @property
    def checkpoint_system(self) -> str | None:
        return self.config.get_str("task.checkpoint.system")

    def legacy_priorities(self) -> dict[SystemStream, int]:
        """``task.chooser.priorities.<system>.<stream>=<int>``."""
        prefix = "task.chooser.priorities."
        result: dict[SystemStream, int] = {}
        for key in self.config:
            if key.startswith(prefix):
                stream = parse_system_stream(key[len(prefix):], key=key)
                value = self.config.get_int(key)
                assert value is not None
                result[stream] = value
        return result


def parse_system_stream(entry: str, key: str) -> SystemStream:
    """``system.stream`` → SystemStream; the stream part may itself contain dots."""
    system, sep, stream = entry.strip().partition(".")
    if not sep or not system or not stream:
        raise ConfigError(f"config key {key!r}: expected system.stream, got {entry!r}", key=key)
    return SystemStream(system, stream)
