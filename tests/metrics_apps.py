"""A task for the metrics tests that registers metrics of its own through
``context.metrics_registry``; module-level so Spark's Python workers import it too."""

from __future__ import annotations

from samza_dagster.application import StreamApplication
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


class CountingMap:
    """A map function with Samza's ``init(context)`` (InitableFunction): counts what it maps in
    the task's registry, group ``GROUP``, counter ``mapped``."""

    def init(self, context):
        self.mapped = context.metrics_registry.new_counter(GROUP, "mapped")

    def __call__(self, message):
        self.mapped.inc()
        return message


class CountingApp(StreamApplication):
    """``in`` → CountingMap → ``out`` (JSON both ways)."""

    def describe(self, app):
        from samza_dagster.application import SystemDescriptor
        from samza_dagster.serde import JsonSerde

        log = SystemDescriptor("log")
        source = app.get_input_stream(log.input("in", serde=JsonSerde()))
        sink = app.get_output_stream(log.output("out", serde=JsonSerde()))
        source.map(CountingMap()).send_to(sink)


class StoreCountingTask(StreamTask, InitableTask):
    """Counts messages per key in the store ``counts`` (one get and one put per message)."""

    def init(self, context):
        self.store = context.get_store("counts")

    def process(self, envelope, collector, coordinator):
        key = envelope.key.decode()
        self.store.put(key, (self.store.get(key) or 0) + 1)
