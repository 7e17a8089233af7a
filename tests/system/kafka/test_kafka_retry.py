"""The Kafka system's retry of what a cluster answers "not yet" (system/kafka/retry.py), on its
own: which errors are asked again, for how long, and the wait for a topic this process created.
The same code against a real cluster whose leader dies is tests/reliability/test_reliability_kafka_failover.py."""

from __future__ import annotations

import logging

import pytest
from kafka.errors import (
    KafkaConnectionError,
    NotLeaderForPartitionError,
    TopicAuthorizationFailedError,
    UnknownBrokerIdError,
    UnknownTopicOrPartitionError,
)

from samza_dagster.config import Config
from samza_dagster.system.kafka import retry
from samza_dagster.system.kafka.errors import KafkaRetryWindowError


class Flaky:
    """Fails with each of ``errors`` in turn, then answers ``result``."""

    def __init__(self, errors: list[BaseException], result: object = "answer") -> None:
        self.errors = list(errors)
        self.result = result
        self.calls = 0

    def __call__(self) -> object:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return self.result


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch):
    monkeypatch.setattr(retry, "FIRST_BACKOFF_S", 0.001)
    monkeypatch.setattr(retry, "MAX_BACKOFF_S", 0.002)


def test_a_moved_leader_or_a_refused_connection_is_asked_again_with_one_warning(caplog):
    call = Flaky([KafkaConnectionError("refused"), NotLeaderForPartitionError(), UnknownTopicOrPartitionError()])
    with caplog.at_level(logging.INFO, logger=retry.__name__):
        assert retry.retrying("list offsets", call, retry.kafka_python_transient) == "answer"
    assert call.calls == 4
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "list offsets" in warnings[0].getMessage()
    assert "KafkaConnectionError" in warnings[0].getMessage()


def test_a_partition_without_a_leader_is_asked_again():
    """A whole cluster stopping: the metadata names leader -1 and kafka-python's admin, sending
    to it, raises UnknownBrokerIdError (not flagged retriable) — it failed a commit's offset lookup
    and the container with it, mid-outage."""
    call = Flaky([UnknownBrokerIdError(-1), UnknownBrokerIdError(-1)])
    assert retry.retrying("list earliest offsets", call, retry.kafka_python_transient) == "answer"
    assert call.calls == 3


def test_an_error_that_is_not_transient_is_raised_at_once():
    call = Flaky([TopicAuthorizationFailedError()])
    with pytest.raises(TopicAuthorizationFailedError):
        retry.retrying("describe", call, retry.kafka_python_transient)
    assert call.calls == 1


def test_a_transient_error_that_outlasts_the_window_is_one_line_naming_the_key(monkeypatch):
    monkeypatch.setattr(retry, "RETRY_WINDOW_S", 0.05)
    call = Flaky([KafkaConnectionError("refused\nby the broker")] * 10_000)
    with pytest.raises(KafkaRetryWindowError) as failed:
        retry.retrying("Kafka system 'k': list offsets of t[0]", call, retry.kafka_python_transient)
    assert 1 < call.calls < 10_000
    assert str(failed.value) == (
        "Kafka system 'k': list offsets of t[0]: no answer within the retry window of 0.05 s "
        "(systems.<system>.kafka.retry.window.ms): KafkaConnectionError: refused by the broker"
    )
    assert isinstance(failed.value.__cause__, KafkaConnectionError)


def test_the_window_is_the_systems_key():
    config = Config({"systems.k.kafka.retry.window.ms": "2500"})
    assert retry.retry_window_s("k", config) == 2.5
    assert retry.retry_window_s("other", config) == 60.0


def test_a_topic_created_a_moment_ago_is_waited_for_and_any_other_is_missing_at_once(monkeypatch):
    retry.note_created("just-made")
    answers = [{}, {"just-made": 0}, {"just-made": 3}]
    lookups: list[dict] = []

    def lookup() -> dict[str, int]:
        lookups.append(answers[min(len(lookups), len(answers) - 1)])
        return lookups[-1]

    assert retry.partition_counts_of_created("start", lookup, {"just-made"}) == {"just-made": 3}
    assert len(lookups) == 3

    never_made: list[dict] = []
    assert retry.partition_counts_of_created("start", lambda: never_made.append({}) or {}, {"elsewhere"}) == {}
    assert len(never_made) == 1  # not created here: missing now, not waited for

    # past the grace the topic is just missing (the caller reports StreamNotFoundError)
    monkeypatch.setattr(retry, "CREATED_GRACE_S", 0.0)
    assert not retry.recently_created("just-made")
