"""The spark runner on a real Spark standalone cluster (a master and a worker on 127.0.0.1,
started from pyspark's own spark-class): a two-container job with ``spark.master=spark://...``
end to end over the embedded log on the shared filesystem, and over Kafka; and the executor
killed mid-run — the worker starts a new one, Spark retries the barrier stage, the containers
resume from their checkpoints and nothing is lost."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from jobs.stream_helpers import read_stream
from samza_dagster.config import Config
from samza_dagster.model import OutgoingMessageEnvelope, StreamSpec, SystemStream
from samza_dagster.runtime.spark_runner import run_spark_job
from samza_dagster.system.factories import system_factory
from support.spark_cluster import start_cluster
from tests import REPO

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

PARTITIONS = 4
PER_PARTITION = 250


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = start_cluster(tmp_path_factory.mktemp("spark-cluster"), python_path=[str(REPO)])
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def spark(cluster):
    from samza_dagster.spark.session import get_or_create_spark

    session = get_or_create_spark(
        {
            "spark.stage.maxConsecutiveAttempts": "4",
            "spark.executorEnv.PYTHONPATH": str(REPO),
            "spark.executor.memory": "1g",
            "spark.sql.shuffle.partitions": "1",
            "spark.executor.extraJavaOptions": f"-Djava.io.tmpdir={cluster.work_dir}",  # not /tmp
        },
        master=cluster.master_url,
        app_name="test-spark-cluster",
    )
    yield session
    session.stop()


def _config(root: Path, name: str, output: str, **extra: str) -> Config:
    return Config(
        {
            "job.name": name,
            "job.factory.class": "spark",
            "job.container.count": "2",
            "job.container.retry.count": "3",
            "job.default.system": "log",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(root),
            "task.class": "tests.spark_apps:CopyTask",
            "task.inputs": "log.input",
            "task.commit.ms": "100",
            "systems.log.streams.input.samza.bounded": "true",
            "test.output.stream": output,
            **extra,
        }
    )


def _fill_input(config: Config) -> list[bytes]:
    factory = system_factory(config, "log")
    admin = factory.get_admin("log", config)
    admin.create_stream(StreamSpec("input", "input", "log", PARTITIONS))
    producer = factory.get_producer("log", config)
    producer.register("setup")
    producer.start()
    sent = []
    for p in range(PARTITIONS):
        for i in range(PER_PARTITION):
            value = f"m{p}-{i}".encode()
            producer.send("setup", OutgoingMessageEnvelope(SystemStream("log", "input"), value, key=b"k", partition=p))
            sent.append(value)
    producer.flush("setup")
    producer.stop()
    return sent


def _output(config: Config, stream: str) -> Counter:
    return Counter(record.value for record in read_stream(config, stream))


def test_a_two_container_job_runs_on_the_standalone_cluster(spark, cluster, tmp_path):
    assert spark.sparkContext.master == cluster.master_url
    config = _config(tmp_path / "log", "cluster-copy", "out")
    sent = _fill_input(config)
    system_factory(config, "log").get_admin("log", config).create_stream(StreamSpec("out", "out", "log", PARTITIONS))

    result = run_spark_job(config, spark=spark)
    assert result.succeeded, result.summary_line()
    assert [s.messages_processed for s in result.summaries] == [2 * PER_PARTITION, 2 * PER_PARTITION]
    assert _output(config, "out") == Counter(sent)


def test_a_killed_executor_is_replaced_and_the_job_loses_nothing(spark, cluster, tmp_path):
    config = _config(tmp_path / "log", "cluster-kill", "out", **{"test.delay.ms": "4"})
    sent = _fill_input(config)
    system_factory(config, "log").get_admin("log", config).create_stream(StreamSpec("out", "out", "log", PARTITIONS))
    box: dict = {}
    runner = threading.Thread(target=lambda: box.setdefault("result", run_spark_job(config, spark=spark)))
    runner.start()
    deadline = time.monotonic() + 120
    while sum(_output(config, "out").values()) < 200:  # the job is well under way
        assert time.monotonic() < deadline and runner.is_alive(), "the job never got going"
        time.sleep(0.2)
    (executor,) = cluster.executor_pids()
    launched = cluster.executors_launched()
    os.kill(executor, signal.SIGKILL)
    runner.join(240)
    assert not runner.is_alive()
    result = box["result"]
    assert result.succeeded, result.summary_line()
    # the worker replaced the killed executor and Spark ran the barrier stage again on it
    assert executor not in cluster.executor_pids() and cluster.executors_launched() == launched + 1
    out = _output(config, "out")
    missing = Counter(sent) - out
    assert not missing, f"{sum(missing.values())} messages lost, e.g. {next(iter(missing))}"


def test_a_two_container_kafka_job_runs_on_the_standalone_cluster(
    spark, kafka_config, kafka_topic_prefix, kafka_broker
):
    from kafka import KafkaConsumer, KafkaProducer

    topic_in, topic_out = f"{kafka_topic_prefix}-in", f"{kafka_topic_prefix}-out"
    config = kafka_config.with_overrides(
        {
            "job.name": f"{kafka_topic_prefix}-job",
            "job.factory.class": "spark",
            "job.container.count": "2",
            "job.default.system": "kafka",
            "task.class": "tests.spark_apps:CopyTask",
            "task.inputs": f"kafka.{topic_in}",
            "task.commit.ms": "200",
            f"systems.kafka.streams.{topic_in}.samza.bounded": "true",
            "systems.kafka.samza.offset.default": "oldest",
            "test.output.system": "kafka",
            "test.output.stream": topic_out,
        }
    )
    admin = system_factory(config, "kafka").get_admin("kafka", config)
    admin.create_stream(StreamSpec(topic_in, topic_in, "kafka", 2))
    admin.create_stream(StreamSpec(topic_out, topic_out, "kafka", 2))
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers)
    sent = []
    for p in range(2):
        for i in range(50):
            value = f"m{p}-{i}".encode()
            producer.send(topic_in, value, key=f"k{i}".encode(), partition=p)
            sent.append(value)
    producer.flush(30)
    producer.close()

    result = run_spark_job(config, spark=spark)
    assert result.succeeded, result.summary_line()
    assert [s.messages_processed for s in result.summaries] == [50, 50]
    consumer = KafkaConsumer(
        topic_out,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        auto_offset_reset="earliest",
        consumer_timeout_ms=5000,
    )
    got = [r.value for r in consumer]
    consumer.close()
    assert sorted(got) == sorted(sent)
