"""Errors of the control-message layer.

``ControlMessageError`` is a ``SerdeError``: to the task instance a control message that
cannot be decoded is a deserialization failure like any other, so the same handling
(fail with the message's coordinates, or drop and count it when
``task.drop.deserialization.errors`` says so) applies without a special case.
"""

from __future__ import annotations

from typing import Any

from samza_dagster.errors import SamzaError
from samza_dagster.serde.serdes import SerdeError


class ControlMessageError(SerdeError):
    """Bytes that are not a valid intermediate-stream message: empty, an unknown type byte,
    an unsupported control-message version, or a malformed JSON body.

    ``stream``, ``partition`` and ``offset`` are filled in (and named in the message) once
    the error is tied to the envelope it came from (see :meth:`at_envelope`).
    """

    def __init__(
        self,
        message: str,
        *,
        stream: str | None = None,
        partition: int | None = None,
        offset: str | None = None,
    ) -> None:
        self.detail = message
        self.stream = stream
        self.partition = partition
        self.offset = offset
        if stream is not None:
            message = f"{message} (stream {stream!r}, partition {partition}, offset {offset})"
        super().__init__(message)

    def at_envelope(self, envelope: Any) -> ControlMessageError:
        """The same error, naming the stream, partition and offset of ``envelope``
        (an IncomingMessageEnvelope)."""
        ssp = envelope.ssp
        return ControlMessageError(
            self.detail,
            stream=f"{ssp.system}.{ssp.stream}",
            partition=ssp.partition,
            offset=envelope.offset,
        )


class ControlStateError(SamzaError, ValueError):
    """End-of-stream / watermark bookkeeping was given something inconsistent: a control
    message for a partition the task does not own, a producer task count that disagrees
    with the expected one, or a malformed checkpoint snapshot."""


class UnsupportedControlMessageError(SamzaError):
    """A well-formed Samza control message the engine does not implement (Samza 1.8's drain).

    Not a deserialization error: ``task.drop.deserialization.errors`` must not turn a drain
    into a silently skipped message, so the task stops with a line naming the stream,
    partition and offset."""
