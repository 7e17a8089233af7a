"""Per-partition bookkeeping shared by end-of-stream and watermark reconciliation.

Both keep one state object per input partition, indexed by partition and by stream, with the
number of upstream producer tasks expected on it; and both vet a producer task the first time
it reports on a partition in the same way. Only what they record per task differs.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Self, TypeVar

from samza_dagster.control.errors import ControlStateError
from samza_dagster.model import SystemStream, SystemStreamPartition

S = TypeVar("S")


class ProducerTaskStates:
    """Base of the per-task reconciliation states (built as ``cls(ssps, producer_task_counts)``):
    what rebuilds one from a snapshot."""

    __slots__ = ()

    def __init__(
        self, ssps: Iterable[SystemStreamPartition], producer_task_counts: Mapping[SystemStream, int] | None = None
    ) -> None:
        """The constructor every subclass has (``from_dict`` builds through it)."""

    def restore(self, data: Mapping[str, Any]) -> None:
        raise NotImplementedError

    @classmethod
    def from_dict(
        cls,
        ssps: Iterable[SystemStreamPartition],
        producer_task_counts: Mapping[SystemStream, int] | None,
        data: Mapping[str, Any],
    ) -> Self:
        """A fresh instance for ``ssps`` with ``data`` (a ``to_dict`` snapshot) restored."""
        states = cls(ssps, producer_task_counts)
        states.restore(data)
        return states


def index_partitions(
    ssps: Iterable[SystemStreamPartition],
    producer_task_counts: Mapping[SystemStream, int] | None,
    new_state: Callable[[int], S],
) -> tuple[dict[SystemStreamPartition, S], dict[SystemStream, list[S]]]:
    """A fresh ``new_state(expected producer tasks)`` per partition, by partition and by stream.

    Streams absent from ``producer_task_counts`` are plain inputs (expected 0)."""
    counts = dict(producer_task_counts or {})
    states: dict[SystemStreamPartition, S] = {}
    by_stream: dict[SystemStream, list[S]] = {}
    for ssp in ssps:
        ssp = SystemStreamPartition(*ssp)
        stream = ssp.system_stream
        expected = int(counts.get(stream, 0))
        if expected < 0:
            raise ControlStateError(f"producer task count of stream {stream} is negative: {expected}")
        state = new_state(expected)
        states[ssp] = state
        by_stream.setdefault(stream, []).append(state)
    return states, by_stream


def check_new_producer(
    kind: str,
    ssp: SystemStreamPartition,
    task_name: str,
    task_count: int | None,
    expected: int,
    reported: Collection[str],
) -> None:
    """Vet producer task ``task_name``, heard from on ``ssp`` for the first time, before it is
    added to the ``reported`` ones.

    A producer that believes in a different number of producers means the two stages were
    planned with different partition counts, and one more producer than expected means the
    same: fail loudly rather than end (or advance) early. ``task_count`` is what an old-form
    message said (None for Samza 1.8's form, which carries no count)."""
    if task_count is not None and task_count > 0 and task_count != expected:
        raise ControlStateError(
            f"{kind} on {ssp} from producer task {task_name!r} says {task_count} producer tasks, "
            f"but this job expects {expected} for stream {ssp.system}.{ssp.stream}"
        )
    if len(reported) >= expected:
        raise ControlStateError(
            f"{kind} on {ssp} from producer task {task_name!r}, but all {expected} "
            f"expected producer tasks ({sorted(reported)}) already reported"
        )
