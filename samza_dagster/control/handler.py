"""The consumer side of in-band control messages (Samza design), plugged into a TaskInstance
by the operator runtime through its hooks (``set_stream_decoder`` / ``install_control_handling``).

* :class:`IntermediateStreamDecoder` reads every message of an intermediate stream through
  :class:`~samza_dagster.control.serde.IntermediateMessageSerde`: a user message becomes
  ``(key, value)`` (the operator runtime passes ``KV``); a control message is handed to the handler.
* :class:`ControlMessageHandler` reconciles them per intermediate partition with
  :class:`EndOfStreamStates` / :class:`WatermarkStates` over the producer task count, which
  comes from the job model and the plan (Samza 1.8's messages carry none). A stream whose
  count the caller did not know takes it from an old-form message's ``taskCount`` (the design
  documents' form) or from the checkpoint; a Samza 1.8 message on such a stream is an error
  naming it. A reconciled end-of-stream returns the partition's end-of-stream envelope (the
  task instance marks the partition ended); a reconciled watermark is passed to ``on_watermark``.
* Samza 1.8's drain message is refused (:class:`UnsupportedControlMessageError`, naming the
  stream, partition and offset): the engine does not implement drain (docs/decisions.md).
* ``snapshot()`` / ``restore()`` carry the bookkeeping through checkpoints, so a restarted task
  neither waits for an end-of-stream it already counted nor moves a watermark back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from samza_dagster.control.end_of_stream import EndOfStreamStates
from samza_dagster.control.errors import ControlStateError, UnsupportedControlMessageError
from samza_dagster.control.messages import DrainMessage, EndOfStreamMessage, WatermarkMessage
from samza_dagster.control.serde import IntermediateMessageSerde
from samza_dagster.control.watermark import WatermarkStates
from samza_dagster.model import IncomingMessageEnvelope, SystemStream, SystemStreamPartition
from samza_dagster.serde.serdes import Serde


class IntermediateStreamDecoder:
    """TaskInstance decoder for an intermediate stream (see the TaskInstance docstring)."""

    __slots__ = ("key_from_bytes", "serde", "make_kv")

    def __init__(
        self,
        key_serde: Serde | None,
        user_serde: Serde | None,
        make_kv: Callable[[Any, Any], Any] = lambda k, v: (k, v),
    ) -> None:
        # make_kv: the high-level API's KV (passed in: control sits below the application package)
        self.key_from_bytes = key_serde.from_bytes if key_serde is not None else None
        self.serde = IntermediateMessageSerde(user_serde)
        self.make_kv = make_kv

    def decode(self, envelope: IncomingMessageEnvelope) -> bool:
        message = self.serde.from_bytes(envelope.message)
        cls = type(message)
        if cls is EndOfStreamMessage or cls is WatermarkMessage or cls is DrainMessage:
            envelope.message = message
            return False
        key = envelope.key
        if key is not None and self.key_from_bytes is not None:
            key = self.key_from_bytes(key)
            envelope.key = key
        envelope.message = self.make_kv(key, message)
        return True


class ControlMessageHandler:
    def __init__(
        self,
        ssps: Iterable[SystemStreamPartition],
        producer_task_counts: Mapping[SystemStream, int] | None,
        on_watermark: Callable[[SystemStreamPartition, int], None],
    ) -> None:
        """``ssps``: the task's partitions of intermediate streams. ``producer_task_counts``:
        known counts (a stream missing from it learns its count from its first message)."""
        self._ssps: dict[SystemStream, list[SystemStreamPartition]] = {}
        for ssp in ssps:
            self._ssps.setdefault(ssp.system_stream, []).append(ssp)
        self._counts = dict(producer_task_counts or {})
        self._eos: dict[SystemStream, EndOfStreamStates] = {}
        self._wm: dict[SystemStream, WatermarkStates] = {}
        self.on_watermark = on_watermark
        for stream, count in self._counts.items():
            if stream in self._ssps:
                self._create(stream, count)

    def _create(self, stream: SystemStream, count: int) -> None:
        self._counts[stream] = count
        self._eos[stream] = EndOfStreamStates(self._ssps[stream], {stream: count})
        self._wm[stream] = WatermarkStates(self._ssps[stream], {stream: count})

    def _states(self, envelope: IncomingMessageEnvelope) -> tuple[EndOfStreamStates, WatermarkStates]:
        stream = envelope.ssp.system_stream
        eos = self._eos.get(stream)
        if eos is None:
            task_count = envelope.message.task_count
            if task_count is None:
                ssp = envelope.ssp
                raise ControlStateError(
                    f"control message from producer task {envelope.message.task_name!r} on stream "
                    f"{ssp.system}.{ssp.stream}, partition {ssp.partition}, offset {envelope.offset}: the number of "
                    f"tasks producing to the stream is not known (Samza 1.8's control messages do not carry it, and "
                    f"the job model and plan did not give it)"
                )
            self._create(stream, task_count)
            eos = self._eos[stream]
        return eos, self._wm[stream]

    def __call__(self, envelope: IncomingMessageEnvelope) -> IncomingMessageEnvelope | None:
        message = envelope.message
        ssp = envelope.ssp
        if type(message) is DrainMessage:
            raise UnsupportedControlMessageError(
                f"Samza drain message (run id {message.run_id!r}, producer task {message.task_name!r}) on stream "
                f"{ssp.system}.{ssp.stream}, partition {ssp.partition}, offset {envelope.offset}: this engine does "
                f"not implement Samza's drain; stop the upstream job without draining, or end its input instead"
            )
        eos, wm = self._states(envelope)
        if type(message) is EndOfStreamMessage:
            if eos.update(message, ssp):
                return IncomingMessageEnvelope.end_of_stream(ssp)
            return None
        if wm.update(message, ssp):
            self.on_watermark(ssp, wm.get_watermark_per_ssp(ssp))
        return None

    # -- checkpoints -------------------------------------------------------------------------
    def snapshot(self) -> tuple[dict[str, Any], dict[str, Any]]:
        eos: dict[str, Any] = {}
        wm: dict[str, Any] = {}
        for eos_states in self._eos.values():
            eos.update(eos_states.to_dict())
        for wm_states in self._wm.values():
            wm.update(wm_states.to_dict())
        return eos, wm

    def restore(
        self, eos: Mapping[str, Any] | None, watermarks: Mapping[str, Any] | None
    ) -> tuple[list[SystemStreamPartition], list[tuple[SystemStreamPartition, int]]]:
        """Load checkpointed bookkeeping; returns the partitions already ended and the
        (partition, watermark) pairs already reconciled, for the task to re-apply."""
        by_id = {f"{s.system}.{s.stream}": s for s in self._ssps}
        for data in (eos or {}, watermarks or {}):
            for sid, entry in data.items():
                stream = by_id.get(sid)
                if stream is not None and stream not in self._eos and isinstance(entry, Mapping):
                    total = entry.get("totalTasks")
                    if isinstance(total, int) and total > 0:
                        self._create(stream, total)
        for stream in self._eos:
            self._eos[stream].restore({k: v for k, v in (eos or {}).items() if by_id.get(k) == stream})
            self._wm[stream].restore({k: v for k, v in (watermarks or {}).items() if by_id.get(k) == stream})
        ended = [
            ssp
            for stream, states in self._eos.items()
            for ssp in self._ssps[stream]
            if states.is_end_of_stream_per_ssp(ssp)
        ]
        marks = [
            (ssp, states.get_watermark_per_ssp(ssp))
            for stream, states in self._wm.items()
            for ssp in self._ssps[stream]
            if states.get_watermark_per_ssp(ssp) >= 0
        ]
        return ended, marks
