"""Task classes the tests and the benchmarks share (``task.class=support.tasks:NoOpTask``);
the benchmarks may not reach into tests/, so these live here."""

from __future__ import annotations

import time

from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.task import BatchStreamTask, InitableTask, StreamTask


class NoOpTask(StreamTask):
    def process(self, envelope, collector, coordinator):
        pass


class NoOpBatchTask(BatchStreamTask):
    def process_batch(self, envelopes, collector, coordinator):
        pass


class WordCountTask(StreamTask, InitableTask):
    """Counts words in a ``counts`` store (its changelog restores it). Messages are strings."""

    def init(self, context):
        self.store = context.get_store("counts")

    def process(self, envelope, collector, coordinator):
        word = envelope.message
        self.store.put(word, (self.store.get(word) or 0) + 1)


class SleepTask(StreamTask):
    """Sleeps ``test.sleep.ms`` per message (blocking I/O stand-in)."""

    def init(self, context):
        self.sleep_s = (context.config.get_int("test.sleep.ms", 1) or 1) / 1000.0

    def process(self, envelope, collector, coordinator):
        time.sleep(self.sleep_s)


class ProfileLookupTask(StreamTask, InitableTask):
    """For each user id read, sends ``{"user", "profile"}`` to ``log.enriched`` with the user's
    entry in the side-input store ``profiles`` as the task sees it at that moment."""

    def init(self, context):
        self.profiles = context.get_store("profiles")
        config = context.config
        self.out = SystemStream(
            config.get_str("test.output.system", "log"), config.get_str("test.output.stream", "enriched")
        )

    def process(self, envelope, collector, coordinator):
        user = envelope.message
        collector.send(OutgoingMessageEnvelope(self.out, {"user": user, "profile": self.profiles.get(user)}, key=user))
