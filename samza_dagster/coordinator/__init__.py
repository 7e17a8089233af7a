"""Samza's job coordination, in three parts (each its own package, lowest first):

* ``coordinator.stream`` — the coordinator stream protocol: its messages (wire format),
  their folded state, the reader/writer over any system, config submission and set-once checks, the writer tool;
* ``coordinator.model`` — the JobModel (containers, tasks, their partitions), the groupers,
  the model builder and the partition counts a stateful job keeps;
* ``coordinator`` itself — the ``JobCoordinator`` and its HTTP service (``job_coordinator``,
  ``http``), the container's side of it (``client``) and what the ``job-coordinator`` command runs
  (``commands``).

Startpoints, which the coordinator fans out, are ``samza_dagster.startpoint``.
"""

from importlib import import_module

from samza_dagster.coordinator.model.job_model import ContainerModel, JobModel, TaskModel
from samza_dagster.coordinator.stream.messages import (
    CoordinatorStreamFormatError,
    CoordinatorStreamMessage,
    coordinator_stream_name,
)

#: Names loaded on first use: they pull in the systems and http.server.
_LAZY = {
    "JobCoordinator": "job_coordinator",
    "CoordinatorStreamReader": "stream.reader_writer",
    "CoordinatorStreamWriter": "stream.reader_writer",
    "CoordinatorStreamError": "stream.reader_writer",
    "CoordinatorStreamState": "stream.state",
    "submit_job_config": "stream.submission",
    "SetOnceConfigChangeError": "stream.submission",
    "build_job_model": "model.builder",
    "fetch_job_model": "client",
    "poll_version": "client",
    "write_container_host": "client",
    "JobModelWatcher": "client",
    "CoordinatorUnreachableError": "client",
    "CoordinatorRequestError": "client",
    "run_coordinator_stream_writer": "stream.writer_tool",
    "run_job_coordinator": "commands",
}
__all__ = [
    "ContainerModel",
    "CoordinatorStreamFormatError",
    "CoordinatorStreamMessage",
    "JobModel",
    "TaskModel",
    "coordinator_stream_name",
    *_LAZY,
]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(name)
    return getattr(import_module(f"samza_dagster.coordinator.{module}"), name)
