"""AdClickJoinTask: views × clicks within a window of event time (``ad_ctr.window.ms``).

The join is exact whatever order the chooser picks (the outputs of a time-aligned and a
round-robin run are the same set); only what must be held differs:

* a view waits for its click until the clicks of this partition have passed ``view.ts + window``
  (clicks arrive in event-time order per partition, so none can still come) → (ad, click=false);
* a click whose view has not arrived waits until the views have passed ``click.ts`` (a view is
  never later than its click) — then it is an orphan and counted, not silently lost.

At end of stream the views still held get click=false, and the task sends its statistics
(peak held views/clicks/total) to ``ad_ctr.stats.stream`` — the evidence the demo compares.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.task import EndOfStreamListenerTask, InitableTask, StreamTask

VIEWS, CLICKS = "ad_views", "ad_clicks"


class AdClickJoinTask(StreamTask, InitableTask, EndOfStreamListenerTask):
    def init(self, context: Any) -> None:
        config = context.config
        self.task_name = context.task_name
        self.window_ms = config.get_int("ad_ctr.window.ms", 300_000)
        self.output = SystemStream("log", config.get_str("ad_ctr.output.stream", "ad_click_through"))
        self.stats = SystemStream("log", config.get_str("ad_ctr.stats.stream", "ad_ctr_stats"))
        self.views: dict[str, dict] = {}  # view id → view, while it waits for a click
        self.view_order: deque[tuple[int, str]] = deque()  # (ts, view id), in event-time order
        self.clicks: dict[str, dict] = {}  # view id → click that came before its view
        self.click_order: deque[tuple[int, str]] = deque()
        self.views_time = self.clicks_time = -1
        self.peak_views = self.peak_clicks = self.peak_total = 0
        self.orphans = self.joined = self.expired = 0

    def process(self, envelope: Any, collector: Any, coordinator: Any) -> None:
        m = envelope.message
        ts = m["ts"]
        if envelope.ssp.stream == VIEWS:
            self.views_time = ts
            vid = m["view_id"]
            if self.clicks.pop(vid, None) is not None:
                self._emit(collector, m, True)
            else:
                self.views[vid] = m
                self.view_order.append((ts, vid))
                self._expire(collector)  # clicks already far ahead: no click can still come
            self._drop_orphans()
        else:
            self.clicks_time = ts
            vid = m["view_id"]
            view = self.views.pop(vid, None)
            if view is not None:
                self._emit(collector, view, True)
            else:
                self.clicks[vid] = m
                self.click_order.append((ts, vid))
            self._expire(collector)
        held_v, held_c = len(self.views), len(self.clicks)
        if held_v > self.peak_views:
            self.peak_views = held_v
        if held_c > self.peak_clicks:
            self.peak_clicks = held_c
        if held_v + held_c > self.peak_total:
            self.peak_total = held_v + held_c

    def _emit(self, collector: Any, view: dict, click: bool) -> None:
        if click:
            self.joined += 1
        collector.send(
            OutgoingMessageEnvelope(
                self.output, {"ad_id": view["ad_id"], "view_id": view["view_id"], "click": click}, key=view["view_id"]
            )
        )

    def _expire(self, collector: Any) -> None:
        horizon = self.clicks_time - self.window_ms
        order, views = self.view_order, self.views
        while order and order[0][0] < horizon:
            _, vid = order.popleft()
            view = views.pop(vid, None)
            if view is not None:  # else it was clicked already
                self.expired += 1
                self._emit(collector, view, False)

    def _drop_orphans(self) -> None:
        order, clicks = self.click_order, self.clicks
        while order and order[0][0] < self.views_time:
            _, vid = order.popleft()
            if clicks.pop(vid, None) is not None:
                self.orphans += 1

    def on_end_of_stream(self, collector: Any, coordinator: Any) -> None:
        for _, vid in self.view_order:
            view = self.views.pop(vid, None)
            if view is not None:
                self.expired += 1
                self._emit(collector, view, False)
        self.orphans += len(self.clicks)
        collector.send(
            OutgoingMessageEnvelope(
                self.stats,
                {
                    "task": self.task_name,
                    "peak_views": self.peak_views,
                    "peak_clicks": self.peak_clicks,
                    "peak_total": self.peak_total,
                    "joined": self.joined,
                    "expired": self.expired,
                    "orphans": self.orphans,
                },
                key=self.task_name,
            )
        )
