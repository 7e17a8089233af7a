"""The dead-letter stream (``task.dlq.stream=<system>.<stream>``): where a message that its
stream's serde cannot decode goes instead of failing the job.

Each dead letter is one message on the DLQ stream: key = the bad message's raw key bytes (so
it partitions like the original), value = compact UTF-8 JSON::

    {"error": "json: cannot decode b'...': ...", "task": "Partition 0",
     "system": "log", "stream": "orders", "partition": 3, "offset": "41",
     "key": "<base64 of the raw key, or null>", "message": "<base64 of the raw bytes, or null>"}

The raw bytes travel base64-encoded, untouched, so an operator can fix and replay them. The
dead letter is sent with the task's source, so it is flushed at the task's next commit, before
the checkpoint that skips the bad offset: a crash never loses one (it may send one twice).
"""

from __future__ import annotations

import base64
import json
from typing import Any

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.model import OutgoingMessageEnvelope, StreamSpec, SystemStream

DLQ_KEY = keys.TASK_DLQ_STREAM.name


def dead_letter_stream(config: Config) -> SystemStream | None:
    """The ``task.dlq.stream`` system stream, or None; names the key when malformed."""
    value = (config.get_str(DLQ_KEY) or "").strip()
    if not value:
        return None
    system, dot, stream = value.partition(".")
    if not dot or not system or not stream:
        raise ConfigError(f"config key {DLQ_KEY!r} must be <system>.<stream>, got {value!r}", key=DLQ_KEY)
    return SystemStream(system, stream)


def _b64(data: Any) -> str | None:
    if data is None:
        return None
    if isinstance(data, str):
        data = data.encode("utf-8")
    return base64.b64encode(bytes(data)).decode("ascii")


def dead_letter_bytes(task_name: str, envelope: Any, raw_key: Any, raw_message: Any, error: BaseException) -> bytes:
    ssp = envelope.ssp
    body = {
        "error": f"{type(error).__name__}: {error}",
        "task": task_name,
        "system": ssp.system,
        "stream": ssp.stream,
        "partition": ssp.partition,
        "offset": envelope.offset,
        "key": _b64(raw_key),
        "message": _b64(raw_message),
    }
    return json.dumps(body, separators=(",", ":")).encode("utf-8")


def parse_dead_letter(data: bytes) -> dict[str, Any]:
    """A dead letter's JSON with ``key``/``message`` decoded back to bytes."""
    body = json.loads(data)
    for field in ("key", "message"):
        if body.get(field) is not None:
            body[field] = base64.b64decode(body[field])
    return body


class DeadLetterSender:
    """Sends dead letters for a task through the DLQ system's producer (source = task name)."""

    __slots__ = ("producer", "stream")

    def __init__(self, producer: Any, stream: SystemStream) -> None:
        self.producer = producer
        self.stream = stream

    def send(self, task_name: str, envelope: Any, raw_key: Any, raw_message: Any, error: BaseException) -> None:
        key = raw_key if isinstance(raw_key, (bytes, type(None))) else None
        self.producer.send(
            task_name,
            OutgoingMessageEnvelope(
                self.stream, dead_letter_bytes(task_name, envelope, raw_key, raw_message, error), key
            ),
        )


def ensure_dead_letter_stream(admin: Any, stream: SystemStream) -> None:
    """Create the DLQ stream (one partition) unless it exists; fail naming the key otherwise."""
    try:
        admin.create_stream(StreamSpec(stream.stream, stream.stream, stream.system, 1))
    except Exception as exc:  # noqa: BLE001 - exists already (fine) or cannot be created (reported)
        try:
            admin.get_system_stream_metadata([stream.stream])[stream.stream]
        except Exception:  # noqa: BLE001
            raise ConfigError(
                f"config key {DLQ_KEY!r}: cannot create dead-letter stream {stream.system}.{stream.stream}: {exc}",
                key=DLQ_KEY,
            ) from exc
