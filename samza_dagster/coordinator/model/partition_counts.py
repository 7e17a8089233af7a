"""Input partition counts a stateful job must keep (Samza design: configuration that "should only
be set one time", checked against what the coordinator stream recorded).

A stateful job's tasks own the state of the keys their input partitions carry. When an input's
partition count changes, keys hash to other partitions — so to other tasks — while their state
stays in the old task's store and changelog partition: the job would silently read and write
the wrong state. The job coordinator records the count of every input (intermediate streams
included) it grouped a stateful job on, as ``set-input-partitions`` messages, and refuses to
build a model on other counts unless the launch asks for a reset.
"""

from __future__ import annotations

from collections.abc import Mapping

from samza_dagster.config import keys
from samza_dagster.config.errors import ConfigError
from samza_dagster.coordinator.stream.messages import CoordinatorStreamMessage
from samza_dagster.model import SystemStream

#: Launch-only: accept changed set-once config and input partition counts of a stateful job.
#: Read by the job coordinator from the config it is started with and never written to the
#: coordinator stream, so it applies to the one launch that sets it (CLI: ``run --force-reset``).
FORCE_RESET_KEY = keys.JOB_COORDINATOR_FORCE_RESET.name


class InputPartitionCountChangedError(ConfigError):
    """An input of a stateful job has another partition count than the job was grouped on."""

    def __init__(self, stream: str, old: int, new: int) -> None:
        super().__init__(
            f"input stream {stream} of this stateful job has {new} partitions; the coordinator stream recorded "
            f"{old} when the job's tasks were grouped. Keys now hash to other partitions (other tasks) than "
            "the state their stores hold. To accept the change and start the state over, relaunch with "
            f"--force-reset ({FORCE_RESET_KEY}=true) and delete the job's changelog streams and local state "
            "(docs/operations.md, 'Changing what must not change')",
            key=keys.STREAM_PARTITIONS.key(stream_id=stream),
        )
        self.stream, self.old, self.new = stream, old, new


def stream_key(stream: SystemStream) -> str:
    return f"{stream.system}.{stream.stream}"


def check_input_partitions(recorded: Mapping[str, int], current: Mapping[SystemStream, int]) -> None:
    """Raise for the first input (sorted) whose count differs from the recorded one. Inputs not
    recorded (new inputs, or a job that was stateless until now) are not a change."""
    for stream in sorted(current, key=stream_key):
        key = stream_key(stream)
        old = recorded.get(key)
        if old is not None and old != current[stream]:
            raise InputPartitionCountChangedError(key, old, current[stream])


def record_input_partitions(
    source: str, recorded: Mapping[str, int], current: Mapping[SystemStream, int]
) -> list[CoordinatorStreamMessage]:
    """The messages that make the recorded counts those of ``current`` (only what differs)."""
    return [
        CoordinatorStreamMessage.set_input_partitions(source, stream_key(stream), count)
        for stream, count in sorted(current.items(), key=lambda item: stream_key(item[0]))
        if recorded.get(stream_key(stream)) != count
    ]
