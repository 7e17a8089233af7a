"""The operator runtime on Kafka (Apache Kafka, support/kafka_broker.py): Samza's execution-planner design's Listing 2 and the bounded
two-stage count application, with inputs, outputs, intermediate streams, changelogs and
checkpoints all on Kafka (``job.default.system=kafka``), run through ``run_job``."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from samza_dagster.planner import plan_from_config
from samza_dagster.system.partitioner import partition_for_key
from support.hl_harness import bounded, create, produce, read_all, run, statuses

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(180)]


def kafka_app_config(kafka_config, prefix: str, app: str, streams: list[str], **extra: str):
    entries = {
        "job.name": prefix,  # unique per test: names the intermediate, changelog and checkpoint topics
        "job.default.system": "kafka",
        "job.factory.class": "thread",
        "app.class": f"tests.hl_apps.apps:{app}",
        "tests.app.system": "kafka",
        "app.store.factory": "inmemory",
        "task.commit.ms": "500",
    }
    for s in streams:
        entries[f"streams.{s}.samza.physical.name"] = f"{prefix}-{s}"
    entries.update(extra)
    return kafka_config.with_overrides(entries)


def test_listing2_partition_by_into_table_joined_with_stream_on_kafka(kafka_config, kafka_topic_prefix):
    cfg = bounded(
        kafka_app_config(kafka_config, kafka_topic_prefix, "StreamTableJoinApp", ["S1", "S2", "S3"]), "S1", "S2"
    )
    create(cfg, "S1", 3, "kafka")  # not co-partitioned with S2: partition_by re-partitions it into 2
    create(cfg, "S2", 2, "kafka")
    create(cfg, "S3", 2, "kafka")
    intermediate = f"{kafka_topic_prefix}-1-partition_by-p1"
    assert plan_from_config(cfg).intermediate_streams == {intermediate: 2}
    produce(cfg, "S1", [(u % 3, None, {"user": u, "name": f"n{u}"}) for u in range(8)], system="kafka")
    first = run(cfg)
    assert statuses(first) == {"completed"}
    assert first.messages_per_stream[f"kafka.{intermediate}"] >= 8  # the users went through Kafka
    # second run: page views joined with the table, restored from its Kafka changelog
    produce(
        cfg,
        "S2",
        [(partition_for_key(json.dumps(u).encode(), 2), u, {"user": u, "page": f"v{u}"}) for u in range(8)],
        system="kafka",
    )
    second = run(cfg)
    assert statuses(second) == {"completed"}
    got = sorted((k, v["page"], v["name"]) for k, v in read_all(cfg, "S3", "kafka"))
    assert got == [(u, f"v{u}", f"n{u}") for u in range(8)]


def _two_stage_count(kafka_config, prefix: str, **extra: str):
    """The bounded two-stage count over 120 words: the run's result and the counts it wrote."""
    cfg = bounded(
        kafka_app_config(
            kafka_config,
            prefix,
            "TwoStageCountApp",
            ["words", "counts"],
            **{"job.intermediate.stream.partitions": "3", "job.container.count": "2", **extra},
        ),
        "words",
    )
    create(cfg, "words", 4, "kafka")
    create(cfg, "counts", 3, "kafka")
    intermediate = f"{prefix}-1-partition_by-by-word"
    assert plan_from_config(cfg).intermediate_streams == {intermediate: 3}
    words = [f"w{i % 7}" for i in range(120)]
    produce(cfg, "words", [(i % 4, None, w) for i, w in enumerate(words)], system="kafka")
    result = run(cfg)
    assert statuses(result) == {"completed"}
    got = read_all(cfg, "counts", "kafka")
    assert dict(got) == dict(Counter(words)) and len(got) == 7
    control = sum(t["control_messages"] for s in result.summaries for t in s.metrics["tasks"].values())
    assert control >= 4 * 3  # one end-of-stream per upstream task per intermediate partition
    assert result.messages_per_stream[f"kafka.{intermediate}"] == len(words) + control


def test_two_stage_bounded_count_on_kafka(kafka_config, kafka_topic_prefix):
    _two_stage_count(kafka_config, kafka_topic_prefix)


def test_two_stage_bounded_count_exactly_once_on_kafka(kafka_config, kafka_topic_prefix):
    """The same job with ``job.processing.guarantee=exactly-once``: the end-of-stream messages on
    the intermediate stream are written in the containers' transactions and read
    ``read_committed`` by the second stage, which still ends; every partition of the intermediate
    stream ends with a commit marker, past which the readers' positions carry them."""
    _two_stage_count(kafka_config, kafka_topic_prefix, **{"job.processing.guarantee": "exactly-once"})
