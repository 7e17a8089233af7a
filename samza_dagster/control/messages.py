"""The two control messages carried in-band on intermediate streams (Samza design).

An upstream task sends one of each kind to every partition of every intermediate stream
it produces to; the downstream task instance reconciles them over all producer tasks
(see ``end_of_stream.py`` and ``watermark.py``). ``task_name`` is None for a message a
system emits itself on an input partition (there is no producer task to count).
"""

from __future__ import annotations

from dataclasses import dataclass

#: The control-message versions this code reads and writes.
CONTROL_MESSAGE_VERSION = 1
SUPPORTED_VERSIONS = frozenset({CONTROL_MESSAGE_VERSION})


@dataclass(frozen=True, slots=True)
class EndOfStreamMessage:
    """The producer task ``task_name`` (one of ``task_count``) has finished writing to
    this partition."""

    task_name: str | None
    task_count: int
    version: int = CONTROL_MESSAGE_VERSION


@dataclass(frozen=True, slots=True)
class WatermarkMessage:
    """The producer task ``task_name`` (one of ``task_count``) has emitted everything with
    an event time (ms) up to ``timestamp``."""

    timestamp: int
    task_name: str | None
    task_count: int
    version: int = CONTROL_MESSAGE_VERSION


ControlMessage = EndOfStreamMessage | WatermarkMessage
