"""Typed view over the ``task.*`` keys (defined in :mod:`samza_dagster.config.keys`)."""

from __future__ import annotations

from dataclasses import dataclass

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.model import SystemStream


@dataclass(frozen=True)
class TaskConfig:
    config: Config

    @property
    def inputs(self) -> list[SystemStream]:
        """``task.inputs`` as SystemStreams; each entry must be ``system.stream``."""
        return [parse_system_stream(entry, key=keys.TASK_INPUTS.name) for entry in keys.TASK_INPUTS.get(self.config)]

    @property
    def task_class(self) -> str | None:
        return keys.TASK_CLASS.get(self.config)

    @property
    def window_ms(self) -> int:
        return keys.TASK_WINDOW_MS.get(self.config) or keys.TASK_WINDOW_MS.default  # 0: never, as -1

    @property
    def commit_ms(self) -> int:
        return keys.TASK_COMMIT_MS.get(self.config) or keys.TASK_COMMIT_MS.default  # 0: the default

    @property
    def max_concurrency(self) -> int:
        return keys.TASK_MAX_CONCURRENCY.get(self.config)

    @property
    def callback_timeout_ms(self) -> int:
        return keys.TASK_CALLBACK_TIMEOUT_MS.get(self.config) or keys.TASK_CALLBACK_TIMEOUT_MS.default  # 0: no limit

    @property
    def chooser_class(self) -> str | None:
        return keys.TASK_CHOOSER_CLASS.get(self.config)

    @property
    def consumer_batch_size(self) -> int:
        return keys.TASK_CONSUMER_BATCH_SIZE.get(self.config)

    @property
    def drop_deserialization_errors(self) -> bool:
        return keys.TASK_DROP_DESERIALIZATION_ERRORS.get(self.config)

    @property
    def shutdown_ms(self) -> int:
        return keys.TASK_SHUTDOWN_MS.get(self.config) or keys.TASK_SHUTDOWN_MS.default  # 0: the default

    @property
    def checkpoint_system(self) -> str | None:
        return keys.TASK_CHECKPOINT_SYSTEM.get(self.config)

    def legacy_priorities(self) -> dict[SystemStream, int]:
        """``task.chooser.priorities.<system>.<stream>=<int>``."""
        prefix = keys.TASK_CHOOSER_PRIORITY.name.split("<", 1)[0]
        result: dict[SystemStream, int] = {}
        for key in self.config:
            if key.startswith(prefix):
                stream = parse_system_stream(key[len(prefix) :], key=key)
                value = keys.TASK_CHOOSER_PRIORITY.read(self.config, key)
                if value is not None:  # set but blank: no priority
                    result[stream] = value
        return result


def parse_system_stream(entry: str, key: str) -> SystemStream:
    """``system.stream`` → SystemStream; the stream part may itself contain dots."""
    system, sep, stream = entry.strip().partition(".")
    if not sep or not system or not stream:
        raise ConfigError(f"config key {key!r}: expected system.stream, got {entry!r}", key=key)
    return SystemStream(system, stream)
