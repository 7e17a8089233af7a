"""The task API: what user code implements and what the container hands it."""

from samza_dagster.task.api import (
    DEFAULT_BATCH_TASK_RUN,
    AsyncStreamTask,
    BatchStreamTask,
    ClosableTask,
    EndOfStreamListenerTask,
    InitableTask,
    StreamTask,
    WindowableTask,
)
from samza_dagster.task.batch_formats import BATCH_FORMATS
from samza_dagster.task.callback import CallbackError, TaskCallback
from samza_dagster.task.collector import MessageCollector, UnknownSystemError
from samza_dagster.task.context import TaskContext
from samza_dagster.task.coordinator import RequestScope, TaskCoordinator
from samza_dagster.task.factory import ClassTaskFactory, TaskFactory, task_factory_from_config

__all__ = [
    "BATCH_FORMATS",
    "DEFAULT_BATCH_TASK_RUN",
    "AsyncStreamTask",
    "BatchStreamTask",
    "CallbackError",
    "ClassTaskFactory",
    "ClosableTask",
    "EndOfStreamListenerTask",
    "InitableTask",
    "MessageCollector",
    "RequestScope",
    "StreamTask",
    "TaskCallback",
    "TaskContext",
    "TaskCoordinator",
    "TaskFactory",
    "UnknownSystemError",
    "WindowableTask",
    "task_factory_from_config",
]
