"""Input watermarks from message event times (Samza's control-message design's "emit watermarks based on the
message timestamp").

Per input partition the watermark is the highest event time seen minus the allowed lateness
(``task.watermark.allowed.lateness.ms``, default 0). ``observe`` is the per-message call (two
comparisons); the task publishes the watermarks from its timer (``window()``, every
``task.window.ms``, which the operator runtime defaults to ``task.watermark.interval.ms``), so
watermarks move at most once per interval, never per message. A partition that has ended no
longer holds the watermark back.
"""

from __future__ import annotations

from collections.abc import Iterable

from samza_dagster.control.watermark import WATERMARK_NOT_EXIST
from samza_dagster.model import SystemStreamPartition


class InputWatermarks:
    __slots__ = ("lateness", "max_event_time", "published")

    def __init__(self, ssps: Iterable[SystemStreamPartition], allowed_lateness_ms: int = 0) -> None:
        self.lateness = int(allowed_lateness_ms)
        self.max_event_time: dict[SystemStreamPartition, int] = {ssp: WATERMARK_NOT_EXIST for ssp in ssps}
        self.published: dict[SystemStreamPartition, int] = {ssp: WATERMARK_NOT_EXIST for ssp in ssps}

    def observe(self, ssp: SystemStreamPartition, event_time: int | None) -> None:
        if event_time is not None and event_time > self.max_event_time[ssp]:
            self.max_event_time[ssp] = event_time

    def advanced(self) -> list[tuple[SystemStreamPartition, int]]:
        """Partitions whose watermark moved since the last call, with the new value."""
        out = []
        lateness = self.lateness
        for ssp, seen in self.max_event_time.items():
            if seen == WATERMARK_NOT_EXIST:
                continue
            wm = seen - lateness
            if wm > self.published[ssp]:
                self.published[ssp] = wm
                out.append((ssp, wm))
        return out
