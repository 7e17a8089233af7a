"""What the scheduled run loop tracks per message in flight, and what comes back when work ends.

Work started in the thread pool or by an async task ends on another thread; that thread appends
a completion to the loop's deque and wakes the loop, and only the loop's thread acts on it
(:meth:`Completion.settle`), so scheduling state has one writer. Small slots dataclasses, not
tuples: each kind names its fields, and settling is the completion's own method.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from samza_dagster.container.task_worker import InFlight, TaskWorker
from samza_dagster.model import SystemStreamPartition
from samza_dagster.task.callback import TaskCallback


class Settler(Protocol):
    """What settling a completion needs of the run loop."""

    def forget_callback(self, callback: TaskCallback) -> None: ...


@dataclass(slots=True, frozen=True)
class ProcessDone:
    """``process`` of one message ended (in the pool, or an async task's callback); ``error``
    is the task's failure, already naming the message."""

    w: TaskWorker
    ssp: SystemStreamPartition
    entry: InFlight
    error: BaseException | None = None
    callback: TaskCallback | None = None

    def settle(self, loop: Settler) -> None:
        if self.callback is not None:
            loop.forget_callback(self.callback)
        if self.error is not None:
            raise self.error
        self.w.done_process(self.ssp, self.entry)


@dataclass(slots=True, frozen=True)
class WindowDone:
    """``window`` ran in the pool (alone for its task); the task may start messages again."""

    w: TaskWorker
    error: BaseException | None = None

    def settle(self, loop: Settler) -> None:
        self.w.done_window()
        if self.error is not None:
            raise self.error


@dataclass(slots=True, frozen=True)
class CallbackFailed:
    """An async task's callback was misused (completed twice, after its timeout): the job fails."""

    w: TaskWorker
    callback: TaskCallback
    error: BaseException

    def settle(self, loop: Settler) -> None:
        raise self.error


Completion = ProcessDone | WindowDone | CallbackFailed
