"""The coordinator stream, JobModel building and the JobCoordinator's HTTP service (seed 004)."""

from samza_dagster.coordinator.job_model import ContainerModel, JobModel, TaskModel
from samza_dagster.coordinator.messages import (
    CoordinatorStreamFormatError,
    CoordinatorStreamMessage,
    coordinator_stream_name,
)

__all__ = [
    "ContainerModel",
    "CoordinatorStreamFormatError",
    "CoordinatorStreamMessage",
    "JobCoordinator",
    "JobModel",
    "TaskModel",
    "coordinator_stream_name",
]


def __getattr__(name: str):  # the coordinator pulls in the systems and http.server: load lazily
    if name == "JobCoordinator":
        from samza_dagster.coordinator.job_coordinator import JobCoordinator

        return JobCoordinator
    raise AttributeError(name)
