"""The control messages carried in-band on intermediate streams, as Apache Samza 1.8's
``org.apache.samza.system.ControlMessage`` subclasses (``EndOfStreamMessage``,
``WatermarkMessage``, ``DrainMessage``).

An upstream task sends one of each kind to every partition of every intermediate stream
it produces to; the downstream task instance reconciles them over all producer tasks
(see ``end_of_stream.py`` and ``watermark.py``). ``task_name`` is None for a message a
system emits itself on an input partition (there is no producer task to count).

Samza 1.8's messages carry no producer task count: the consumer knows it from the job model
and the plan (``operators/prepare.py``), as Samza 1.x does. ``task_count`` is what a message
in the design documents' (Samza 0.13's) form said, still read from streams written before;
it is None for every message in Samza 1.8's form and is never written.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The control-message versions this code reads and writes.
CONTROL_MESSAGE_VERSION = 1
SUPPORTED_VERSIONS = frozenset({CONTROL_MESSAGE_VERSION})


@dataclass(frozen=True, slots=True)
class EndOfStreamMessage:
    """The producer task ``task_name`` has finished writing to this partition."""

    task_name: str | None
    #: the producer task count an old-form message carried; None in Samza 1.8's form
    task_count: int | None = None
    version: int = CONTROL_MESSAGE_VERSION


@dataclass(frozen=True, slots=True)
class WatermarkMessage:
    """The producer task ``task_name`` has emitted everything with an event time (ms) up to
    ``timestamp``."""

    timestamp: int
    task_name: str | None
    #: the producer task count an old-form message carried; None in Samza 1.8's form
    task_count: int | None = None
    version: int = CONTROL_MESSAGE_VERSION


@dataclass(frozen=True, slots=True)
class DrainMessage:
    """Samza 1.8's drain (type byte 3): the producer task ``task_name`` of run ``run_id``
    (Samza's ``app.run.id``) is draining. Read and written byte-exact; the engine does not
    implement drain, so a task that receives one stops with an error naming where it came
    from (``handler.py``; docs/decisions.md says why)."""

    task_name: str | None
    run_id: str | None
    version: int = CONTROL_MESSAGE_VERSION


ControlMessage = EndOfStreamMessage | WatermarkMessage | DrainMessage
