"""TimeAlignedChooser: keep input streams aligned by event time (the third use case of Samza's MessageChooser design, SAMZA-2).

Among the envelopes it holds (one per partition at most), the one with the smallest
``event_time`` goes first; equal times go in arrival order. A join that buffers one stream
while waiting for the other then needs a buffer only as long as the streams' skew.

Decisions on the open questions (SAMZA-67), and why:

* **Idle streams are waited for briefly, then not at all** (``idle_timeout_ms``, default 0).
  The chooser sees only what is available; a partition with no envelope in the chooser is either
  idle (at head) or simply not polled again yet, and it cannot tell which. When the oldest held
  envelope is more than ``max_skew_ms`` newer than the last event time chosen from such an
  absent partition (or the partition has delivered nothing yet), ``choose`` returns None for up
  to ``idle_timeout_ms`` of wall-clock time, giving its next envelope the chance to arrive
  (SystemConsumers wakes the run loop when it does). After that the partition is treated as idle
  and never delays anything until it delivers again. With 0 the chooser never waits: a partition
  whose buffer runs dry for a moment lets newer envelopes through. An idle stream's late message
  is chosen as soon as it arrives, ahead of anything newer.
* **A stream far behind is caught up first, exclusively.** Choosing the oldest event time
  means a stream replaying last week runs alone until it reaches the others. That is what
  alignment is for (the join buffer stays small), and it always ends: the stream behind drains
  its finite backlog faster than real time, while the others' messages wait in their systems
  (SystemConsumers' bounded buffers stop polling them). It cannot starve a stream forever.
* **``max_skew_ms`` — tolerated disorder, for speed.** After choosing from partition X the
  chooser keeps choosing X's next envelope directly (no heap work) while its event time is at
  most ``max_skew_ms`` past the oldest other envelope held. The chosen sequence is therefore
  non-decreasing within ``max_skew_ms``: no envelope is chosen while another held envelope is
  more than ``max_skew_ms`` older. ``max_skew_ms=0`` (the default) is strict.
* **Envelopes with no event time** (``event_time is None``, end-of-stream included): with no
  ``wrapped`` chooser they take the event time of the last envelope chosen ("now" in stream
  time; 0 before any), so they neither jump ahead of older data nor wait behind newer data.
  With a ``wrapped`` chooser (e.g. RoundRobinChooser) they go to it instead, and ``choose``
  alternates one-for-one between the time-aligned envelopes and the wrapped chooser's picks
  whenever both have one, so neither kind can starve the other.
"""

from __future__ import annotations

import heapq
import time
from itertools import count
from typing import Any

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.model import IncomingMessageEnvelope, SystemStreamPartition
from samza_dagster.system.chooser.base import MessageChooser, MessageChooserFactory, check_chooser
from samza_dagster.system.chooser.errors import ChooserError

MAX_SKEW_KEY = keys.TASK_CHOOSER_MAX_SKEW_MS.name
IDLE_TIMEOUT_KEY = keys.TASK_CHOOSER_IDLE_TIMEOUT_MS.name
_MISSING: Any = object()


class TimeAlignedChooser(MessageChooser):
    __slots__ = (
        "_wrapped",
        "_untimed",
        "_max_skew_ms",
        "_heap",
        "_seq",
        "_stream_time",
        "_affinity",
        "_held",
        "_untimed_turn",
        "_idle_s",
        "_absent",
        "_waiting_since",
    )

    def __init__(self, wrapped: MessageChooser | None = None, max_skew_ms: int = 0, idle_timeout_ms: int = 0) -> None:
        if wrapped is not None:
            check_chooser(wrapped, "TimeAlignedChooser's wrapped chooser")
        if not isinstance(max_skew_ms, int) or max_skew_ms < 0:
            raise ChooserError(f"max_skew_ms must be a non-negative integer, got {max_skew_ms!r}")
        if not isinstance(idle_timeout_ms, int) or idle_timeout_ms < 0:
            raise ChooserError(f"idle_timeout_ms must be a non-negative integer, got {idle_timeout_ms!r}")
        self._idle_s = idle_timeout_ms / 1000.0
        #: Registered partitions with no envelope here → event time last chosen from them (None: none yet).
        self._absent: dict[SystemStreamPartition, int | None] = {}
        self._waiting_since: float | None = None
        self._wrapped = wrapped
        self._max_skew_ms = max_skew_ms
        self._heap: list[tuple[int, int, IncomingMessageEnvelope]] = []
        self._seq = count()
        self._stream_time = 0
        #: The partition chosen last; its next envelope may skip the heap (see max_skew_ms).
        self._affinity: SystemStreamPartition | None = None
        self._held: IncomingMessageEnvelope | None = None
        #: Envelopes held by ``wrapped`` (untimed ones), and whose turn it is when both kinds wait.
        self._untimed = 0
        self._untimed_turn = False

    def register(self, ssp: SystemStreamPartition, offset: str) -> None:
        if self._idle_s:
            self._absent[ssp] = None
        if self._wrapped is not None:
            self._wrapped.register(ssp, offset)

    def start(self) -> None:
        if self._wrapped is not None:
            self._wrapped.start()

    def stop(self) -> None:
        if self._wrapped is not None:
            self._wrapped.stop()

    def update(self, envelope: IncomingMessageEnvelope) -> None:
        if self._absent and self._absent.pop(envelope.ssp, _MISSING) is not _MISSING and envelope.ssp != self._affinity:
            # A partition we may have given up on delivered again: next time it is absent and
            # behind, wait for it afresh. (The partition just chosen is refilled all the time.)
            self._waiting_since = None
        if envelope.event_time is None and self._wrapped is not None:
            self._untimed += 1
            self._wrapped.update(envelope)
            return
        if envelope.ssp == self._affinity and self._held is None:
            self._held = envelope
            return
        t = envelope.event_time
        heapq.heappush(self._heap, (self._stream_time if t is None else t, next(self._seq), envelope))

    def _key(self, envelope: IncomingMessageEnvelope) -> int:
        t = envelope.event_time
        return self._stream_time if t is None else t

    def choose(self) -> IncomingMessageEnvelope | None:
        if self._untimed:
            if self._untimed_turn or (self._held is None and not self._heap):
                envelope = self._wrapped.choose()  # type: ignore[union-attr]
                if envelope is not None:
                    self._untimed -= 1
                    self._untimed_turn = False
                    return envelope
            self._untimed_turn = True
        held = self._held
        heap = self._heap
        if held is not None:
            t = self._key(held)
            if heap and t > heap[0][0] + self._max_skew_ms:
                # Too far ahead of the oldest held envelope: back into the heap it goes.
                heapq.heappush(heap, (t, next(self._seq), held))
                self._held = held = None
        if held is None:
            if not heap:
                self._affinity = None
                return None
            t = heap[0][0]
        if self._absent and self._should_wait(t):
            return None
        if held is not None:
            self._held = None
            envelope = held
        else:
            envelope = heapq.heappop(heap)[2]
        event_time = envelope.event_time
        if event_time is not None and event_time > self._stream_time:
            self._stream_time = event_time
        self._affinity = envelope.ssp
        if self._idle_s and not envelope.is_end_of_stream:
            self._absent[envelope.ssp] = self._key(envelope) if event_time is None else event_time
        return envelope

    def _should_wait(self, t: int) -> bool:
        """True while an absent partition may still deliver something older than ``t`` (by more
        than the skew) and we have not waited ``idle_timeout_ms`` for it yet."""
        floor = t - self._max_skew_ms
        if not any(last is None or last < floor for last in self._absent.values()):
            self._waiting_since = None
            return False
        now = time.monotonic()
        if self._waiting_since is None:
            self._waiting_since = now
        return now - self._waiting_since < self._idle_s

    def __len__(self) -> int:
        return len(self._heap) + (self._held is not None) + self._untimed


class TimeAlignedChooserFactory(MessageChooserFactory):
    """``task.chooser.class=samza_dagster.system.chooser:TimeAlignedChooserFactory``;
    ``task.chooser.max.skew.ms`` (default 0) sets ``max_skew_ms``, ``task.chooser.idle.timeout.ms``
    (default 100) ``idle_timeout_ms``."""

    def get_chooser(self, config: Config, metrics: dict[str, Any] | None = None) -> MessageChooser:
        skew = config.get_int(MAX_SKEW_KEY, 0) or 0
        if skew < 0:
            raise ConfigError(f"config key {MAX_SKEW_KEY!r} must be >= 0, got {skew}", key=MAX_SKEW_KEY)
        idle = config.get_int(IDLE_TIMEOUT_KEY, 100)
        if idle is None or idle < 0:
            raise ConfigError(f"config key {IDLE_TIMEOUT_KEY!r} must be >= 0, got {idle}", key=IDLE_TIMEOUT_KEY)
        return TimeAlignedChooser(max_skew_ms=skew, idle_timeout_ms=idle)
