"""TaskCoordinator: how a task asks the container to commit or shut down."""

from __future__ import annotations

import enum


class RequestScope(enum.Enum):
    CURRENT_TASK = "current_task"
    ALL_TASKS_IN_CONTAINER = "all_tasks_in_container"


class TaskCoordinator:
    """Records a task's commit/shutdown requests; the run loop acts on them between messages.

    Plain attribute writes (no lock): the run loop reads them on its own thread, and a request
    seen one message late is still honoured (Samza gives the same guarantee)."""

    __slots__ = ("task_name", "commit_requested", "shutdown_requested", "_container_requests")

    CURRENT_TASK = RequestScope.CURRENT_TASK
    ALL_TASKS_IN_CONTAINER = RequestScope.ALL_TASKS_IN_CONTAINER

    def __init__(self, task_name: str, container_requests: ContainerRequests) -> None:
        self.task_name = task_name
        self.commit_requested = False
        self.shutdown_requested = False
        self._container_requests = container_requests

    def commit(self, scope: RequestScope = RequestScope.CURRENT_TASK) -> None:
        if scope is RequestScope.ALL_TASKS_IN_CONTAINER:
            self._container_requests.commit_all = True
        else:
            self.commit_requested = True
            self._container_requests.asking.append(self.task_name)
        self._container_requests.pending = True

    def take_commit_request(self) -> bool:
        """The run loop's: whether the task asked for a commit since the last look (and forget it)."""
        if self.commit_requested:
            self.commit_requested = False
            return True
        return False

    def shutdown(self, scope: RequestScope = RequestScope.CURRENT_TASK) -> None:
        if scope is RequestScope.ALL_TASKS_IN_CONTAINER:
            self._container_requests.shutdown_all = True
        else:
            self.shutdown_requested = True
            self._container_requests.asking.append(self.task_name)
            self._container_requests.shutdowns += 1
        self._container_requests.pending = True


class ContainerRequests:
    """Container-wide flags shared by every TaskCoordinator of a container; ``pending`` lets
    the run loop test one attribute per message instead of every task's flags."""

    __slots__ = ("pending", "commit_all", "shutdown_all", "asking", "shutdowns")

    def __init__(self) -> None:
        self.pending = False
        self.commit_all = False
        self.shutdown_all = False
        #: names of the tasks that asked for something (a commit, a shutdown, or reached end of
        #: stream) since the run loop last looked: it looks at those, not at every task
        #: (list.append is atomic, so any thread may add to it)
        self.asking: list[str] = []
        #: how many times a task asked to shut down (whether all have is only checked after one did)
        self.shutdowns = 0
