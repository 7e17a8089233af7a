"""Errors raised by the ExecutionPlanner."""

from __future__ import annotations

from samza_dagster.errors import SamzaError


class PlanningError(SamzaError, ValueError):
    """The application cannot be planned: the streams of a join cannot agree on a partition
    count, an input stream's partition count is unknown, a declared count differs from the
    actual one.

    ``streams`` maps each stream id at fault to its partition count (None when unknown);
    ``operator`` is the join (or other operator) concerned, when there is one.
    """

    def __init__(
        self, message: str, *, streams: dict[str, int | None] | None = None, operator: str | None = None
    ) -> None:
        super().__init__(message)
        self.streams = dict(streams or {})
        self.operator = operator


class NotAnApplicationError(PlanningError, TypeError):
    """``plan()`` was given something that is not a StreamApplication or its descriptor."""
