"""Samza's metrics snapshot, the value of every message on a metrics stream:

``{"header": {"job-name", "job-id", "container-name", "source", "host", "time", "reset-time",
"version", "samza-version"}, "metrics": {"<group>": {"<name>": <value>}}}``

``time`` and ``reset-time`` are milliseconds since the epoch (when the snapshot was taken, when
the reporter started counting); a counter's value is its count, a gauge's its value, a timer's
its recent mean in nanoseconds, a list gauge's its list — as Samza's ``MetricsSnapshotReporter``
writes them, so Samza's tooling reads our streams and ours reads Samza's.

One addition Samza's readers ignore (they read ``header`` and ``metrics``): ``"types": {"<group>":
{"<name>": "counter" | "timer"}}``, the kind of every counter and timer the registry holds (a
value not listed is a gauge), so a Prometheus view shows a task's own counter as a counter.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from samza_dagster.metrics.errors import MetricsError


class MetricsSnapshotError(MetricsError):
    """A message on a metrics stream is not a Samza metrics snapshot; the message says why."""


_HEADER_FIELDS = (
    ("job-name", "job_name"),
    ("job-id", "job_id"),
    ("container-name", "container_name"),
    ("source", "source"),
    ("host", "host"),
    ("time", "time"),
    ("reset-time", "reset_time"),
    ("version", "version"),
    ("samza-version", "samza_version"),
)


@dataclass(frozen=True, slots=True)
class MetricsHeader:
    job_name: str
    job_id: str
    container_name: str
    source: str
    host: str
    time: int
    reset_time: int
    version: str
    samza_version: str

    def to_dict(self) -> dict[str, Any]:
        return {wire: getattr(self, attr) for wire, attr in _HEADER_FIELDS}

    @classmethod
    def from_dict(cls, data: Any) -> MetricsHeader:
        if not isinstance(data, dict):
            raise MetricsSnapshotError(f"the header is a {type(data).__name__}, not an object")
        missing = [wire for wire, _ in _HEADER_FIELDS if wire not in data]
        if missing:
            raise MetricsSnapshotError(f"the header lacks {', '.join(missing)}")
        values = {attr: data[wire] for wire, attr in _HEADER_FIELDS}
        for attr in ("time", "reset_time"):
            if not isinstance(values[attr], int) or isinstance(values[attr], bool):
                raise MetricsSnapshotError(f"header {attr.replace('_', '-')} is {values[attr]!r}, not milliseconds")
        for _wire, attr in _HEADER_FIELDS:
            if attr not in ("time", "reset_time"):
                values[attr] = str(values[attr])
        return cls(**values)


@dataclass(frozen=True, slots=True)
class MetricsSnapshot:
    header: MetricsHeader
    metrics: dict[str, dict[str, Any]]
    #: group → name → "counter" | "timer" (not Samza's: see the module's docstring)
    types: dict[str, dict[str, str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = {"header": self.header.to_dict(), "metrics": self.metrics}
        if self.types:
            out["types"] = self.types
        return out

    def encode(self) -> bytes:
        return json.dumps(self.to_dict(), separators=(",", ":"), default=_jsonable).encode("utf-8")

    @classmethod
    def decode(cls, value: bytes | bytearray | str) -> MetricsSnapshot:
        try:
            data = json.loads(value)
        except (ValueError, UnicodeDecodeError) as exc:
            raise MetricsSnapshotError(f"not JSON: {exc}") from exc
        if not isinstance(data, dict) or "header" not in data or "metrics" not in data:
            raise MetricsSnapshotError("not an object with a header and metrics")
        metrics = data["metrics"]
        if not isinstance(metrics, dict) or not all(isinstance(g, dict) for g in metrics.values()):
            raise MetricsSnapshotError("metrics is not an object of groups, each an object of name → value")
        types = data.get("types") or {}
        if not isinstance(types, dict) or not all(isinstance(g, dict) for g in types.values()):
            types = {}  # an extension: a malformed one only costs the kinds, never the snapshot
        return cls(MetricsHeader.from_dict(data["header"]), metrics, types)

    def kind(self, group: str, name: str) -> str | None:
        """ "counter" or "timer" as the snapshot recorded it; None for a gauge or unrecorded."""
        kind = self.types.get(group, {}).get(name)
        return kind if isinstance(kind, str) else None

    def value(self, group: str, name: str, default: Any = None) -> Any:
        return self.metrics.get(group, {}).get(name, default)


def plain(metrics: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``metrics`` with every value JSON can hold (what a user's gauge holds otherwise, as text):
    safe to put in a container summary that travels as JSON."""
    return json.loads(json.dumps(metrics, default=_jsonable))


def _jsonable(value: Any) -> Any:
    """A value JSON has no type for (a set, a custom object a user's gauge holds) as a string."""
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)
