"""Watermark reconciliation over the producer tasks of each input partition (Samza design).

Per partition the watermark is the minimum over the latest watermark of every producer
task, once all of them have reported (InputWatermark = min OutputWatermark(task)); a
stream's watermark is the minimum over its partitions. A watermark a system emits itself
(no task name), or one on a stream with no producer count, advances the partition directly.
Watermarks never go back: a task's lower or repeated value is ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from samza_dagster.control._producers import ProducerTaskStates, check_new_producer, index_partitions
from samza_dagster.control._snapshot import iter_partitions, stream_id
from samza_dagster.control.errors import ControlStateError
from samza_dagster.control.messages import WatermarkMessage
from samza_dagster.model import SystemStream, SystemStreamPartition

#: The watermark of a partition or stream before any has been reconciled.
WATERMARK_NOT_EXIST = -1


class _WatermarkState:
    __slots__ = ("expected", "timestamps", "watermark")

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.timestamps: dict[str, int] = {}
        self.watermark = WATERMARK_NOT_EXIST


class WatermarkStates(ProducerTaskStates):
    """Watermark state of every partition a task consumes. ``update`` costs O(producer
    tasks) only when a task's watermark actually advances, else O(1)."""

    __slots__ = ("_states", "_by_stream")

    def __init__(
        self,
        ssps: Iterable[SystemStreamPartition],
        producer_task_counts: Mapping[SystemStream, int] | None = None,
    ) -> None:
        self._states, self._by_stream = index_partitions(ssps, producer_task_counts, _WatermarkState)

    def update(self, message: WatermarkMessage, ssp: SystemStreamPartition) -> bool:
        """Record ``message`` received on ``ssp``. True when the partition's watermark advanced."""
        state = self._states.get(ssp)
        if state is None:
            raise ControlStateError(f"watermark message for {ssp}, which this task does not consume")
        timestamp = message.timestamp
        task_name = message.task_name
        expected = state.expected
        if task_name is None or expected == 0:
            if timestamp > state.watermark:
                state.watermark = timestamp
                return True
            return False
        timestamps = state.timestamps
        previous = timestamps.get(task_name)
        if previous is None:
            check_new_producer("watermark", ssp, task_name, message.task_count, expected, timestamps)
        elif timestamp <= previous:
            return False
        timestamps[task_name] = timestamp
        if len(timestamps) < expected:
            return False
        # Only the task holding the minimum can raise it, but the set is small (one entry
        # per upstream task), so recomputing keeps this simple and still cheap.
        low = min(timestamps.values())
        if low > state.watermark:
            state.watermark = low
            return True
        return False

    def get_watermark_per_ssp(self, ssp: SystemStreamPartition) -> int:
        state = self._states.get(ssp)
        return WATERMARK_NOT_EXIST if state is None else state.watermark

    def get_watermark(self, system_stream: SystemStream) -> int:
        """The minimum over the stream's partitions this task consumes (WATERMARK_NOT_EXIST
        until every one of them has a watermark, or for a stream it does not consume)."""
        states = self._by_stream.get(system_stream)
        if not states:
            return WATERMARK_NOT_EXIST
        return min(s.watermark for s in states)

    # -- checkpoint ---------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly snapshot (Samza's WatermarkCheckpoint per stream)."""
        out: dict[str, Any] = {}
        for ssp, state in self._states.items():
            entry = out.setdefault(stream_id(ssp), {"totalTasks": state.expected, "partitions": {}})
            entry["partitions"][str(ssp.partition)] = {
                "tasksToEventTime": dict(state.timestamps),
                "watermark": state.watermark,
            }
        return out

    def restore(self, data: Mapping[str, Any]) -> None:
        """Load a ``to_dict`` snapshot. Entries for partitions this task does not consume
        are ignored; counts come from this instance's configuration."""
        for ssp, body in iter_partitions(data, "watermark"):
            state = self._states.get(ssp)
            if state is None:
                continue
            times = body.get("tasksToEventTime", {})
            if not isinstance(times, Mapping) or not all(
                isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in times.items()
            ):
                raise ControlStateError(f"watermark snapshot: tasksToEventTime of {ssp} must map task names to int ms")
            watermark = body.get("watermark", WATERMARK_NOT_EXIST)
            if not isinstance(watermark, int) or isinstance(watermark, bool):
                raise ControlStateError(f"watermark snapshot: watermark of {ssp} must be an int, got {watermark!r}")
            state.timestamps = dict(times)
            if state.expected and len(state.timestamps) >= state.expected:
                watermark = max(watermark, min(state.timestamps.values()))
            state.watermark = watermark
