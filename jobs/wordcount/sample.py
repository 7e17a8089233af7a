"""Sample input for wordcount: a few sentences written to ``sentences`` on the log."""

from __future__ import annotations

from collections.abc import Iterable

from samza_dagster.config import Config
from samza_dagster.serde import StringSerde
from samza_dagster.system import OutgoingMessageEnvelope, StreamSpec, SystemStream, system_factory

SENTENCES = (
    "The quick brown fox jumps over the lazy dog",
    "A stream is a table in motion",
    "Samza reads streams, Dagster orchestrates, Spark scales",
    "The log is durable and the offsets are dense",
)


#: wordcount's batch input: the reprocessing backfill re-sends past sentences into it
REPLAY_STREAM = "sentences_replay"


def load_sentences(
    config: Config,
    sentences: Iterable[str] = SENTENCES,
    *,
    system: str = "log",
    stream: str = "sentences",
    partitions: int = 2,
) -> int:
    """Create ``stream`` if missing and append ``sentences`` round-robin over its partitions;
    returns how many were written. Loading wordcount's ``sentences`` also creates its (empty)
    batch input ``sentences_replay``, so the job's inputs all exist."""
    factory = system_factory(config, system)
    admin = factory.get_admin(system, config)
    admin.create_stream(StreamSpec(stream, stream, system, partitions))
    if stream == "sentences":
        admin.create_stream(StreamSpec(REPLAY_STREAM, REPLAY_STREAM, system, partitions))
    producer = factory.get_producer(system, config)
    producer.register("wordcount-sample")
    producer.start()
    serde = StringSerde()
    target = SystemStream(system, stream)
    n = 0
    try:
        for n, sentence in enumerate(sentences, start=1):
            producer.send(
                "wordcount-sample", OutgoingMessageEnvelope(target, serde.to_bytes(sentence), partition=n % partitions)
            )
        producer.flush("wordcount-sample")
    finally:
        producer.stop()
    return n


def word_count(sentences: Iterable[str] = SENTENCES) -> int:
    return sum(1 for s in sentences for w in s.split() if w.strip(".,;:!?\"'()"))
