"""Errors the container raises; each names the task and, where there is one, the message's
stream, partition and offset."""

from __future__ import annotations

from typing import Any

from samza_dagster.errors import SamzaError


def coordinates(envelope: Any, offset: str | None = None) -> str:
    """Where ``envelope`` is: its stream, partition and offset (or ``offset``)."""
    ssp = envelope.ssp
    return f"stream {ssp.system}.{ssp.stream} partition {ssp.partition} offset {offset or envelope.offset}"


class ContainerError(SamzaError, RuntimeError):
    """Base class of the container's errors."""


class TaskProcessError(ContainerError):
    """A task's process/process_async/window/on_end_of_stream raised or reported failure."""

    def __init__(self, message: str, task_name: str, envelope: Any = None) -> None:
        super().__init__(message)
        self.task_name = task_name
        self.ssp = getattr(envelope, "ssp", None)
        self.offset = getattr(envelope, "offset", None)


class DeserializationError(TaskProcessError):
    """A key or message could not be deserialized with its stream's serde."""


class CallbackTimeoutError(TaskProcessError):
    """An async task did not complete a message within ``task.callback.timeout.ms``."""
