"""End-of-stream reconciliation over the producer tasks of each input partition (Samza design).

An intermediate partition is written by every task of the upstream stage, and each sends
its own end-of-stream when done; the partition has ended only once all of them have.
A stream with no producer count (an input the task reads straight from a system) ends with
its first end-of-stream message per partition.

An end-of-stream without a task name ends the partition at once, as in Samza 1.8's
``EndOfStreamStates`` ("from either the source or the aggregator task"): Samza's producers send
their end-of-stream to one aggregate partition of an intermediate stream only
(``ControlMessageSender``: ``stream.hashCode() % partitions``), and the task consuming that
partition, once all producers' have arrived, broadcasts one without a task name to every other
partition. The engine's producers write theirs to every partition (Samza's consumers count them
per partition alike) and never write one without a task name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from samza_dagster.control._producers import ProducerTaskStates, check_new_producer, index_partitions
from samza_dagster.control._snapshot import iter_partitions, stream_id
from samza_dagster.control.errors import ControlStateError
from samza_dagster.control.messages import EndOfStreamMessage
from samza_dagster.model import SystemStream, SystemStreamPartition


class _EndOfStreamState:
    """Bookkeeping of one partition: the producer tasks heard from, out of ``expected``."""

    __slots__ = ("expected", "tasks", "ended")

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.tasks: set[str] = set()
        self.ended = False


class EndOfStreamStates(ProducerTaskStates):
    """End-of-stream state of every partition a task consumes.

    ``producer_task_counts`` maps each intermediate stream to the number of upstream tasks
    writing to it; streams absent from it are plain inputs. ``update`` is O(1).
    """

    __slots__ = ("_states", "_by_stream", "_ended_partitions")

    def __init__(
        self,
        ssps: Iterable[SystemStreamPartition],
        producer_task_counts: Mapping[SystemStream, int] | None = None,
    ) -> None:
        self._states, self._by_stream = index_partitions(ssps, producer_task_counts, _EndOfStreamState)
        self._ended_partitions = 0

    def update(self, message: EndOfStreamMessage, ssp: SystemStreamPartition) -> bool:
        """Record ``message`` received on ``ssp``. True when it took the partition to its end
        (so the task instance passes one end-of-stream envelope on, exactly once)."""
        state = self._states.get(ssp)
        if state is None:
            raise ControlStateError(f"end-of-stream message for {ssp}, which this task does not consume")
        if state.ended:
            return False
        expected = state.expected
        task_name = message.task_name
        if expected == 0 or task_name is None:
            # a source's, or the broadcast of Samza's aggregator task (see the module's docstring)
            state.ended = True
        else:
            tasks = state.tasks
            if task_name not in tasks:
                check_new_producer("end-of-stream", ssp, task_name, message.task_count, expected, tasks)
                tasks.add(task_name)
            if len(tasks) < expected:
                return False
            state.ended = True
        self._ended_partitions += 1
        return True

    def is_end_of_stream_per_ssp(self, ssp: SystemStreamPartition) -> bool:
        state = self._states.get(ssp)
        return state is not None and state.ended

    def is_end_of_stream(self, system_stream: SystemStream) -> bool:
        """Every partition of ``system_stream`` this task consumes has ended (False for a
        stream the task does not consume)."""
        states = self._by_stream.get(system_stream)
        if not states:
            return False
        return all(s.ended for s in states)

    def all_end_of_stream(self) -> bool:
        return self._ended_partitions == len(self._states)

    # -- checkpoint ---------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly snapshot (Samza's EndOfStreamCheckpoint per stream)."""
        out: dict[str, Any] = {}
        for ssp, state in self._states.items():
            entry = out.setdefault(stream_id(ssp), {"totalTasks": state.expected, "partitions": {}})
            entry["partitions"][str(ssp.partition)] = {"tasks": sorted(state.tasks), "endOfStream": state.ended}
        return out

    def restore(self, data: Mapping[str, Any]) -> None:
        """Load a ``to_dict`` snapshot. Entries for partitions this task does not consume
        (after a regrouping) are ignored; counts come from this instance's configuration."""
        for ssp, body in iter_partitions(data, "end-of-stream"):
            state = self._states.get(ssp)
            if state is None:
                continue
            tasks = body.get("tasks", [])
            if not isinstance(tasks, list) or not all(isinstance(t, str) for t in tasks):
                raise ControlStateError(f"end-of-stream snapshot: tasks of {ssp} must be a list of task names")
            ended = bool(body.get("endOfStream", False)) or (0 < state.expected <= len(set(tasks)))
            if state.ended != ended:
                self._ended_partitions += 1 if ended else -1
            state.tasks = set(tasks)
            state.ended = ended
