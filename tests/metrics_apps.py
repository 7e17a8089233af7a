"""A task for the metrics tests that registers metrics of its own through
``context.metrics_registry``; module-level so Spark's Python workers import it too."""

from __future__ import annotations

from samza_dagster.task import InitableTask, StreamTask

GROUP = "tests.metrics_apps.CountingTask"


class CountingTask(StreamTask, InitableTask):
    """Counts every message in the counter ``user-messages`` and keeps the last message's
    length in the gauge ``last-length`` (group ``GROUP``); sends nothing."""

    def init(self, context):
        registry = context.metrics_registry
        self.messages = registry.new_counter(GROUP, "user-messages")
        self.last_length = registry.new_gauge(GROUP, "last-length", 0)
        self.sizes = registry.new_timer(GROUP, "message-bytes")

    def process(self, envelope, collector, coordinator):
        self.messages.inc()
        size = len(envelope.message or b"")
        self.last_length.set(size)
        self.sizes.update(size)
