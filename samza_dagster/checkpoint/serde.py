"""The checkpoint stream in Apache Samza 1.8's form: ``KafkaCheckpointLogKeySerde`` keys and
``CheckpointV1Serde`` / ``CheckpointV2Serde`` values, as Samza's ``KafkaCheckpointManager`` and
``TaskInstance`` write them by default (``task.checkpoint.write.versions`` 1,2); checked with
Samza's own classes in tests/samza_interop.

Key (Jackson's compact JSON, in this order)::

    {"systemstreampartition-grouper-factory":"org.apache.samza.container.grouper.stream.GroupByPartitionFactory",
     "taskName":"Partition 0","type":"checkpoint"|"checkpoint-v2"}

CheckpointV1 value: ``{"SystemStreamPartition [s, t, p]": {"system","stream","partition","offset"}}``
— every input partition's last processed offset, and (as Samza's ``TaskInstance`` adds them) every
store's changelog partition with ``"<checkpoint id>:<changelog offset>"`` (``KafkaChangelogSSPOffset``).

CheckpointV2 value::

    {"checkpoint-id":"<millis>-<nano id>","input-offsets":{"<system>.<stream>.<partition>":"<offset>"},
     "state-checkpoint-markers":{
        "org.apache.samza.storage.KafkaChangelogStateBackendFactory":{"<store>":"<KafkaStateCheckpointMarker JSON>"},
        "samza_dagster.control":{"end-of-stream":"<JSON>","watermarks":"<JSON>"}},
     "version":2}

The engine's control bookkeeping (end-of-stream and watermark reconciliation) has no Samza
counterpart; it is kept where Samza keeps state checkpoint markers, under a backend name of its
own (:data:`CONTROL_STATE_MARKERS`), which Samza carries and ignores.

Reading (:func:`decode_checkpoint_message`) takes either of Samza's forms, and this engine's
earlier one — the task name as the key, its own JSON as the value (``checkpoint.py``) — so
checkpoint streams written before keep working. Nothing is ever read as an empty checkpoint: a key
or value that is neither is a :class:`CheckpointError` naming the offset.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any

from samza_dagster.checkpoint.checkpoint import Checkpoint, CheckpointError
from samza_dagster.model import SystemStreamPartition

CHECKPOINT_V1_KEY_TYPE = "checkpoint"
CHECKPOINT_V2_KEY_TYPE = "checkpoint-v2"
#: the key types in the order Samza's TaskInstance writes them (its default write versions 1,2)
WRITE_KEY_TYPES = (CHECKPOINT_V1_KEY_TYPE, CHECKPOINT_V2_KEY_TYPE)
#: Samza's name for the Kafka changelog state backend, the key of its markers in a CheckpointV2
KAFKA_STATE_BACKEND_FACTORY = "org.apache.samza.storage.KafkaChangelogStateBackendFactory"
#: where a CheckpointV2 keeps this engine's control bookkeeping (a state backend name of its own)
CONTROL_STATE_MARKERS = "samza_dagster.control"
#: the engine's groupers by Samza's factory class names (what the key names)
GROUPER_FACTORIES = {
    "group-by-partition": "org.apache.samza.container.grouper.stream.GroupByPartitionFactory",
    "group-by-system-stream-partition": "org.apache.samza.container.grouper.stream.GroupBySystemStreamPartitionFactory",
}

_COMPACT = (",", ":")
#: KafkaChangelogSSPOffset's string: "<checkpoint id>:<offset>" with a checkpoint id "<millis>-<nano id>"
_CHANGELOG_SSP_OFFSET = re.compile(r"^(-?\d+)-(\d+):(.*)$", re.DOTALL)
_KEY_FIELDS = ("systemstreampartition-grouper-factory", "taskName", "type")


def new_checkpoint_id(now_ns: int | None = None) -> str:
    """A ``CheckpointId`` as Samza's ``CheckpointId.create()``: wall-clock millis and the last six
    digits of a nanosecond clock, joined by a dash."""
    wall_ms = time.time_ns() // 1_000_000 if now_ns is None else now_ns // 1_000_000
    return f"{wall_ms}-{time.monotonic_ns() % 1_000_000 if now_ns is None else now_ns % 1_000_000}"


@dataclass(frozen=True, slots=True)
class KafkaCheckpointLogKey:
    """Samza's checkpoint-stream key: the task, the checkpoint's form and the grouper factory
    (Samza refuses a key whose grouper differs from its configured one; so does the engine)."""

    type: str
    task_name: str
    grouper_factory: str

    def to_bytes(self) -> bytes:
        body = dict(zip(_KEY_FIELDS, (self.grouper_factory, self.task_name, self.type), strict=True))
        return json.dumps(body, separators=_COMPACT, ensure_ascii=False).encode("utf-8")

    @classmethod
    def from_json(cls, body: Any, offset: str) -> KafkaCheckpointLogKey:
        fields = [body.get(name) for name in _KEY_FIELDS] if isinstance(body, dict) else []
        if len(fields) != 3 or not all(isinstance(f, str) and f for f in fields):
            raise CheckpointError(
                f"checkpoint key at offset {offset} is JSON but not a Samza KafkaCheckpointLogKey "
                f"(needs {', '.join(_KEY_FIELDS)}): {body!r:.200}"
            )
        grouper, task, key_type = (str(f) for f in fields)
        return cls(key_type, task, grouper)


def _ssp_json(ssp: SystemStreamPartition) -> dict[str, Any]:
    # Samza's SystemStreamPartitionSerializer: keyBucket -1 is "no key bucket"
    return {"system": ssp.system, "partition": ssp.partition, "stream": ssp.stream, "keyBucket": -1}


def encode_v1(checkpoint: Checkpoint, checkpoint_id: str) -> bytes:
    """``CheckpointV1Serde``'s JSON: input offsets, and each store's changelog partition with
    ``KafkaChangelogSSPOffset``'s ``"<checkpoint id>:<offset>"``."""
    entries: dict[SystemStreamPartition, str | None] = dict(checkpoint.offsets)
    for changelog, offset in checkpoint.changelog_offsets.values():
        entries[changelog] = f"{checkpoint_id}:{offset}"  # None → "null", as Java's String.format
    body = {
        f"SystemStreamPartition [{s.system}, {s.stream}, {s.partition}]": {
            "system": s.system,
            "partition": str(s.partition),
            "offset": o,
            "stream": s.stream,
        }
        for s, o in sorted(entries.items())
    }
    return json.dumps(body, separators=_COMPACT, ensure_ascii=False).encode("utf-8")


def decode_v1(data: bytes, where: str) -> Checkpoint:
    """A CheckpointV1: its input offsets. Its changelog entries (``KafkaChangelogSSPOffset``
    values) name partitions, not stores, so they are left out: the engine restores a store from
    a CheckpointV2's markers when there is one (Samza writes both by default), else its whole
    changelog."""
    body = _json_object(data, where)
    offsets: dict[SystemStreamPartition, str] = {}
    for entry in body.values():
        if not isinstance(entry, dict):
            raise CheckpointError(f"malformed CheckpointV1 {where}: an entry is not an object: {entry!r:.120}")
        try:
            ssp = SystemStreamPartition(str(entry["system"]), str(entry["stream"]), int(entry["partition"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(f"malformed CheckpointV1 {where}: entry {entry!r:.120}: {exc!r}") from None
        offset = entry.get("offset")
        if offset is None or _CHANGELOG_SSP_OFFSET.match(str(offset)):
            continue  # a changelog partition's entry (or no offset at all: nothing to resume from)
        offsets[ssp] = str(offset)
    return Checkpoint(offsets)


def encode_v2(checkpoint: Checkpoint, checkpoint_id: str) -> bytes:
    """``CheckpointV2Serde``'s JSON (Samza's ``SamzaObjectMapper``)."""
    markers: dict[str, dict[str, str]] = {}
    if checkpoint.changelog_offsets:
        markers[KAFKA_STATE_BACKEND_FACTORY] = {
            store: json.dumps(
                {"version": 1, "changelog-ssp": _ssp_json(ssp), "changelog-offset": offset},
                separators=_COMPACT,
                ensure_ascii=False,
            )
            for store, (ssp, offset) in sorted(checkpoint.changelog_offsets.items())
        }
    if checkpoint.end_of_stream or checkpoint.watermarks:
        markers[CONTROL_STATE_MARKERS] = {
            "end-of-stream": json.dumps(checkpoint.end_of_stream, separators=_COMPACT),
            "watermarks": json.dumps(checkpoint.watermarks, separators=_COMPACT),
        }
    body = {
        "checkpoint-id": checkpoint_id,
        "input-offsets": {f"{s.system}.{s.stream}.{s.partition}": o for s, o in sorted(checkpoint.offsets.items())},
        "state-checkpoint-markers": markers,
        "version": 2,
    }
    return json.dumps(body, separators=_COMPACT, ensure_ascii=False).encode("utf-8")


def _ssp_from_key(key: str, where: str) -> SystemStreamPartition:
    # Samza splits on every dot (so a stream name with a dot breaks Samza's own reader); the engine
    # takes the system up to the first dot and the partition after the last
    system, _, rest = key.partition(".")
    stream, _, partition = rest.rpartition(".")
    try:
        return SystemStreamPartition(system, stream, int(partition))
    except ValueError:
        raise CheckpointError(
            f"malformed CheckpointV2 {where}: input-offsets key {key!r} is not system.stream.partition"
        ) from None


def decode_v2(data: bytes, where: str) -> Checkpoint:
    body = _json_object(data, where)
    raw_offsets = body.get("input-offsets")
    markers = body.get("state-checkpoint-markers") or {}
    if not isinstance(body.get("checkpoint-id"), str) or not isinstance(raw_offsets, dict):
        raise CheckpointError(f"malformed CheckpointV2 {where}: needs checkpoint-id and input-offsets: {data[:120]!r}")
    if not isinstance(markers, dict) or not all(isinstance(m, dict) for m in markers.values()):
        raise CheckpointError(f"malformed CheckpointV2 {where}: state-checkpoint-markers must map backends to objects")
    offsets = {_ssp_from_key(str(k), where): str(v) for k, v in raw_offsets.items() if v is not None}
    changelogs: dict[str, tuple[SystemStreamPartition, str | None]] = {}
    for store, marker in (markers.get(KAFKA_STATE_BACKEND_FACTORY) or {}).items():
        try:
            parsed = json.loads(marker)
            ssp_body = parsed["changelog-ssp"]
            changelog = SystemStreamPartition(
                str(ssp_body["system"]), str(ssp_body["stream"]), int(ssp_body["partition"])
            )
            offset = parsed.get("changelog-offset")
        except (ValueError, TypeError, KeyError) as exc:
            raise CheckpointError(
                f"malformed CheckpointV2 {where}: KafkaStateCheckpointMarker of store {store!r}: {exc!r}"
            ) from None
        changelogs[str(store)] = (changelog, None if offset is None else str(offset))
    control = markers.get(CONTROL_STATE_MARKERS) or {}
    try:
        eos = json.loads(control.get("end-of-stream", "{}"))
        watermarks = json.loads(control.get("watermarks", "{}"))
    except (ValueError, TypeError) as exc:
        raise CheckpointError(f"malformed CheckpointV2 {where}: {CONTROL_STATE_MARKERS} markers: {exc}") from None
    if not isinstance(eos, dict) or not isinstance(watermarks, dict):
        raise CheckpointError(f"malformed CheckpointV2 {where}: {CONTROL_STATE_MARKERS} markers must be JSON objects")
    return Checkpoint(offsets, changelogs, eos, watermarks)


def _json_object(data: bytes, where: str) -> dict[str, Any]:
    try:
        body = json.loads(data)
    except (ValueError, TypeError) as exc:
        raise CheckpointError(f"malformed {where}: not JSON ({exc}): {bytes(data[:80])!r}") from None
    if not isinstance(body, dict):
        raise CheckpointError(f"malformed {where}: not a JSON object: {bytes(data[:80])!r}")
    return body


def grouper_factory(grouper: str) -> str:
    """Samza's factory class name for one of the engine's groupers (a class name passes through)."""
    return GROUPER_FACTORIES.get(grouper, grouper)


def encode_checkpoint_messages(
    task_name: str, checkpoint: Checkpoint, grouper: str, checkpoint_id: str | None = None
) -> list[tuple[bytes, bytes]]:
    """The (key, value) messages Samza's TaskInstance writes for one commit by default: a
    CheckpointV1, then a CheckpointV2 with the same checkpoint id."""
    cid = checkpoint_id or new_checkpoint_id()
    factory = grouper_factory(grouper)
    return [
        (KafkaCheckpointLogKey(CHECKPOINT_V1_KEY_TYPE, task_name, factory).to_bytes(), encode_v1(checkpoint, cid)),
        (KafkaCheckpointLogKey(CHECKPOINT_V2_KEY_TYPE, task_name, factory).to_bytes(), encode_v2(checkpoint, cid)),
    ]


@dataclass(frozen=True, slots=True)
class CheckpointMessage:
    """One decoded message of the checkpoint stream: ``checkpoint`` None is a tombstone."""

    task_name: str
    form: str  # "checkpoint" (V1), "checkpoint-v2", or "engine" (this engine's earlier form)
    checkpoint: Checkpoint | None


ENGINE_FORM = "engine"


def decode_checkpoint_message(
    key: bytes | str | None, value: bytes | None, offset: str, grouper: str
) -> CheckpointMessage:
    """Read one message of the checkpoint stream in whichever form it is. A Samza key names the
    task, its form and its grouper (which must be the job's); any other key is this engine's
    earlier form, the task name itself. Raises :class:`CheckpointError` naming the offset for
    anything it cannot read — never an empty checkpoint."""
    if key is None:
        raise CheckpointError(f"checkpoint message at offset {offset} has no key")
    text = key.decode("utf-8", "replace") if isinstance(key, (bytes, bytearray)) else str(key)
    body: Any = None
    if text.startswith("{"):
        try:
            body = json.loads(text)
        except ValueError:
            body = None
    if not isinstance(body, dict):
        if value is None:
            return CheckpointMessage(text, ENGINE_FORM, None)
        return CheckpointMessage(text, ENGINE_FORM, Checkpoint.from_bytes(value, text, offset))
    log_key = KafkaCheckpointLogKey.from_json(body, offset)
    expected = grouper_factory(grouper)
    if log_key.grouper_factory != expected:
        raise CheckpointError(
            f"checkpoint of task {log_key.task_name!r} at offset {offset} was written with grouper "
            f"{log_key.grouper_factory}, this job groups with {expected}: its task names mean other partitions"
        )
    where = f"checkpoint of task {log_key.task_name!r} at offset {offset}"
    if value is None:
        return CheckpointMessage(log_key.task_name, log_key.type, None)
    if log_key.type == CHECKPOINT_V1_KEY_TYPE:
        return CheckpointMessage(log_key.task_name, log_key.type, decode_v1(value, where))
    if log_key.type == CHECKPOINT_V2_KEY_TYPE:
        return CheckpointMessage(log_key.task_name, log_key.type, decode_v2(value, where))
    raise CheckpointError(
        f"{where}: unknown checkpoint key type {log_key.type!r} (known: {CHECKPOINT_V1_KEY_TYPE}, "
        f"{CHECKPOINT_V2_KEY_TYPE}); refusing to start the task without it"
    )
