"""The engine's side of the jobs shared with a Java Samza job (test_samza_job_on_kafka.py)."""

from __future__ import annotations

from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.task import InitableTask, StreamTask


class CountingCopyTask(StreamTask, InitableTask):
    """What ``SamzaCopyJob$CopyTask`` does with ``app.count.store``: counts each word in the store
    ``counts`` (string keys and counts, as the Java task keeps them) and sends ``word:count`` to
    ``kafka.<test.output.stream>``."""

    def init(self, context):
        self.store = context.get_store("counts")
        self.out = SystemStream("kafka", context.config.get_str("test.output.stream"))

    def process(self, envelope, collector, coordinator):
        word = envelope.message
        count = int(self.store.get(word) or 0) + 1
        self.store.put(word, str(count))
        collector.send(OutgoingMessageEnvelope(self.out, f"{word}:{count}", key=envelope.key))
