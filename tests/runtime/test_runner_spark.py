"""The spark runner: containers as tasks of one Spark barrier stage (local[2]), over the embedded
log system; the same job on the thread runner as the reference. One Spark session for the module
(a session costs 7-14 s here)."""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from samza_dagster.config import Config
from samza_dagster.container import SamzaContainer
from samza_dagster.coordinator.model.builder import build_job_model
from samza_dagster.model import OutgoingMessageEnvelope, StreamSpec, SystemStream, SystemStreamPartition
from samza_dagster.runtime.spark_container import ContainerFailedError, find_container_failure
from samza_dagster.runtime.spark_runner import SparkJobRunner, run_spark_job
from samza_dagster.system.factories import system_factory
from support.waiting import wait_until

pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]

PARTITIONS = 4
PER_PARTITION = 400
ATTEMPTS = 3  # spark.stage.maxConsecutiveAttempts of the module's session = job.container.retry.count + 1


@pytest.fixture(scope="module")
def spark():
    from samza_dagster.spark.session import get_or_create_spark

    session = get_or_create_spark(
        {"spark.stage.maxConsecutiveAttempts": str(ATTEMPTS), "spark.sql.shuffle.partitions": "1"},
        master="local[2]",
        app_name="test-runner-spark",
    )
    yield session
    session.stop()


@pytest.fixture(scope="module")
def log_root(tmp_path_factory):
    return tmp_path_factory.mktemp("spark-runner-log")


def _base(log_root, name: str, output: str, **extra: str) -> Config:
    entries = {
        "job.name": name,
        "job.factory.class": "spark",
        "job.container.count": "2",
        "job.container.retry.count": str(ATTEMPTS - 1),
        "job.default.system": "log",
        "systems.log.samza.factory": "log",
        "systems.log.log.path": str(log_root),
        "task.class": "tests.spark_apps:CopyTask",
        "task.inputs": "log.input",
        "task.commit.ms": "200",
        "systems.log.streams.input.samza.bounded": "true",
        "test.output.stream": output,
    }
    entries.update(extra)
    return Config(entries)


def _admin(config: Config):
    return system_factory(config, "log").get_admin("log", config)


def _create(config: Config, stream: str, partitions: int) -> None:
    _admin(config).create_stream(StreamSpec(stream, stream, "log", partitions))


@pytest.fixture(scope="module")
def input_stream(log_root):
    """``log.input``: 4 partitions of 400 keyed messages each, written once for the module."""
    config = _base(log_root, "setup", "unused")
    _create(config, "input", PARTITIONS)
    producer = system_factory(config, "log").get_producer("log", config)
    producer.register("setup")
    producer.start()
    ss = SystemStream("log", "input")
    sent = []
    for p in range(PARTITIONS):
        for i in range(PER_PARTITION):
            key, value = f"k{p}-{i % 37}".encode(), f"m{p}-{i}".encode()
            producer.send("setup", OutgoingMessageEnvelope(ss, value, key=key, partition=p))
            sent.append((key, value))
    producer.flush("setup")
    producer.stop()
    return sent


def _read_all(config: Config, stream: str) -> dict[int, list[tuple[bytes, bytes]]]:
    md = _admin(config).get_system_stream_metadata([stream])[stream]
    consumer = system_factory(config, "log").get_consumer("log", config)
    ssps = [SystemStreamPartition("log", stream, p) for p in md.partitions]
    ends = {}
    for ssp in ssps:
        pm = md.partitions[ssp.partition]
        if pm.newest_offset is not None:
            consumer.register(ssp, pm.oldest_offset)
            ends[ssp] = int(pm.newest_offset)
    consumer.start()
    out: dict[int, list[tuple[bytes, bytes]]] = {p: [] for p in md.partitions}
    try:
        pending = set(ends)
        while pending:
            for ssp, envelopes in consumer.poll(set(pending), 1.0).items():
                for env in envelopes:
                    if env.is_end_of_stream:
                        pending.discard(ssp)
                        continue
                    out[ssp.partition].append((env.key, env.message))
                    if int(env.offset) >= ends[ssp]:
                        pending.discard(ssp)
    finally:
        consumer.stop()
    return out


def _run_in_threads(config: Config) -> list:
    """The thread runner's way: the model builder's JobModel, each container in a thread."""
    model = build_job_model(config).model
    containers = [SamzaContainer(cid, model) for cid in sorted(model.containers)]
    threads = [threading.Thread(target=c.run) for c in containers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return [c.summary for c in containers]


def test_bounded_two_container_job_matches_the_thread_runner(spark, log_root, input_stream):
    spark_cfg = _base(log_root, "copy-spark", "out-spark")
    thread_cfg = _base(log_root, "copy-thread", "out-thread", **{"job.factory.class": "thread"})
    _create(spark_cfg, "out-spark", PARTITIONS)
    _create(thread_cfg, "out-thread", PARTITIONS)

    result = run_spark_job(spark_cfg, spark=spark)
    assert result.succeeded, result.summary_line()
    assert [s.container_id for s in result.summaries] == ["0", "1"]
    assert {s.status.value for s in result.summaries} == {"completed"}
    assert result.messages_per_stream == {"log.input": PARTITIONS * PER_PARTITION}
    # each container processed its own half (group-by-partition: 2 tasks each)
    assert [s.messages_processed for s in result.summaries] == [2 * PER_PARTITION, 2 * PER_PARTITION]
    offsets = {k: v for s in result.summaries for task in s.final_offsets.values() for k, v in task.items()}
    assert offsets == {f"log.input[{p}]": str(PER_PARTITION - 1) for p in range(PARTITIONS)}

    summaries = _run_in_threads(thread_cfg)
    assert all(s.status.value == "completed" for s in summaries)
    by_spark, by_thread = _read_all(spark_cfg, "out-spark"), _read_all(thread_cfg, "out-thread")
    assert {p: sorted(v) for p, v in by_spark.items()} == {p: sorted(v) for p, v in by_thread.items()}
    assert Counter(m for v in by_spark.values() for m in v) == Counter(input_stream)


def test_crashed_container_is_restarted_by_spark_and_nothing_is_lost(spark, log_root, input_stream, tmp_path):
    marker = tmp_path / "crashed"
    cfg = _base(
        log_root,
        "copy-crash",
        "out-crash",
        **{"test.crash.container": "1", "test.crash.after.messages": "150", "test.crash.marker": str(marker)},
    )
    _create(cfg, "out-crash", PARTITIONS)

    result = run_spark_job(cfg, spark=spark)
    assert marker.exists(), "container 1 never crashed: the test proves nothing"
    assert result.succeeded, result.summary_line()
    # the restarted stage resumed from checkpoints: every input message is in the output
    # (at least once: what followed the last commit before the crash may be there twice)
    out = Counter(m for v in _read_all(cfg, "out-crash").values() for m in v)
    missing = Counter(input_stream) - out
    assert not missing, f"{sum(missing.values())} input messages missing, e.g. {next(iter(missing))}"
    assert all(s.status.value == "completed" for s in result.summaries)


def test_exhausted_attempts_fail_the_job_with_the_container_error(spark, log_root, input_stream):
    cfg = _base(log_root, "copy-fail", "out-fail", **{"test.fail.message": "m3-7"})
    _create(cfg, "out-fail", PARTITIONS)

    result = run_spark_job(cfg, spark=spark)
    assert not result.succeeded
    # partition 3 belongs to container 1 (group-by-partition, round-robin over 2 containers)
    assert result.failed_container == "1"
    assert "ValueError: bad message b'm3-7' at offset 7" in result.error
    assert "Traceback" not in result.error and "org.apache.spark" not in result.error
    assert "bad message" in result.summary_line()


def test_stop_ends_an_unbounded_job_gracefully_with_commits(spark, log_root, input_stream):
    cfg = _base(log_root, "copy-unbounded", "out-unbounded", **{"systems.log.streams.input.samza.bounded": "false"})
    _create(cfg, "out-unbounded", PARTITIONS)
    runner = SparkJobRunner(cfg, spark=spark)
    box = {}
    thread = threading.Thread(target=lambda: box.setdefault("result", runner.run()))
    thread.start()
    # stop once the output shows every input message copied (the containers then idle)
    import time

    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            md = _admin(cfg).get_system_stream_metadata(["out-unbounded"])["out-unbounded"]
            copied = sum(int(pm.newest_offset) + 1 for pm in md.partitions.values() if pm.newest_offset is not None)
        except Exception:  # noqa: BLE001 - not created yet, or mid-write: look again
            copied = 0
        if copied >= PARTITIONS * PER_PARTITION:
            break
        time.sleep(0.5)
    runner.stop()
    thread.join(60)
    result = box["result"]
    assert result.succeeded, result.summary_line()
    assert {s.status.value for s in result.summaries} == {"shutdown"}
    offsets = {k: v for s in result.summaries for task in s.final_offsets.values() for k, v in task.items()}
    assert offsets == {f"log.input[{p}]": str(PER_PARTITION - 1) for p in range(PARTITIONS)}


def test_failure_marker_survives_a_nested_spark_message():
    err = ContainerFailedError("1", "ValueError: boom\nsecond line")
    text = f"py4j ... Traceback ...\n{err}\n\tat org.apache.spark.Something"
    assert find_container_failure(text) == ("1", "ValueError: boom | second line")
    assert find_container_failure("no marker here") is None


def _wait_copied(cfg: Config, stream: str, expected: int, timeout_s: float = 90) -> int:
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        md = _admin(cfg).get_system_stream_metadata([stream])[stream]
        copied = sum(int(pm.newest_offset) + 1 for pm in md.partitions.values() if pm.newest_offset is not None)
        if copied >= expected or time.monotonic() > deadline:
            return copied
        time.sleep(0.3)


def test_new_job_model_restarts_the_stage_and_resumes_from_commits(spark, log_root, input_stream):
    from samza_dagster.coordinator.stream.messages import CoordinatorStreamMessage
    from samza_dagster.coordinator.stream.reader_writer import CoordinatorStreamWriter

    cfg = _base(
        log_root,
        "copy-newmodel",
        "out-newmodel",
        **{
            "systems.log.streams.input.samza.bounded": "false",
            "job.coordinator.monitor.interval.ms": "300",
            "job.coordinator.watch.interval.ms": "300",
        },
    )
    _create(cfg, "out-newmodel", PARTITIONS)
    runner = SparkJobRunner(cfg, spark=spark)
    box = {}
    thread = threading.Thread(target=lambda: box.setdefault("result", runner.run()))
    thread.start()
    assert _wait_copied(cfg, "out-newmodel", PARTITIONS * PER_PARTITION) == PARTITIONS * PER_PARTITION
    with CoordinatorStreamWriter(cfg, "test") as writer:
        writer.send(CoordinatorStreamMessage.set_config("test", "test.tuning", "2"))
    wait_until(lambda: runner.stage_runs == 2, what="the containers restarted for the new JobModel")
    # stopping while the second stage's containers start is fine: they see the stop request
    # when they start, commit and end with status shutdown
    runner.stop()
    thread.join(60)
    result = box["result"]
    assert result.succeeded, result.summary_line()
    assert result.model_version == 2 and result.stage_runs == 2
    assert {s.status.value for s in result.summaries} == {"shutdown"}
    # the first stage committed before exiting, so the second reprocessed nothing: every
    # message was processed once over the two container runs
    assert sum(s.messages_processed for s in result.summaries) == 0
    assert result.messages_processed == PARTITIONS * PER_PARTITION
    assert _wait_copied(cfg, "out-newmodel", 0, 0.0) == PARTITIONS * PER_PARTITION


def test_bounded_job_over_kafka(spark, kafka_config, kafka_topic_prefix, kafka_broker):
    from kafka import KafkaConsumer, KafkaProducer

    topic_in, topic_out = f"{kafka_topic_prefix}-in", f"{kafka_topic_prefix}-out"
    cfg = kafka_config.with_overrides(
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
    admin = system_factory(cfg, "kafka").get_admin("kafka", cfg)
    admin.create_stream(StreamSpec(topic_in, topic_in, "kafka", 2))
    admin.create_stream(StreamSpec(topic_out, topic_out, "kafka", 2))
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers)
    sent = []
    for p in range(2):
        for i in range(60):
            key, value = f"k{i}".encode(), f"m{p}-{i}".encode()
            producer.send(topic_in, value, key=key, partition=p)
            sent.append(value)
    producer.flush(30)
    producer.close()

    result = run_spark_job(cfg, spark=spark)
    assert result.succeeded, result.summary_line()
    assert result.messages_per_stream == {f"kafka.{topic_in}": 120}
    assert [s.messages_processed for s in result.summaries] == [60, 60]

    consumer = KafkaConsumer(
        topic_out,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        auto_offset_reset="earliest",
        consumer_timeout_ms=5000,
    )
    got = [r.value for r in consumer]
    consumer.close()
    assert sorted(got) == sorted(sent)


def test_high_level_two_stage_application_on_spark(spark, tmp_path):
    """A StreamApplication (partition_by into an intermediate stream, then a windowed count) on
    two containers: the driver plans it and creates the intermediate stream, each executor
    rebuilds the operator graph; the bounded job ends by in-band end-of-stream."""
    from tests.operators.test_operators_runtime import base, bounded, create, produce, read_all

    cfg = bounded(
        base(tmp_path, "wc-spark", "TwoStageCountApp", **{"job.intermediate.stream.partitions": "3"}), "words"
    )
    cfg = cfg.with_overrides({"job.container.count": "2", "job.factory.class": "spark"})
    create(cfg, "words", 4)
    create(cfg, "counts", 3)
    words = [f"w{i % 7}" for i in range(200)]
    produce(cfg, "words", [(i % 4, None, w) for i, w in enumerate(words)])

    result = run_spark_job(cfg, spark=spark)
    assert result.succeeded, result.summary_line()
    assert [s.status.value for s in result.summaries] == ["completed", "completed"]
    assert result.messages_per_stream["log.words"] == 200
    assert dict(read_all(cfg, "counts")) == dict(Counter(words))


def test_an_error_no_retry_can_fix_ends_the_job_at_once(spark, log_root, input_stream, tmp_path):
    """The output stream does not exist: every attempt would fail the same way, so the container
    reports it and the driver cancels the stage — each container started once, not once per
    attempt — and the job's error names the stream."""
    starts = tmp_path / "starts"
    cfg = _base(log_root, "copy-missing-output", "no-such-output", **{"test.starts.file": str(starts)})
    result = run_spark_job(cfg, spark=spark)
    assert not result.succeeded
    assert "no-such-output" in result.error and "does not exist" in result.error
    assert "Traceback" not in result.error and "org.apache.spark" not in result.error
    # one line per task start, two tasks per container: each container started once (the
    # stage's ATTEMPTS would have started each ATTEMPTS times)
    assert Counter(starts.read_text().split()) == {"0": 2, "1": 2}


def test_the_control_endpoint_takes_the_coordinators_bearer_token(spark, log_root, input_stream):
    import json
    import urllib.error
    import urllib.request

    from samza_dagster.runtime.spark_runner import _ControlServer

    control = _ControlServer("127.0.0.1", token="s3cret")
    try:
        with pytest.raises(urllib.error.HTTPError) as denied:
            urllib.request.urlopen(control.url, timeout=5)
        assert denied.value.code == 401
        request = urllib.request.Request(control.url, headers={"Authorization": "Bearer s3cret"})
        with urllib.request.urlopen(request, timeout=5) as response:
            assert json.loads(response.read()) == {"stop": False}
    finally:
        control.close()
    # and a job whose coordinator and control endpoint need the token runs through
    cfg = _base(log_root, "copy-token", "out-token", **{"job.coordinator.http.token": "s3cret"})
    _create(cfg, "out-token", PARTITIONS)
    result = run_spark_job(cfg, spark=spark)
    assert result.succeeded, result.summary_line()


def test_side_input_stores_are_filled_on_spark_executors(spark, tmp_path):
    """The side-inputs manager runs inside each Spark-hosted container: the table is read to its
    head before the first message, and the offsets file is written beside the store."""
    from samza_dagster.container.side_inputs import OFFSETS_FILE
    from tests.container.test_side_inputs import _bounded, _config, _log_base, _profile, _seen, _streams, _user

    cfg = _bounded(_config(_log_base(tmp_path), "log")).with_overrides({"job.factory.class": "spark"})
    _streams(cfg, "log")
    _profile(cfg, "log", "u1", "ann")
    _profile(cfg, "log", "u1", "bea")
    _user(cfg, "log", "u1")

    result = run_spark_job(cfg, spark=spark)
    assert result.succeeded, result.summary_line()
    assert _seen(cfg, "log") == [{"user": "u1", "profile": {"name": "bea"}}]
    assert (tmp_path / "state" / "enrich-1" / "profiles" / "Partition_0" / OFFSETS_FILE).exists()
