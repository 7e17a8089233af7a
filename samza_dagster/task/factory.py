"""TaskFactory: how the container gets each task's instance.

The default builds ``task.class``; the high-level API plugs its operator graph in by
supplying another factory (``SamzaContainer(..., task_factory=...)``) whose tasks run the
graph — the container never needs to know which it got."""

from __future__ import annotations

from typing import Any, Protocol

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.serde.registry import load_class
from samza_dagster.task.api import is_task


class TaskFactory(Protocol):
    def create_task(self, task_name: str) -> Any:
        """A new task object (StreamTask or AsyncStreamTask, plus any optional hooks)."""
        ...


class ClassTaskFactory:
    """Instantiates the class ``task.class`` names (``module:Class``), once per task."""

    KEY = keys.TASK_CLASS.name

    def __init__(self, config: Config) -> None:
        path = config.get_str(self.KEY)
        if not path:
            raise ConfigError(f"missing required config key {self.KEY!r} (module:Class of a StreamTask)", key=self.KEY)
        cls = load_class(path.strip(), self.KEY)
        if not isinstance(cls, type) or not (is_task(cls)):
            raise ConfigError(
                f"config key {self.KEY!r}: {path} is not a task class (needs StreamTask.process, "
                f"AsyncStreamTask.process_async or BatchStreamTask.process_batch)",
                key=self.KEY,
            )
        self.task_class = cls

    def create_task(self, task_name: str) -> Any:
        return self.task_class()


def task_factory_from_config(config: Config) -> TaskFactory:
    return ClassTaskFactory(config)
