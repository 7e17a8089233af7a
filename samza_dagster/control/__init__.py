"""Control messages on intermediate streams (Samza 1.8's ``ControlMessage`` classes and
``IntermediateMessageSerde``): end-of-stream, watermark and drain messages, the intermediate-message serde that carries them in-band with user messages,
and the per-task bookkeeping that reconciles them over all upstream producer tasks."""

from samza_dagster.control.end_of_stream import EndOfStreamStates
from samza_dagster.control.errors import ControlMessageError, ControlStateError, UnsupportedControlMessageError
from samza_dagster.control.messages import (
    CONTROL_MESSAGE_VERSION,
    SUPPORTED_VERSIONS,
    ControlMessage,
    DrainMessage,
    EndOfStreamMessage,
    WatermarkMessage,
)
from samza_dagster.control.serde import (
    DRAIN,
    END_OF_STREAM,
    USER_MESSAGE,
    WATERMARK,
    IntermediateMessageSerde,
    deserialize_intermediate_message,
    encode_control_message,
)
from samza_dagster.control.watermark import WATERMARK_NOT_EXIST, WatermarkStates

__all__ = [
    "CONTROL_MESSAGE_VERSION",
    "DRAIN",
    "END_OF_STREAM",
    "SUPPORTED_VERSIONS",
    "USER_MESSAGE",
    "WATERMARK",
    "WATERMARK_NOT_EXIST",
    "ControlMessage",
    "ControlMessageError",
    "ControlStateError",
    "DrainMessage",
    "EndOfStreamMessage",
    "EndOfStreamStates",
    "IntermediateMessageSerde",
    "UnsupportedControlMessageError",
    "WatermarkMessage",
    "WatermarkStates",
    "deserialize_intermediate_message",
    "encode_control_message",
]
