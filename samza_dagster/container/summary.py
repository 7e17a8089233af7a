"""What a container run returns: status, per-stream counts, final offsets, time, metrics."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from samza_dagster.codec import from_wire, to_wire


class ContainerStatus(str, enum.Enum):
    COMPLETED = "completed"  # every task reached end of stream: exit 0
    SHUTDOWN = "shutdown"  # a task asked (coordinator.shutdown) or the container was stopped: exit 0
    NEW_JOB_MODEL = "new_job_model"  # stopped gracefully because a newer JobModel is served: exit 3
    FAILED = "failed"  # a task or the engine failed: exit 1

    @property
    def exit_code(self) -> int:
        return _EXIT_CODES[self]


_EXIT_CODES = {
    ContainerStatus.COMPLETED: 0,
    ContainerStatus.SHUTDOWN: 0,
    ContainerStatus.NEW_JOB_MODEL: 3,
    ContainerStatus.FAILED: 1,
}


@dataclass
class ContainerSummary:
    container_id: str
    status: ContainerStatus
    #: "system.stream" → envelopes processed
    messages_per_stream: dict[str, int] = field(default_factory=dict)
    #: task → "system.stream[partition]" → offset of the last processed message
    final_offsets: dict[str, dict[str, str]] = field(default_factory=dict)
    elapsed_s: float = field(default=0.0, metadata={"round": 3})
    error: str | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    #: why the container was started again from its last checkpoint, one line per restart
    #: (runtime/restarts.py); its counts and time cover every start
    restarts: list[str] = field(default_factory=list)

    @property
    def messages_processed(self) -> int:
        return sum(self.messages_per_stream.values())

    @property
    def ok(self) -> bool:
        return self.status is not ContainerStatus.FAILED

    def to_dict(self) -> dict[str, Any]:
        return to_wire(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ContainerSummary:
        return from_wire(cls, data)

    def one_line(self) -> str:
        rate = self.messages_processed / self.elapsed_s if self.elapsed_s > 0 else 0.0
        line = (
            f"container {self.container_id} {self.status.value}: {self.messages_processed} messages "
            f"in {self.elapsed_s:.2f} s ({rate:,.0f}/s)"
        )
        if self.restarts:
            times = "once" if len(self.restarts) == 1 else f"{len(self.restarts)} times"
            line += f"; restarted from its last checkpoint {times} ({self.restarts[-1]})"
        if self.error:
            line += f"; error: {self.error}"
        return line
