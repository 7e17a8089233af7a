"""Startpoints (Samza's Startpoint API): where an input partition starts at the job's next start,
ahead of its checkpoint.

Four kinds, as in Samza: :class:`StartpointOldest`, :class:`StartpointUpcoming`,
:class:`StartpointSpecific` (an offset) and :class:`StartpointTimestamp` (epoch ms: the earliest
offset whose timestamp is at or after it). Each serializes as Apache Samza 1.8's
``StartpointObjectMapper`` writes ``org.apache.samza.startpoint.Startpoint`` — compact JSON, the
Jackson type name first, Samza's property names and order::

    {"@type":"StartpointOldest","creationTimestamp":1709300000000}
    {"@type":"StartpointUpcoming","creationTimestamp":1709300000000}
    {"@type":"StartpointSpecific","creationTimestamp":1709300000000,"specificOffset":"42"}
    {"@type":"StartpointTimestamp","creationTimestamp":1709300000000,"timestampOffset":1709251200000}

(checked with Samza's own classes in tests/samza_interop). The engine's earlier form,
``{"type":"timestamp","timestamp":..,"creationTimestamp":..}``, is still read.

:class:`StartpointKey` names what a startpoint applies to: one input partition (the form a user
writes), or one partition of one task — a task's own startpoint as written, or one the job
coordinator fanned out to the task at start (``fanned_out``).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable
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
    #: the Jackson type name Samza's ``StartpointObjectMapper`` registers (the class's simple name)
    samza_type: ClassVar[str] = ""
    creation_timestamp: int = field(default_factory=_now_ms, kw_only=True)

    def _fields(self) -> dict[str, Any]:
        """The kind's own properties, by Samza's names."""
        return {}

    def to_dict(self) -> dict[str, Any]:
        """Samza's form (the order Samza's Jackson writes: type, creation time, the kind's own)."""
        return {"@type": self.samza_type, "creationTimestamp": self.creation_timestamp, **self._fields()}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=_COMPACT)

    def describe(self) -> str:
        """One human phrase: ``oldest``, ``offset 42``, ``timestamp 1709251200000``."""
        return self.type

    @staticmethod
    def from_dict(data: Any) -> Startpoint:
        """Samza's form (``@type``), or the engine's earlier one (``type``)."""
        if not isinstance(data, dict):
            raise StartpointError(f"a startpoint must be a JSON object; got {data!r}")
        if "@type" in data:
            return _from_samza(data)
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
        """A startpoint from its JSON, in Samza's form or the engine's earlier one."""
        try:
            data = json.loads(text)
        except (ValueError, UnicodeDecodeError) as exc:
            raise StartpointError(f"startpoint is not JSON ({exc}): {text!r}") from None
        return Startpoint.from_dict(data)


@dataclass(frozen=True)
class StartpointOldest(Startpoint):
    """Start at the partition's oldest offset."""

    type: ClassVar[str] = "oldest"
    samza_type: ClassVar[str] = "StartpointOldest"


@dataclass(frozen=True)
class StartpointUpcoming(Startpoint):
    """Start at the partition's upcoming offset: only messages written after the start."""

    type: ClassVar[str] = "upcoming"
    samza_type: ClassVar[str] = "StartpointUpcoming"


@dataclass(frozen=True)
class StartpointSpecific(Startpoint):
    """Start at this offset (the first message read is the one at ``offset``)."""

    type: ClassVar[str] = "specific"
    samza_type: ClassVar[str] = "StartpointSpecific"
    offset: str = ""

    def _fields(self) -> dict[str, Any]:
        return {"specificOffset": self.offset}

    def describe(self) -> str:
        return f"offset {self.offset}"


@dataclass(frozen=True)
class StartpointTimestamp(Startpoint):
    """Start at the earliest offset whose message timestamp is at or after ``timestamp`` (ms)."""

    type: ClassVar[str] = "timestamp"
    samza_type: ClassVar[str] = "StartpointTimestamp"
    timestamp: int = 0

    def _fields(self) -> dict[str, Any]:
        return {"timestampOffset": self.timestamp}

    def describe(self) -> str:
        return f"timestamp {self.timestamp}"


def _from_samza(data: dict[str, Any]) -> Startpoint:
    """Samza's form. Like Samza's reader, a property the kind does not have is refused (so a
    value meant for another reader is not half-read)."""
    kind = data.get("@type")
    known = {
        cls.samza_type: cls for cls in (StartpointOldest, StartpointUpcoming, StartpointSpecific, StartpointTimestamp)
    }
    cls = known.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise StartpointError(f"unknown startpoint @type {kind!r}; expected one of {', '.join(sorted(known))}")
    own = (
        {"specificOffset"}
        if cls is StartpointSpecific
        else {"timestampOffset"}
        if cls is StartpointTimestamp
        else set()
    )
    unknown = sorted(set(data) - {"@type", "creationTimestamp"} - own)
    if unknown:
        raise StartpointError(f"{kind} has no property {', '.join(map(repr, unknown))}: {data!r}")
    created = data.get("creationTimestamp", 0)
    if isinstance(created, bool) or not isinstance(created, int):
        raise StartpointError(f"{kind} creationTimestamp must be an integer; got {created!r}")
    if cls is StartpointSpecific:
        offset = data.get("specificOffset")
        if offset is None or str(offset) == "":
            raise StartpointError(f"StartpointSpecific without a specificOffset: {data!r}")
        return StartpointSpecific(str(offset), creation_timestamp=created)
    if cls is StartpointTimestamp:
        value = data.get("timestampOffset")
        if value is None:
            raise StartpointError(f"StartpointTimestamp without a timestampOffset: {data!r}")
        return StartpointTimestamp(parse_timestamp_value(value), creation_timestamp=created)
    return cls(creation_timestamp=created)


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
    ``task_name``. ``fanned_out``: one the job coordinator gave the task at start (Samza's
    fan-out namespace), which its container applies; otherwise one as written, which the next
    fan-out turns into those.

    Its metadata-store key (:meth:`store_key`) is Samza's ``<system>.<stream>.<partition>``,
    with ``.<task name>`` appended for a task's own; :meth:`coordinator_key` is the engine's
    earlier ``set-startpoint`` key (``;<task name>``), still read and deleted.

    Keys sort by partition, a partition's own startpoint before its tasks' (a task name is
    None for the first kind, so the dataclass's field order cannot compare the two)."""

    ssp: SystemStreamPartition
    task_name: str | None = None
    fanned_out: bool = False

    def _order(self) -> tuple[SystemStreamPartition, bool, str, bool]:
        return self.ssp, self.task_name is not None, self.task_name or "", self.fanned_out

    def __lt__(self, other: StartpointKey) -> bool:
        return self._order() < other._order()

    def store_key(self) -> str:
        """Samza's ``StartpointManager.toReadWriteStoreKey``."""
        base = ssp_key(self.ssp)
        return base if self.task_name is None else f"{base}.{self.task_name}"

    def coordinator_key(self) -> str:
        """The engine's earlier ``set-startpoint`` key."""
        base = ssp_key(self.ssp)
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
        """The partition (and task) an earlier ``set-startpoint`` message's values name; its
        task-level ones were fanned out by the job coordinator."""
        try:
            ssp = SystemStreamPartition(str(values["system"]), str(values["stream"]), int(str(values["partition"])))
        except (KeyError, ValueError) as exc:
            raise StartpointError(f"set-startpoint values do not name a partition ({exc}): {values!r}") from None
        task = values.get("taskName")
        return StartpointKey(ssp, None if task is None else str(task), fanned_out=task is not None)

    def __str__(self) -> str:
        where = f"{self.ssp.system}.{self.ssp.stream} partition {self.ssp.partition}"
        return where if self.task_name is None else f"{where} of task {self.task_name!r}"


def ssp_key(ssp: SystemStreamPartition) -> str:
    """``<system>.<stream>.<partition>``: Samza's store key of a partition (and its key of a
    fan-out's ``fanOuts`` map, ``SamzaObjectMapper.SystemStreamPartitionKeySerializer``)."""
    return f"{ssp.system}.{ssp.stream}.{ssp.partition}"


def parse_ssp_key(text: str) -> SystemStreamPartition:
    """A fan-out's partition key: the system to the first dot, the partition after the last.
    (Samza's own reader splits on every dot, so it cannot read a stream name holding one.)"""
    system, dot, rest = text.partition(".")
    stream, dot2, partition = rest.rpartition(".")
    if not (dot and dot2 and system and stream and partition.isdigit()):
        raise StartpointError(f"{text!r} is not <system>.<stream>.<partition>")
    return SystemStreamPartition(system, stream, int(partition))


_STORE_KEY = re.compile(r"^([^.]+)\.(.+?)\.(\d+)(?:\.(.+))?$")


def parse_store_key(text: str, streams: Iterable[tuple[str, str]] = ()) -> StartpointKey:
    """A key of Samza's startpoint namespace: ``<system>.<stream>.<partition>[.<task name>]``.
    Samza never parses these (it looks up the keys of the partitions it knows), and dots in a
    stream or task name make the split ambiguous: a stream of ``streams`` (system, stream) that
    the key starts with is taken first; otherwise the stream ends before the first all-digit
    part, the rest being the task."""
    for system, stream in sorted(streams, key=lambda ss: -len(ss[1])):
        prefix = f"{system}.{stream}."
        if text.startswith(prefix):
            partition, dot, task = text[len(prefix) :].partition(".")
            if partition.isdigit() and (not dot or task):
                ssp = SystemStreamPartition(system, stream, int(partition))
                return StartpointKey(ssp, task if dot else None)
    match = _STORE_KEY.match(text)
    if match is None:
        raise StartpointError(f"startpoint key {text!r} is not <system>.<stream>.<partition>[.<task name>]")
    ssp = SystemStreamPartition(match.group(1), match.group(2), int(match.group(3)))
    return StartpointKey(ssp, match.group(4))
