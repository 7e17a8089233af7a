"""Per-task and per-container metrics: plain counters on the hot path, a snapshot dict
for logs and the run summary."""

from __future__ import annotations

from typing import Any

from samza_dagster.model import SystemStreamPartition


class TaskMetrics:
    __slots__ = (
        "task_name",
        "processed",  # per SSP: envelopes processed (control messages and dropped ones included)
        "process_s",
        "window_count",
        "window_s",
        "commit_count",
        "commit_s",
        "deserialization_errors_dropped",
        "deserialization_errors_dead_lettered",  # sent to task.dlq.stream and skipped
        "control_messages",
        "end_of_stream_ssps",
        "counters",  # name -> int: counters a task adds (e.g. the operator runtime's late_messages)
    )

    def __init__(self, task_name: str, ssps: frozenset[SystemStreamPartition]) -> None:
        self.task_name = task_name
        self.processed: dict[SystemStreamPartition, int] = {ssp: 0 for ssp in ssps}
        self.process_s = 0.0
        self.window_count = 0
        self.window_s = 0.0
        self.commit_count = 0
        self.commit_s = 0.0
        self.deserialization_errors_dropped = 0
        self.deserialization_errors_dead_lettered = 0
        self.control_messages = 0
        self.end_of_stream_ssps = 0
        #: free-form counters owned by the task; snapshot() copies them into the summary
        self.counters: dict[str, int] = {}

    @property
    def envelopes_processed(self) -> int:
        return sum(self.processed.values())

    def snapshot(self) -> dict[str, Any]:
        return {
            "envelopes_processed": self.envelopes_processed,
            "process_s": round(self.process_s, 6),
            "window_count": self.window_count,
            "window_s": round(self.window_s, 6),
            "commit_count": self.commit_count,
            "commit_s": round(self.commit_s, 6),
            "deserialization_errors_dropped": self.deserialization_errors_dropped,
            "deserialization_errors_dead_lettered": self.deserialization_errors_dead_lettered,
            "control_messages": self.control_messages,
            "end_of_stream_ssps": self.end_of_stream_ssps,
            "counters": dict(self.counters),
        }


class ContainerMetrics:
    __slots__ = ("container_id", "chooses", "null_chooses", "blocked_waits", "started_at", "ended_at", "start_s",
                 "shutdown_s")

    def __init__(self, container_id: str) -> None:
        self.container_id = container_id
        self.chooses = 0
        self.null_chooses = 0
        self.blocked_waits = 0
        self.started_at = 0.0
        self.ended_at = 0.0
        #: seconds spent starting (metadata, checkpoints, stores, tasks, consumers) and shutting
        #: down (final commit excluded: the run loop does it; consumers, tasks, producers stopped)
        self.start_s = 0.0
        self.shutdown_s = 0.0

    def snapshot(self) -> dict[str, Any]:
        return {
            "chooses": self.chooses,
            "null_chooses": self.null_chooses,
            "blocked_waits": self.blocked_waits,
            "start_s": round(self.start_s, 6),
            "shutdown_s": round(self.shutdown_s, 6),
        }
