"""The producer's timeouts derived from each other (system/kafka/timeouts.py): a documented value
of ``transaction.timeout.ms`` or ``delivery.timeout.ms`` alone works on both clients, and two that
cannot fit are a ConfigError naming both keys before any client is made."""

from __future__ import annotations

import uuid

import pytest

from samza_dagster.config import Config, ConfigError
from samza_dagster.container.container import SamzaContainer
from samza_dagster.coordinator.stream.writer_tool import run_coordinator_stream_writer
from samza_dagster.system.kafka.timeouts import producer_timeouts
from tests.apps.harness import create_stream, job_model, produce

P = "systems.kafka.producer."


def _timeouts(**settings: str):
    return producer_timeouts("kafka", Config({P + k.replace("_", "."): v for k, v in settings.items()}), 5)


def test_a_short_transaction_timeout_lowers_the_delivery_and_request_timeouts_to_fit():
    assert _timeouts(transaction_timeout_ms="90000").delivery_timeout_ms == 90_000
    derived = _timeouts(transaction_timeout_ms="20000")
    assert (derived.delivery_timeout_ms, derived.request_timeout_ms) == (20_000, 19_995)
    assert _timeouts(delivery_timeout_ms="20000").request_timeout_ms == 19_995
    assert _timeouts() == _timeouts(transaction_timeout_ms="600000") == _timeouts(delivery_timeout_ms="120000")


def test_timeouts_that_cannot_fit_name_both_keys():
    with pytest.raises(ConfigError) as err:
        _timeouts(transaction_timeout_ms="30000", delivery_timeout_ms="60000")
    assert err.value.key == P + "delivery.timeout.ms"
    assert P + "transaction.timeout.ms" in str(err.value)
    with pytest.raises(ConfigError, match="request.timeout.ms") as err:
        _timeouts(message_timeout_ms="20000", request_timeout_ms="30000")
    assert err.value.key == P + "message.timeout.ms"


@pytest.mark.kafka
def test_an_exactly_once_job_and_the_coordinator_stream_writer_run_with_short_producer_timeouts(
    kafka_config, kafka_topic_prefix
):
    prefix = kafka_topic_prefix
    for settings in (
        {"transaction.timeout.ms": "30000"},
        {"transaction.timeout.ms": "30000", "delivery.timeout.ms": "20000"},
    ):
        config = kafka_config.with_overrides(
            {
                "job.name": f"timeouts-{uuid.uuid4().hex[:8]}",
                "job.default.system": "kafka",
                "job.processing.guarantee": "exactly-once",
                "task.inputs": f"kafka.{prefix}-in",
                "task.class": "tests.apps.tasks:CopyTask",
                "test.output.system": "kafka",
                "test.output.stream": f"{prefix}-out",
                "systems.kafka.samza.msg.serde": "string",
                f"systems.kafka.streams.{prefix}-in.samza.bounded": "true",
                **{P + k: v for k, v in settings.items()},
            }
        )
        wrote = run_coordinator_stream_writer(config, "set-config", "app.setting", "1", force_reset=False)
        assert "app.setting=1" in wrote.line
        if "delivery.timeout.ms" not in settings:
            create_stream(config, "kafka", f"{prefix}-in", 1)
            create_stream(config, "kafka", f"{prefix}-out", 1)
            produce(config, "kafka", f"{prefix}-in", [(0, None, f"m{i}".encode()) for i in range(20)])
        summary = SamzaContainer("0", job_model(config)).run()
        assert summary.status == "completed" and summary.messages_processed == 20, summary.one_line()
