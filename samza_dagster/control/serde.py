"""The intermediate-stream message format (Samza design):

    IntermediateMessage => MessageType MessageData
      MessageType => byte: 0 user message, 1 watermark, 2 end-of-stream
      MessageData => the user serde's bytes, or the control message as compact JSON

The control body is what Samza's Jackson mapper writes for the message classes: fields in
declaration order, superclass first — ``taskName``, ``taskCount``, ``version``, then the
watermark's own ``timestamp`` — with no whitespace and ``null`` for a missing task name:

    {"taskName":"Partition 0","taskCount":4,"version":1}
    {"taskName":"Partition 0","taskCount":4,"version":1,"timestamp":1500000000000}

Reading accepts the fields in any order and ignores unknown ones (a newer writer may add
some); a version this code does not know is refused rather than guessed at.
"""

from __future__ import annotations

import json
from typing import Any, TypeGuard

from samza_dagster.control.errors import ControlMessageError
from samza_dagster.control.messages import SUPPORTED_VERSIONS, EndOfStreamMessage, WatermarkMessage
from samza_dagster.serde.serdes import Serde

USER_MESSAGE = 0
WATERMARK = 1
END_OF_STREAM = 2

_USER_PREFIX = b"\x00"
_WATERMARK_PREFIX = b"\x01"
_END_OF_STREAM_PREFIX = b"\x02"
_TYPE_NAMES = {USER_MESSAGE: "user message", WATERMARK: "watermark", END_OF_STREAM: "end-of-stream"}

# Jackson escapes like JSON's minimum and writes non-ASCII characters as UTF-8.
_dump_str = json.JSONEncoder(ensure_ascii=False).encode


def _preview(data: bytes, limit: int = 60) -> str:
    return repr(data[:limit]) + ("..." if len(data) > limit else "")


def _is_int(value: object) -> TypeGuard[int]:
    """An int that is not a bool (JSON's true is not a count)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _encode_header(task_name: str | None, task_count: int, version: int) -> str:
    name = "null" if task_name is None else _dump_str(task_name)
    return f'{{"taskName":{name},"taskCount":{int(task_count)},"version":{int(version)}'


def encode_control_message(message: EndOfStreamMessage | WatermarkMessage) -> bytes:
    """The type byte and JSON body of a control message."""
    if type(message) is EndOfStreamMessage:
        body = _encode_header(message.task_name, message.task_count, message.version) + "}"
        return _END_OF_STREAM_PREFIX + body.encode("utf-8")
    if type(message) is WatermarkMessage:
        if not _is_int(message.timestamp):
            raise ControlMessageError(f"watermark timestamp must be an int (ms), got {message.timestamp!r}")
        body = _encode_header(message.task_name, message.task_count, message.version)
        return _WATERMARK_PREFIX + f'{body},"timestamp":{message.timestamp}}}'.encode()
    raise ControlMessageError(f"not a control message: {type(message).__name__}")


def _decode_control(kind: int, body: bytes) -> EndOfStreamMessage | WatermarkMessage:
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
    task_count = fields.get("taskCount")
    if not _is_int(task_count) or task_count < 0:
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
    """Wraps the user serde of an intermediate stream so control messages travel in-band.

    ``to_bytes`` takes a user object, an EndOfStreamMessage or a WatermarkMessage;
    ``from_bytes`` gives back the user object (as the user serde returns it) or the control
    message. ``user_serde`` None means user messages are bytes already.
    Errors: ``ControlMessageError`` for anything wrong with the framing or a control body;
    a user body's decoding errors are the user serde's own (usually ``SerdeError``).
    """

    __slots__ = ("user_serde", "_user_to_bytes", "_user_from_bytes")

    def __init__(self, user_serde: Serde | None = None) -> None:
        self.user_serde = user_serde
        self._user_to_bytes = user_serde.to_bytes if user_serde is not None else None
        self._user_from_bytes = user_serde.from_bytes if user_serde is not None else bytes

    def to_bytes(self, obj: Any) -> bytes:
        cls = type(obj)
        if cls is EndOfStreamMessage or cls is WatermarkMessage:
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
                "empty intermediate stream message: expected a type byte (0 user, 1 watermark, 2 end-of-stream)"
            )
        kind = data[0]
        if kind == USER_MESSAGE:
            return self._user_from_bytes(data[1:])
        if kind == WATERMARK or kind == END_OF_STREAM:
            return _decode_control(kind, bytes(data[1:]))
        raise ControlMessageError(
            f"unknown intermediate stream message type {kind} (expected 0 user, 1 watermark, 2 end-of-stream)"
        )


def deserialize_intermediate_message(serde: IntermediateMessageSerde, envelope: Any) -> Any:
    """Decode ``envelope.message`` (an IncomingMessageEnvelope's raw bytes) with ``serde``;
    a ControlMessageError is re-raised naming the envelope's stream, partition and offset."""
    try:
        return serde.from_bytes(envelope.message)
    except ControlMessageError as exc:
        raise exc.at_envelope(envelope) from None
