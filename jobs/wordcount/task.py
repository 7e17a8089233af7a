"""WordSplitTask: one message per word of each sentence, keyed by the lower-cased word."""

from __future__ import annotations

from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.task import InitableTask, StreamTask


class WordSplitTask(StreamTask, InitableTask):
    def init(self, context) -> None:  # type: ignore[no-untyped-def]
        config = context.config
        self.output = SystemStream(
            config.get_str("wordcount.output.system", "log"), config.get_str("wordcount.output.stream", "words")
        )

    def process(self, envelope, collector, coordinator) -> None:  # type: ignore[no-untyped-def]
        output = self.output
        for word in envelope.message.split():
            word = word.strip(".,;:!?\"'()").lower()
            if word:
                collector.send(OutgoingMessageEnvelope(output, word, key=word))
