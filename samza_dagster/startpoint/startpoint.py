"""Startpoints (Samza's Startpoint API): where an input partition starts at the job's next start,
ahead of its checkpoint.

Four kinds, as in Samza: :class:`StartpointOldest`, :class:`StartpointUpcoming`,
:class:`StartpointSpecific` (an offset) and :class:`StartpointTimestamp` (epoch ms: the earliest
offset whose timestamp is at or after it). Each serializes to compact JSON
``{"type":"timestamp","timestamp":1709251200000,"creationTimestamp":1709300000000}``, the form
``set-startpoint`` coordinator stream messages carry (see :mod:`.manager`).

:class:`StartpointKey` names what a startpoint applies to: one input partition (the form a user
writes), or one partition of one task (the fanned-out form the job coordinator writes at start).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar

from samza_dagster.errors import SamzaError
from samza_dagster.model import SystemStreamPartition

_COMPACT = (",", ":")


class StartpointError(SamzaError, ValueError):
    """A startpoint that cannot be stored or applied; names the partition and the value."""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class Startpoint:
    """Base of the four kinds. ``creation_timestamp`` (ms) says when it was written."""

    type: ClassVar[str] = ""
    creation_timestamp: int = field(default_factory=_now_ms, kw_only=True)

    def _fields(self) -> dict[str, Any]:
        return {}

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **self._fields(), "creationTimestamp": self.creation_timestamp}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=_COMPACT)

    def describe(self) -> str:
        """One human phrase: ``oldest``, ``offset 42``, ``timestamp 1709251200000``."""
        return self.type

    @staticmethod
    def from_dict(data: Any) -> Startpoint:
        if not isinstance(data, dict):
            raise StartpointError(f"a startpoint must be a JSON object; got {data!r}")
        kind = data.get("type")
        created = data.get("creationTimestamp", 0)
        try:
            created = int(created)
        except (TypeError, ValueError):
            raise StartpointError(f"startpoint creationTimestamp must be an integer; got {created!r}") from None
        if kind == StartpointOldest.type:
            return StartpointOldest(creation_timestamp=created)
        if kind == StartpointUpcoming.type:
            return StartpointUpcoming(creation_timestamp=created)
        if kind == StartpointSpecific.type:
            offset = data.get("offset")
            if offset is None or str(offset) == "":
                raise StartpointError(f"specific startpoint without an offset: {data!r}")
            return StartpointSpecific(str(offset), creation_timestamp=created)
        if kind == StartpointTimestamp.type:
            return StartpointTimestamp(parse_timestamp_value(data.get("timestamp")), creation_timestamp=created)
        raise StartpointError(
            f"unknown startpoint type {kind!r}; expected one of oldest, upcoming, specific, timestamp"
        )

    @staticmethod
    def from_json(text: str | bytes) -> Startpoint:
        try:
            data = json.loads(text)
        except (ValueError, UnicodeDecodeError) as exc:
            raise StartpointError(f"startpoint is not JSON ({exc}): {text!r}") from None
        return Startpoint.from_dict(data)


@dataclass(frozen=True)
class StartpointOldest(Startpoint):
    """Start at the partition's oldest offset."""

    type: ClassVar[str] = "oldest"


@dataclass(frozen=True)
class StartpointUpcoming(Startpoint):
    """Start at the partition's upcoming offset: only messages written after the start."""

    type: ClassVar[str] = "upcoming"


@dataclass(frozen=True)
class StartpointSpecific(Startpoint):
    """Start at this offset (the first message read is the one at ``offset``)."""

    type: ClassVar[str] = "specific"
    offset: str = ""

    def _fields(self) -> dict[str, Any]:
        return {"offset": self.offset}

    def describe(self) -> str:
        return f"offset {self.offset}"


@dataclass(frozen=True)
class StartpointTimestamp(Startpoint):
    """Start at the earliest offset whose message timestamp is at or after ``timestamp`` (ms)."""

    type: ClassVar[str] = "timestamp"
    timestamp: int = 0

    def _fields(self) -> dict[str, Any]:
        return {"timestamp": self.timestamp}

    def describe(self) -> str:
        return f"timestamp {self.timestamp}"


def parse_timestamp_value(raw: Any) -> int:
    """Epoch milliseconds from an integer, a string of digits, or an ISO 8601 date-time (a naive
    one is UTC). A StartpointError names the value otherwise."""
    if isinstance(raw, bool):
        raise StartpointError(f"timestamp {raw!r} is not epoch milliseconds or an ISO 8601 date-time")
    if isinstance(raw, int):
        value = raw
    else:
        text = str(raw).strip() if raw is not None else ""
        if text.lstrip("-").isdigit():
            value = int(text)
        else:
            try:
                when = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
            except ValueError:
                raise StartpointError(
                    f"timestamp {raw!r} is not epoch milliseconds or an ISO 8601 date-time "
                    "(e.g. 1709251200000 or 2024-03-01T00:00:00Z)"
                ) from None
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            value = int(when.timestamp() * 1000)
    if value < 0:
        raise StartpointError(f"timestamp {raw!r} is before 1970 (negative epoch milliseconds)")
    return value


@dataclass(frozen=True)
class StartpointKey:
    """What a startpoint applies to: ``ssp`` for every task that reads it, or only for
    ``task_name``. Its coordinator stream key is ``<system>.<stream>.<partition>``, with
    ``;<task name>`` appended for a task's own (fanned-out) startpoint.

    Keys sort by partition, a partition's own startpoint before its tasks' (a task name is
    None for the first kind, so the dataclass's field order cannot compare the two)."""

    ssp: SystemStreamPartition
    task_name: str | None = None

    def _order(self) -> tuple[SystemStreamPartition, bool, str]:
        return self.ssp, self.task_name is not None, self.task_name or ""

    def __lt__(self, other: StartpointKey) -> bool:
        return self._order() < other._order()

    def coordinator_key(self) -> str:
        base = f"{self.ssp.system}.{self.ssp.stream}.{self.ssp.partition}"
        return base if self.task_name is None else f"{base};{self.task_name}"

    def to_values(self) -> dict[str, Any]:
        values: dict[str, Any] = {
            "system": self.ssp.system,
            "stream": self.ssp.stream,
            "partition": str(self.ssp.partition),
        }
        if self.task_name is not None:
            values["taskName"] = self.task_name
        return values

    @staticmethod
    def from_values(values: dict[str, Any]) -> StartpointKey:
        try:
            ssp = SystemStreamPartition(str(values["system"]), str(values["stream"]), int(str(values["partition"])))
        except (KeyError, ValueError) as exc:
            raise StartpointError(f"set-startpoint values do not name a partition ({exc}): {values!r}") from None
        task = values.get("taskName")
        return StartpointKey(ssp, None if task is None else str(task))

    def __str__(self) -> str:
        where = f"{self.ssp.system}.{self.ssp.stream} partition {self.ssp.partition}"
        return where if self.task_name is None else f"{where} of task {self.task_name!r}"
