"""The container: TaskInstance, RunLoop (the event loop), SamzaContainer, metrics."""

from samza_dagster.container.container import SamzaContainer
from samza_dagster.container.errors import CallbackTimeoutError, ContainerError, DeserializationError, TaskProcessError
from samza_dagster.container.run_loop import RunLoop, RunLoopStatus
from samza_dagster.container.summary import ContainerStatus, ContainerSummary
from samza_dagster.container.task_instance import SerdeDecoder, TaskInstance

__all__ = [
    "CallbackTimeoutError",
    "ContainerError",
    "ContainerStatus",
    "ContainerSummary",
    "DeserializationError",
    "RunLoop",
    "RunLoopStatus",
    "SamzaContainer",
    "SerdeDecoder",
    "TaskInstance",
    "TaskProcessError",
]
