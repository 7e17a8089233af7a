"""The run loop's state of one task (Samza: AsyncTaskWorker and its AsyncTaskState).

What is queued for the task, what it has in flight, and what is due — window, commit, its end of
stream. Only the run loop's thread writes it (run_loop.py, scheduled.py, completions.py), so it
lives beside the TaskInstance, not in it: the TaskInstance owns the task's own state (offsets
processed, partitions ended, its checkpoint), the worker owns the scheduling.
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

    def __repr__(self) -> str:
        return f"TaskWorker({self.ti.task_name!r})"
