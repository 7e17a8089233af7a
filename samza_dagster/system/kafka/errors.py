"""Errors of the Kafka system."""

from __future__ import annotations

from samza_dagster.system.errors import SamzaSystemError, SystemUnavailableError, TransientSystemError


class KafkaProducerError(SamzaSystemError):
    """A send failed (the broker refused it or it timed out). Names topic and partition.

    Sticky: once a send failed, every later send and flush of that producer raises it, as in
    Samza's KafkaSystemProducer, so a job never commits past a lost message.
    """


class KafkaTransactionError(KafkaProducerError):
    """A transaction of the Kafka producer (``job.processing.guarantee=exactly-once``) could not
    be started, committed or aborted. Names the system and the transactional id."""


class KafkaProducerFencedError(KafkaTransactionError):
    """Another producer took over this producer's transactional id (a newer instance of the same
    container): this one may never write again, as in Kafka (``ProducerFencedException``)."""


class KafkaSendInterruptedError(KafkaProducerError, TransientSystemError):
    """A send the cluster never acknowledged while it was unavailable (timed out, or dropped from
    the client's queue when the cluster aborted the transaction): what follows the last commit is
    processed again from its checkpoint."""


class KafkaTransactionAbortedError(KafkaTransactionError, TransientSystemError):
    """The cluster aborted the open transaction (Kafka's abortable errors: an out-of-order sequence
    after a broker restarted, a transaction the coordinator timed out): its writes are discarded and
    the container starts again from its last checkpoint."""


class KafkaRetryWindowError(SystemUnavailableError):
    """A request the cluster kept answering "not yet" (no leader, brokers down) for the whole retry
    window (``systems.<s>.kafka.retry.window.ms``). Names the system, the request and its topics
    and partitions, the key and the last cause."""


class TopicNotYetKnownError(SamzaSystemError):
    """A topic this process created a moment ago is not known yet to the broker that was asked
    (metadata reaches each broker on its own time). Raised inside a retried lookup (retry.py) and
    asked again; after the grace, the topic is reported missing (StreamNotFoundError)."""


def unavailable(system: str, bootstrap: str, cause: BaseException, what: str) -> SystemUnavailableError:
    return SystemUnavailableError(f"Kafka system {system!r}: cannot reach the brokers at {bootstrap} ({what}): {cause}")
