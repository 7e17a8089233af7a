"""The checkpoint of one task and this engine's own JSON form, which it wrote before it wrote
Samza's (``serde.py``: ``KafkaCheckpointLogKey`` keys, CheckpointV1 and CheckpointV2 values); still
read from checkpoint streams written then, and used where the engine keeps checkpoints of its own
(``container/output_checkpoints.py``).

Value (compact JSON, UTF-8)::

    {"version": 1,
     "offsets": [{"system": "log", "stream": "words", "partition": 0, "offset": "41"}, ...],
     "changelog_offsets": {"counts": {"system": "log", "stream": "counts-changelog",
                                       "partition": 0, "offset": "99"}},
     "end_of_stream": {...}, "watermarks": {...}}

``offsets`` hold the offset of the *last processed* message of each input partition (a
restart resumes at ``SystemAdmin.get_offsets_after``). SSPs are objects, not joined strings,
because stream names may contain dots. ``end_of_stream`` and ``watermarks`` are opaque JSON
objects owned by the control-message bookkeeping (Samza design), carried through unchanged.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from samza_dagster.errors import SamzaError
from samza_dagster.model import SystemStreamPartition

CHECKPOINT_VERSION = 1


class CheckpointError(SamzaError, ValueError):
    """A checkpoint message could not be read; names the task and the offset."""


@dataclass
class Checkpoint:
    offsets: dict[SystemStreamPartition, str] = field(default_factory=dict)
    #: store name → (changelog SSP, offset of the newest changelog message covered; None if empty)
    changelog_offsets: dict[str, tuple[SystemStreamPartition, str | None]] = field(default_factory=dict)
    end_of_stream: dict[str, Any] = field(default_factory=dict)
    watermarks: dict[str, Any] = field(default_factory=dict)
    version: int = CHECKPOINT_VERSION

    def to_bytes(self) -> bytes:
        body = {
            "version": self.version,
            "offsets": [
                {"system": s.system, "stream": s.stream, "partition": s.partition, "offset": o}
                for s, o in sorted(self.offsets.items())
            ],
            "changelog_offsets": {
                name: {"system": s.system, "stream": s.stream, "partition": s.partition, "offset": o}
                for name, (s, o) in sorted(self.changelog_offsets.items())
            },
            "end_of_stream": self.end_of_stream,
            "watermarks": self.watermarks,
        }
        return json.dumps(body, separators=(",", ":"), sort_keys=False).encode("utf-8")

    @classmethod
    def from_bytes(cls, data: bytes, task_name: str = "?", offset: str = "?") -> Checkpoint:
        where = f"checkpoint of task {task_name!r} at offset {offset}"
        try:
            body = json.loads(data)
            if not isinstance(body, dict):
                raise ValueError("not a JSON object")
            version = int(body.get("version", CHECKPOINT_VERSION))
            if version != CHECKPOINT_VERSION:
                raise ValueError(f"unsupported version {version}")
            if not isinstance(body.get("offsets"), list):
                # a Samza CheckpointV1 under a task-name key read as empty once: never again
                raise ValueError('no "offsets" list: not a checkpoint in this engine\'s own form')
            offsets = {
                SystemStreamPartition(str(e["system"]), str(e["stream"]), int(e["partition"])): str(e["offset"])
                for e in body.get("offsets", [])
            }
            changelogs = {
                str(name): (
                    SystemStreamPartition(str(e["system"]), str(e["stream"]), int(e["partition"])),
                    None if e.get("offset") is None else str(e["offset"]),
                )
                for name, e in (body.get("changelog_offsets") or {}).items()
            }
            eos = body.get("end_of_stream") or {}
            watermarks = body.get("watermarks") or {}
            if not isinstance(eos, dict) or not isinstance(watermarks, dict):
                raise ValueError("end_of_stream and watermarks must be objects")
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            preview = bytes(data[:80]) if isinstance(data, (bytes, bytearray)) else repr(data)[:80]
            raise CheckpointError(f"malformed {where}: {exc} (value {preview!r})") from None
        return cls(offsets, changelogs, eos, watermarks, version)
