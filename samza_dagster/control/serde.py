"""The intermediate-stream message format, as Apache Samza 1.8's
``org.apache.samza.serializers.IntermediateMessageSerde`` reads and writes it:

    IntermediateMessage => MessageType MessageData
      MessageType => byte: 0 user message, 1 watermark, 2 end-of-stream, 3 drain
      MessageData => the user serde's bytes, or the control message as compact JSON

The control body is what Samza 1.8's Jackson mapper (``JsonSerdeV2``) writes for the message
classes — the subclass's own fields first, then ``ControlMessage``'s ``taskName`` and ``version``
(checked byte for byte against Samza's classes in tests/samza_interop):

    {"taskName":"Partition 0","version":1}                          end-of-stream
    {"timestamp":1500000000000,"taskName":"Partition 0","version":1}   watermark
    {"taskName":"Partition 0","version":1,"runId":"<app.run.id>"}      drain

No ``taskCount``: Samza 1.8 rejects the field. The design documents' (Samza 0.13's) form with
``"taskCount":<n>`` is still read, so streams written before keep working. Reading accepts the
fields in any order and ignores unknown ones; a version this code does not know is refused
rather than guessed at.
"""

from __future__ import annotations

import json
from typing import Any, TypeGuard

from samza_dagster.control.errors import ControlMessageError
from samza_dagster.control.messages import SUPPORTED_VERSIONS, DrainMessage, EndOfStreamMessage, WatermarkMessage
from samza_dagster.serde.serdes import Serde

USER_MESSAGE = 0
WATERMARK = 1
END_OF_STREAM = 2
DRAIN = 3

_USER_PREFIX = b"\x00"
_WATERMARK_PREFIX = b"\x01"
_END_OF_STREAM_PREFIX = b"\x02"
_DRAIN_PREFIX = b"\x03"
_TYPE_NAMES = {USER_MESSAGE: "user message", WATERMARK: "watermark", END_OF_STREAM: "end-of-stream", DRAIN: "drain"}
_CONTROL_CLASSES = (EndOfStreamMessage, WatermarkMessage, DrainMessage)

# Jackson escapes like JSON's minimum and writes non-ASCII characters as UTF-8.
_dump_str = json.JSONEncoder(ensure_ascii=False).encode


def _preview(data: bytes, limit: int = 60) -> str:
    return repr(data[:limit]) + ("..." if len(data) > limit else "")


def _is_int(value: object) -> TypeGuard[int]:
    """An int that is not a bool (JSON's true is not a count)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _str_or_null(value: str | None) -> str:
    return "null" if value is None else _dump_str(value)


def encode_control_message(message: EndOfStreamMessage | WatermarkMessage | DrainMessage) -> bytes:
    """The type byte and JSON body of a control message, in Samza 1.8's form."""
    cls = type(message)
    if cls is EndOfStreamMessage:
        body = f'{{"taskName":{_str_or_null(message.task_name)},"version":{int(message.version)}}}'
        return _END_OF_STREAM_PREFIX + body.encode("utf-8")
    if cls is WatermarkMessage:
        assert isinstance(message, WatermarkMessage)
        if not _is_int(message.timestamp):
            raise ControlMessageError(f"watermark timestamp must be an int (ms), got {message.timestamp!r}")
        body = (
            f'{{"timestamp":{message.timestamp},"taskName":{_str_or_null(message.task_name)},'
            f'"version":{int(message.version)}}}'
        )
        return _WATERMARK_PREFIX + body.encode("utf-8")
    if cls is DrainMessage:
        assert isinstance(message, DrainMessage)
        body = (
            f'{{"taskName":{_str_or_null(message.task_name)},"version":{int(message.version)},'
            f'"runId":{_str_or_null(message.run_id)}}}'
        )
        return _DRAIN_PREFIX + body.encode("utf-8")
    raise ControlMessageError(f"not a control message: {cls.__name__}")


def _decode_control(kind: int, body: bytes) -> EndOfStreamMessage | WatermarkMessage | DrainMessage:
    name = _TYPE_NAMES[kind]
    try:
        fields = json.loads(body)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise ControlMessageError(f"malformed {name} control message {_preview(body)}: {exc}") from None
    if not isinstance(fields, dict):
        raise ControlMessageError(f"malformed {name} control message {_preview(body)}: not a JSON object")
    version = fields.get("version")
    if not _is_int(version) or version not in SUPPORTED_VERSIONS:
        supported = ", ".join(str(v) for v in sorted(SUPPORTED_VERSIONS))
        raise ControlMessageError(f"unsupported {name} control message version {version!r} (supported: {supported})")
    task_name = fields.get("taskName")
    if task_name is not None and not isinstance(task_name, str):
        raise ControlMessageError(
            f"malformed {name} control message: taskName must be a string or null, got {task_name!r}"
        )
    if kind == DRAIN:
        run_id = fields.get("runId")
        if run_id is not None and not isinstance(run_id, str):
            raise ControlMessageError(f"malformed drain control message: runId must be a string, got {run_id!r}")
        return DrainMessage(task_name, run_id, version)
    # Samza 1.8 writes no taskCount; the design documents' form (Samza 0.13) had one
    task_count = fields.get("taskCount")
    if task_count is not None and (not _is_int(task_count) or task_count < 0):
        raise ControlMessageError(
            f"malformed {name} control message: taskCount must be a non-negative int, got {task_count!r}"
        )
    if kind == END_OF_STREAM:
        return EndOfStreamMessage(task_name, task_count, version)
    timestamp = fields.get("timestamp")
    if not _is_int(timestamp):
        raise ControlMessageError(
            f"malformed watermark control message: timestamp must be an int (ms), got {timestamp!r}"
        )
    return WatermarkMessage(timestamp, task_name, task_count, version)


class IntermediateMessageSerde:
    """Wraps the user serde of an intermediate stream so control messages travel in-band
    (Samza's ``IntermediateMessageSerde``).

    ``to_bytes`` takes a user object or a control message (EndOfStreamMessage,
    WatermarkMessage, DrainMessage); ``from_bytes`` gives back the user object (as the user
    serde returns it) or the control message. ``user_serde`` None means user messages are
    bytes already.
    Errors: ``ControlMessageError`` for anything wrong with the framing or a control body;
    a user body's decoding errors are the user serde's own (usually ``SerdeError``).
    """

    __slots__ = ("user_serde", "_user_to_bytes", "_user_from_bytes")

    def __init__(self, user_serde: Serde | None = None) -> None:
        self.user_serde = user_serde
        self._user_to_bytes = user_serde.to_bytes if user_serde is not None else None
        self._user_from_bytes = user_serde.from_bytes if user_serde is not None else bytes

    def to_bytes(self, obj: Any) -> bytes:
        if type(obj) in _CONTROL_CLASSES:
            return encode_control_message(obj)
        data = self._user_to_bytes(obj) if self._user_to_bytes is not None else obj
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise ControlMessageError(
                f"intermediate stream user message must serialize to bytes, got {type(data).__name__}; "
                "configure a msg serde for the stream"
            )
        return _USER_PREFIX + data

    def from_bytes(self, data: bytes) -> Any:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise ControlMessageError(f"intermediate stream message must be bytes, got {type(data).__name__}")
        if not data:
            raise ControlMessageError(
                "empty intermediate stream message: expected a type byte (0 user, 1 watermark, 2 end-of-stream, 3 drain)"
            )
        kind = data[0]
        if kind == USER_MESSAGE:
            return self._user_from_bytes(data[1:])
        if kind == WATERMARK or kind == END_OF_STREAM or kind == DRAIN:
            return _decode_control(kind, bytes(data[1:]))
        raise ControlMessageError(
            f"unknown intermediate stream message type {kind} (expected 0 user, 1 watermark, 2 end-of-stream, 3 drain)"
        )


def deserialize_intermediate_message(serde: IntermediateMessageSerde, envelope: Any) -> Any:
    """Decode ``envelope.message`` (an IncomingMessageEnvelope's raw bytes) with ``serde``;
    a ControlMessageError is re-raised naming the envelope's stream, partition and offset."""
    try:
        return serde.from_bytes(envelope.message)
    except ControlMessageError as exc:
        raise exc.at_envelope(envelope) from None
