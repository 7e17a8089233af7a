"""The run loop's state of one task (Samza: AsyncTaskWorker and its AsyncTaskState).

What is queued for the task, what it has in flight, and what is due — window, commit, its end of
stream. Only the run loop's thread changes it, and only through the named methods below (Samza's
``needWindow``/``startWindow``/``doneWindow``, ``needCommit``/``startCommit``,
``startProcess``/``doneProcess``): its attributes are read anywhere, written nowhere else
(tests/test_architecture.py checks). It lives beside the TaskInstance, not in it: the TaskInstance
owns the task's own state (offsets processed, partitions ended, its checkpoint), the worker owns
the scheduling.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from samza_dagster.container.task_instance import TaskInstance
from samza_dagster.model import IncomingMessageEnvelope, SystemStreamPartition


@dataclass(slots=True)
class InFlight:
    """A message the scheduled run loop started, in its task's per-partition queue (offset
    order) until it and every message before it have completed."""

    offset: str
    completed: bool = False


class TaskWorker:
    __slots__ = (
        "ti",
        "pending",
        "in_flight",
        "in_flight_offsets",
        "exclusive_running",
        "window_due",
        "commit_due",
        "done",
    )

    def __init__(self, ti: TaskInstance) -> None:
        self.ti = ti
        #: chosen envelopes waiting for the task's capacity (scheduled mode), in order
        self.pending: deque[IncomingMessageEnvelope] = deque()
        self.in_flight = 0
        #: per SSP, the started messages in start (= offset) order
        self.in_flight_offsets: dict[SystemStreamPartition, deque[InFlight]] = {ssp: deque() for ssp in ti.ssps}
        self.exclusive_running = False  # window running in the pool
        self.window_due = False
        self.commit_due = False
        self.done = False  # ended (end of stream handled) or shut down

    @property
    def end_of_stream_due(self) -> bool:
        """Every partition of the task ended and its end of stream has not run yet."""
        return self.ti.all_ended and not self.done

    @property
    def busy(self) -> bool:
        """Messages in flight or a window running in the pool: nothing due may run yet."""
        return self.in_flight > 0 or self.exclusive_running

    @property
    def has_due(self) -> bool:
        """A window, a commit or its end of stream waits to run (before any new message)."""
        return self.window_due or self.commit_due or self.end_of_stream_due

    def can_start(self, max_concurrency: int) -> bool:
        """The readiness rule (Samza's ``isReady``): a queued message may start now — under
        ``task.max.concurrency`` and never beside a window running in the pool."""
        return bool(self.pending) and self.in_flight < max_concurrency and not self.exclusive_running

    # -- what is due ---------------------------------------------------------------------------
    def need_window(self) -> None:
        self.window_due = True

    def need_commit(self) -> None:
        self.commit_due = True

    def start_window(self, *, in_pool: bool) -> None:
        """The due window runs now; ``in_pool``: on a pool thread, alone for this task until
        :meth:`done_window`."""
        self.window_due = False
        if in_pool:
            self.exclusive_running = True

    def done_window(self) -> None:
        self.exclusive_running = False

    def start_commit(self) -> None:
        self.commit_due = False

    def finish(self) -> None:
        """Its end of stream ran: the task takes nothing more."""
        self.done = True

    # -- messages queued and in flight (scheduled mode) ---------------------------------------------
    def enqueue(self, envelope: IncomingMessageEnvelope) -> None:
        """A chosen envelope waits for the task's capacity, behind those chosen before it."""
        self.pending.append(envelope)

    def next_pending(self) -> IncomingMessageEnvelope:
        return self.pending.popleft()

    def start_process(self, ssp: SystemStreamPartition, offset: str) -> InFlight:
        entry = InFlight(offset)
        self.in_flight_offsets[ssp].append(entry)
        self.in_flight += 1
        return entry

    def abandon_process(self) -> None:
        """A started message failed before it was processed (the job fails with it)."""
        self.in_flight -= 1

    def done_process(self, ssp: SystemStreamPartition, entry: InFlight) -> None:
        """``entry`` completed; the partition's processed offset advances over the completed
        prefix only, so a checkpoint never covers a message still in flight before it."""
        entry.completed = True
        self.in_flight -= 1
        queue = self.in_flight_offsets[ssp]
        last = None
        while queue and queue[0].completed:
            last = queue.popleft().offset
        self.ti.completed(ssp, last)

    def __repr__(self) -> str:
        return f"TaskWorker({self.ti.task_name!r})"
