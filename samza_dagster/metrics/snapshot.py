"""Samza's metrics snapshot, the value of every message on a metrics stream, as Apache Samza
1.8's ``org.apache.samza.metrics.reporter.MetricsSnapshot`` / ``MetricsHeader`` and its two serdes
write it (checked with Samza's own classes in tests/samza_interop):

``{"header": {"job-name", "job-id", "container-name", "exec-env-container-id", "samza-epoch-id",
"source", "host", "time", "reset-time", "version", "samza-version"}, "metrics": {"<group>":
{"<name>": <value>}}}``

``time`` and ``reset-time`` are milliseconds since the epoch (when the snapshot was taken, when
the reporter started counting); a counter's value is its count, a gauge's its value, a timer's
its recent mean in nanoseconds, a list gauge's its list — as Samza's ``MetricsSnapshotReporter``
writes them, so Samza's tooling reads our streams and ours reads Samza's.
``exec-env-container-id`` is required by Samza's ``MetricsHeader.fromMap`` (the execution
environment's container id; ``""`` when there is none, as Samza writes it); ``samza-epoch-id``
is optional there. A snapshot without them (this engine's before) is still read.

Two encodings (``encode(form)``), both read by :meth:`MetricsSnapshot.decode` whatever wrote them:

* ``json`` — ``MetricsSnapshotSerde``: the plain JSON above;
* ``v2`` — ``MetricsSnapshotSerdeV2``: Jackson's default typing, every map below the top one a
  ``["java.util.HashMap", {..}]`` wrapper, every list ``["java.util.ArrayList", [..]]``, every
  integer ``["java.lang.Long", n]`` (Samza's counters are longs); strings, doubles and booleans
  are plain.

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


#: the serde forms (``MetricsSnapshotSerde``, ``MetricsSnapshotSerdeV2``)
JSON_FORM = "json"
V2_FORM = "v2"

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
    #: Samza's execution-environment container id (its ``EXECUTION_ENV_CONTAINER_ID``); required
    #: by Samza's ``MetricsHeader.fromMap``, so always written
    exec_env_container_id: str = ""
    #: Samza's ``samza-epoch-id`` (its ``SAMZA_EPOCH_ID``); optional on both sides
    samza_epoch_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {wire: getattr(self, attr) for wire, attr in _HEADER_FIELDS}
        out["exec-env-container-id"] = self.exec_env_container_id
        if self.samza_epoch_id is not None:
            out["samza-epoch-id"] = self.samza_epoch_id
        return out

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
        # absent from this engine's earlier snapshots: read as Samza writes "none"
        values["exec_env_container_id"] = str(data.get("exec-env-container-id") or "")
        epoch = data.get("samza-epoch-id")
        values["samza_epoch_id"] = None if epoch is None else str(epoch)
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

    def encode(self, form: str = JSON_FORM) -> bytes:
        """The snapshot as ``MetricsSnapshotSerde`` (``json``) or ``MetricsSnapshotSerdeV2``
        (``v2``) writes it."""
        data = self.to_dict()
        if form == V2_FORM:
            data = {k: _typed(v) for k, v in data.items()}
        elif form != JSON_FORM:
            raise MetricsSnapshotError(f"unknown metrics snapshot form {form!r} (known: {JSON_FORM}, {V2_FORM})")
        return json.dumps(data, separators=(",", ":"), default=_jsonable).encode("utf-8")

    @classmethod
    def decode(cls, value: bytes | bytearray | str) -> MetricsSnapshot:
        """Either form: a V2 snapshot is told by its type-wrapped header."""
        try:
            data = json.loads(value)
        except (ValueError, UnicodeDecodeError) as exc:
            raise MetricsSnapshotError(f"not JSON: {exc}") from exc
        if not isinstance(data, dict) or "header" not in data or "metrics" not in data:
            raise MetricsSnapshotError("not an object with a header and metrics")
        if isinstance(data["header"], list):
            data = {k: _untyped(v, k) for k, v in data.items()}
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


#: the Java classes MetricsSnapshotSerdeV2 names for what the engine's values are
_JAVA_MAP = "java.util.HashMap"
_JAVA_LIST = "java.util.ArrayList"
_JAVA_LONG = "java.lang.Long"


def _typed(value: Any) -> Any:
    """``value`` as Jackson's default typing (OBJECT_AND_NON_CONCRETE) writes it for a value
    held as an Object: maps, lists and longs wrapped with their class, strings, doubles,
    booleans and null plain."""
    if isinstance(value, dict):
        return [_JAVA_MAP, {str(k): _typed(v) for k, v in value.items()}]
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_JAVA_LIST, [_typed(v) for v in value]]
    if isinstance(value, bool) or value is None or isinstance(value, (str, float)):
        return value
    if isinstance(value, int):
        return [_JAVA_LONG, value]
    return _jsonable(value)


def _untyped(value: Any, where: str) -> Any:
    """The plain value of a V2 (type-wrapped) one: a JSON array is a ``[class, value]`` pair,
    whose value is a collection's own items (each typed again) or a scalar."""
    if isinstance(value, list):
        if len(value) != 2 or not isinstance(value[0], str):
            raise MetricsSnapshotError(f"{where}: not a MetricsSnapshotSerdeV2 type wrapper [class, value]: {value!r}")
        inner = value[1]
        if isinstance(inner, list):
            return [_untyped(item, where) for item in inner]
        return _untyped(inner, where) if isinstance(inner, dict) else inner
    if isinstance(value, dict):
        return {k: _untyped(v, f"{where}.{k}") for k, v in value.items()}
    return value


def _jsonable(value: Any) -> Any:
    """A value JSON has no type for (a set, a custom object a user's gauge holds) as a string."""
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)
