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
            self._container_requests.ask_commit_all()
        else:
            self.commit_requested = True
            self._container_requests.ask(self.task_name)

    def take_commit_request(self) -> bool:
        """The run loop's: whether the task asked for a commit since the last look (and forget it)."""
        if self.commit_requested:
            self.commit_requested = False
            return True
        return False

    def shutdown(self, scope: RequestScope = RequestScope.CURRENT_TASK) -> None:
        if scope is RequestScope.ALL_TASKS_IN_CONTAINER:
            self._container_requests.ask_shutdown_all()
        else:
            self.shutdown_requested = True
            self._container_requests.ask(self.task_name, shutdown=True)


class ContainerRequests:
    """Container-wide flags shared by every TaskCoordinator of a container; ``pending`` lets
    the run loop test one attribute per message instead of every task's flags. Its attributes are
    read anywhere and changed only through the methods below: the ``ask*`` ones by tasks (from
    any thread: each write is one attribute, and a request seen one message late is still
    honoured), ``notice``/``looked``/``take_commit_all`` by the run loop."""

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

    # -- tasks ask (any thread) --------------------------------------------------------------
    def ask(self, task_name: str, *, shutdown: bool = False) -> None:
        """Task ``task_name`` asked for something (a commit, a shutdown, or it reached end of
        stream): the run loop looks at it."""
        self.asking.append(task_name)
        if shutdown:
            self.shutdowns += 1
        self.pending = True

    def ask_commit_all(self) -> None:
        self.commit_all = True
        self.pending = True

    def ask_shutdown_all(self) -> None:
        self.shutdown_all = True
        self.pending = True

    # -- the run loop -----------------------------------------------------------------------
    def notice(self) -> None:
        """Something the run loop must look at next (a partition ended, a stop was asked)."""
        self.pending = True

    def looked(self) -> None:
        """The run loop is looking at what is pending now."""
        self.pending = False

    def take_asking(self) -> list[str]:
        """The names of the tasks that asked since the last look, in order (and forget them)."""
        asking = self.asking
        names = asking[:]
        del asking[: len(names)]  # what a task thread appends meanwhile stays for the next look
        return names

    def take_commit_all(self) -> bool:
        """Whether a task asked every task to commit since the last look (and forget it)."""
        if self.commit_all:
            self.commit_all = False
            return True
        return False
