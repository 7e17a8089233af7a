"""Errors of the task API."""

from samza_dagster.errors import SamzaError


class NoSuchStoreError(SamzaError, KeyError):
    """``TaskContext.get_store`` asked for a store the task does not have; names the task, the
    store and the stores it has. A ``KeyError``, as a missing name is to a Python mapping."""

    def __str__(self) -> str:  # KeyError's own __str__ would quote the message
        return str(self.args[0]) if self.args else ""


class NotTheTasksPartitionError(SamzaError):
    """``TaskContext.set_start_offset`` named a partition that is not one of the task's inputs."""


class BatchFormatError(SamzaError, ValueError):
    """A batch task's ``batch_format`` is not one the engine can hand it (naming the task class),
    or a batch it sent with ``send_table`` is not a table."""
