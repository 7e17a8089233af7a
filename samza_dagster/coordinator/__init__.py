"""The coordinator stream, JobModel building and the JobCoordinator's HTTP service (Samza design).

Modules: ``messages`` (wire format), ``state`` (folding), ``stream`` (reader/writer on any
system), ``submission`` (config submission, set-once checks), ``groupers`` / ``model_builder``
(JobModel), ``job_coordinator`` + ``http`` (the service), ``client`` (the container's side),
``commands`` (what the CLI runs).
"""

from importlib import import_module

from samza_dagster.coordinator.job_model import ContainerModel, JobModel, TaskModel
from samza_dagster.coordinator.messages import (
    CoordinatorStreamFormatError,
    CoordinatorStreamMessage,
    coordinator_stream_name,
)

#: Names loaded on first use: they pull in the systems and http.server.
_LAZY = {
    "JobCoordinator": "job_coordinator",
    "CoordinatorStreamReader": "stream",
    "CoordinatorStreamWriter": "stream",
    "CoordinatorStreamError": "stream",
    "CoordinatorStreamState": "state",
    "submit_job_config": "submission",
    "SetOnceConfigChangeError": "submission",
    "build_job_model": "model_builder",
    "fetch_job_model": "client",
    "poll_version": "client",
    "write_container_host": "client",
    "JobModelWatcher": "client",
    "CoordinatorUnreachableError": "client",
    "CoordinatorRequestError": "client",
    "run_coordinator_stream_writer": "commands",
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
