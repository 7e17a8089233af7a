"""A running job's metrics, end to end: the containers' snapshot reporters write Samza's snapshot
JSON to a metrics stream, the job coordinator serves every container's latest snapshot at
``/metrics`` for Prometheus (thread and spark runners), ``samza-dagster metrics`` prints them,
and a task's own counter is in all of them with the engine's standard metrics."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from samza_dagster.cli import main
from samza_dagster.config import Config
from samza_dagster.metrics import CONTAINER_GROUP, LOG_CONSUMER_GROUP, SYSTEM_CONSUMERS_GROUP, TASK_GROUP
from samza_dagster.metrics.stream_reader import MetricsStreamReader, latest_snapshots
from samza_dagster.model import OutgoingMessageEnvelope, StreamSpec, SystemStream
from samza_dagster.runtime import create_runner
from samza_dagster.system.factories import system_factory
from support.waiting import wait_until
from tests.metrics_apps import GROUP

PARTITIONS = 4
PER_PARTITION = 50
TOTAL = PARTITIONS * PER_PARTITION
TOKEN = "s3cret"
METRICS = SystemStream("log", "metrics")


def _config(root, name: str, runner: str) -> Config:
    return Config(
        {
            "job.name": name,
            "job.factory.class": runner,
            "job.container.count": "2",
            "job.default.system": "log",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(root),
            "task.class": "tests.metrics_apps:CountingTask",
            "task.inputs": "log.input",
            "task.commit.ms": "200",
            "job.coordinator.http.token": TOKEN,
            "metrics.reporters": "snapshot,prometheus",
            "metrics.reporter.snapshot.class": "snapshot",
            "metrics.reporter.snapshot.stream": "log.metrics",
            "metrics.reporter.snapshot.interval": "0.2",
            "metrics.reporter.prometheus.class": "prometheus",
        }
    )


def _fill_input(config: Config) -> None:
    factory = system_factory(config, "log")
    factory.get_admin("log", config).create_stream(StreamSpec("input", "input", "log", PARTITIONS))
    producer = factory.get_producer("log", config)
    producer.register("setup")
    producer.start()
    for p in range(PARTITIONS):
        for i in range(PER_PARTITION):
            producer.send(
                "setup",
                OutgoingMessageEnvelope(SystemStream("log", "input"), b"x" * (i % 7 + 1), key=b"k", partition=p),
            )
    producer.flush("setup")
    producer.stop()


def _scrape(url: str, token: str | None = TOKEN) -> dict[tuple[str, str, str], float]:
    """(sample name + its partition label, container, source) -> value of every sample the
    endpoint serves, parsed by prometheus_client's own parser; every counter family's samples
    end in ``_total``."""
    request = urllib.request.Request(url + "/metrics")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if family.type == "counter":
                assert s.name == family.name + "_total", (family.name, s.name)
            where = f"{{{s.labels['stream']}/{s.labels['partition']}}}" if "partition" in s.labels else ""
            samples[(s.name + where, s.labels["container"], s.labels["source"])] = s.value
    return samples


def _total(samples: dict[tuple[str, str, str], float], name: str, source_prefix: str) -> float:
    return sum(v for (n, _, source), v in samples.items() if n == name and source.startswith(source_prefix))


def _run_and_scrape(config: Config, runner) -> dict[tuple[str, str, str], float]:
    """Run the (unbounded) job until the scrape shows every message processed; stop it."""
    box: dict = {}
    thread = threading.Thread(target=lambda: box.setdefault("result", runner.run()), daemon=True)
    thread.start()
    try:
        url = wait_until(
            lambda: runner.coordinator is not None and runner.coordinator.url, 120, what="the job coordinator"
        )
        with pytest.raises(urllib.error.HTTPError) as denied:
            _scrape(url, token=None)
        assert denied.value.code == 401  # the coordinator's token rule holds for /metrics too
        samples = wait_until(
            lambda: (
                (s := _scrape(url)) and _total(s, "samza_process_envelopes_total", "samza-container-") == TOTAL and s
            ),
            180,
            what=f"{TOTAL} envelopes processed on /metrics",
        )
    finally:
        runner.stop()
        thread.join(120)
    assert box["result"].succeeded, box["result"].summary_line()
    return samples


def _check_scrape(samples: dict[tuple[str, str, str], float]) -> None:
    assert {c for (_, c, s) in samples if s.startswith("samza-container-")} == {"0", "1"}
    # the task's own counter, one per task (TaskName-Partition N), adds up to what was processed
    assert _total(samples, "samza_user_messages_total", "TaskName-") == TOTAL
    assert _total(samples, "samza_process_calls_total", "TaskName-") == TOTAL
    for p in range(PARTITIONS):
        assert _total(samples, f"samza_messages_processed_total{{input/{p}}}", "TaskName-") == PER_PARTITION
        assert _total(samples, f"samza_messages_behind_high_watermark{{input/{p}}}", "samza-container-") == 0
    # the task's own timer, in seconds (its values were byte counts fed as ns: 1..7 ns)
    assert 0 < _total(samples, "samza_message_bytes_seconds", "TaskName-") < 1e-6 * PARTITIONS


def _check_snapshot_stream(config: Config) -> None:
    """Samza's snapshot format, read back: the last snapshot of each source holds the final counts."""
    with MetricsStreamReader(config, METRICS) as reader:
        raw = reader._consumer.poll(reader.ssps, 5.0)  # one raw message: Samza's JSON, byte for byte
    message = json.loads(next(iter(raw.values()))[0].message)
    # Samza's two keys, and the kinds of counters and timers (an addition Samza's readers ignore)
    assert set(message) == {"header", "metrics", "types"}
    assert set(message["header"]) == {
        "job-name",
        "job-id",
        "container-name",
        "exec-env-container-id",
        "samza-epoch-id",
        "source",
        "host",
        "time",
        "reset-time",
        "version",
        "samza-version",
    }
    snapshots = latest_snapshots(config, METRICS).snapshots()
    containers = [s for s in snapshots if s.header.source.startswith("samza-container-")]
    tasks = [s for s in snapshots if s.header.source.startswith("TaskName-")]
    assert sorted(s.header.container_name for s in containers) == ["0", "1"]
    assert len(tasks) == PARTITIONS
    assert {s.header.job_name for s in snapshots} == {config.get_str("job.name")}
    assert sum(s.value(CONTAINER_GROUP, "process-envelopes") for s in containers) == TOTAL
    assert sum(s.value(SYSTEM_CONSUMERS_GROUP, "choose-object") for s in containers) == TOTAL
    assert all(s.value(CONTAINER_GROUP, "process-ns") > 0 for s in containers)
    assert all(0 <= s.value(CONTAINER_GROUP, "event-loop-utilization") <= 1 for s in containers)
    assert [s.value(LOG_CONSUMER_GROUP, "messages-behind-high-watermark") for s in containers] == [0, 0]
    lag = {name: v for s in containers for name, v in s.metrics[LOG_CONSUMER_GROUP].items()}
    for p in range(PARTITIONS):
        assert lag[f"log-input-{p}-messages-behind-high-watermark"] == 0
        assert lag[f"log-input-{p}-high-watermark"] == PER_PARTITION
    for task in tasks:
        partition = int(task.header.source.rsplit(" ", 1)[1])
        assert task.value(GROUP, "user-messages") == PER_PARTITION
        assert task.value(TASK_GROUP, "process-calls") == PER_PARTITION
        assert task.value(TASK_GROUP, f"log-input-{partition}-offset") == str(PER_PARTITION - 1)


@pytest.mark.parametrize("runner", ["thread", "process"])
def test_job_metrics_on_prometheus_the_snapshot_stream_and_the_cli(tmp_path, capsys, runner):
    config = _config(tmp_path, f"metrics-{runner}", runner)
    _fill_input(config)
    samples = _run_and_scrape(config, create_runner(config))
    _check_scrape(samples)
    _check_snapshot_stream(config)

    properties = tmp_path / "job.properties"
    properties.write_text("".join(f"{k}={v}\n" for k, v in config.items()))
    capsys.readouterr()
    assert main(["metrics", "--config-path", str(properties), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    by_source = {s["header"]["source"]: s for s in printed}
    assert (
        sum(by_source[f"TaskName-Partition {p}"]["metrics"][GROUP]["user-messages"] for p in range(PARTITIONS)) == TOTAL
    )
    assert main(["metrics", "--config-path", str(properties)]) == 0
    table = capsys.readouterr().out
    assert "samza-container-0" in table and "user-messages" in table and "process-envelopes" in table


@pytest.mark.spark
@pytest.mark.timeout(300)
def test_spark_runner_job_metrics_reach_the_coordinators_prometheus_endpoint(tmp_path):
    from samza_dagster.runtime.spark_runner import SparkJobRunner
    from samza_dagster.spark.session import get_or_create_spark

    spark = get_or_create_spark({"spark.sql.shuffle.partitions": "1"}, master="local[2]", app_name="test-metrics")
    try:
        config = _config(tmp_path, "metrics-spark", "spark")
        _fill_input(config)
        samples = _run_and_scrape(config, SparkJobRunner(config, spark=spark))
    finally:
        spark.stop()
    _check_scrape(samples)
    _check_snapshot_stream(config)


def test_a_high_level_functions_counter_is_in_the_task_registry_and_on_the_snapshot_stream(tmp_path):
    from samza_dagster.runtime import run_job
    from support import hl_harness

    config = Config(
        {
            "job.name": "metrics-hl",
            "job.default.system": "log",
            "job.factory.class": "thread",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(tmp_path / "log"),
            "task.commit.ms": "500",
            "app.store.factory": "inmemory",
            "app.class": "tests.metrics_apps:CountingApp",
            "systems.log.streams.in.samza.bounded": "true",
            "job.container.count": "1",
            "metrics.reporters": "snapshot",
            "metrics.reporter.snapshot.class": "snapshot",
            "metrics.reporter.snapshot.stream": "log.metrics",
        }
    )
    hl_harness.create(config, "in", 2)
    hl_harness.create(config, "out", 2)
    hl_harness.produce(config, "in", [(i % 2, None, {"n": i}) for i in range(30)])
    result = run_job(config)
    assert result.succeeded, result.summary_line()
    (summary,) = result.summaries
    registry = summary.metrics["registry"]
    assert {p: registry[f"TaskName-Partition {p}"][GROUP]["mapped"] for p in (0, 1)} == {0: 15, 1: 15}
    snapshots = latest_snapshots(config, METRICS).snapshots()  # the default interval (60 s): the stop's snapshot
    assert sum(s.value(GROUP, "mapped", 0) for s in snapshots) == 30


def test_store_metrics_count_the_caches_gets_the_changelog_writes_and_the_restore(tmp_path):
    from samza_dagster.metrics import CACHED_STORE_GROUP, LOGGED_STORE_GROUP, STORAGE_MANAGER_GROUP
    from samza_dagster.runtime import run_job

    config = Config(
        {
            "job.name": "metrics-store",
            "job.factory.class": "thread",
            "job.default.system": "log",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(tmp_path / "log"),
            "task.class": "tests.metrics_apps:StoreCountingTask",
            "task.inputs": "log.keyed",
            "systems.log.streams.keyed.samza.bounded": "true",
            "stores.counts.factory": "rocksdb",
            "stores.counts.changelog": "log.counts-changelog",
            "stores.counts.key.serde": "string",
            "stores.counts.msg.serde": "integer",
            "job.logged.store.base.dir": str(tmp_path / "state"),
        }
    )
    factory = system_factory(config, "log")
    factory.get_admin("log", config).create_stream(StreamSpec("keyed", "keyed", "log", 1))
    producer = factory.get_producer("log", config)
    producer.register("t")
    producer.start()
    for i in range(100):
        producer.send(
            "t", OutgoingMessageEnvelope(SystemStream("log", "keyed"), b"v", key=f"k{i % 10}".encode(), partition=0)
        )
    producer.flush("t")
    producer.stop()

    first = run_job(config)
    assert first.succeeded, first.summary_line()
    task = first.summaries[0].metrics["registry"]["TaskName-Partition 0"]
    assert task[CACHED_STORE_GROUP]["counts-gets"] == 100
    assert task[CACHED_STORE_GROUP]["counts-cache-hits"] == 90  # each key misses once, then is cached
    assert task[CACHED_STORE_GROUP]["counts-dirty-count"] == 0  # all written down at the last commit
    writes = task[LOGGED_STORE_GROUP]["counts-changelog-writes"]
    assert writes == task[CACHED_STORE_GROUP]["counts-written"] and 10 <= writes <= 100

    again = run_job(config)  # nothing new to read: the store is rebuilt from its changelog
    assert again.succeeded, again.summary_line()
    container = again.summaries[0].metrics["registry"]["samza-container-0"]
    assert container[STORAGE_MANAGER_GROUP]["counts-restored-messages"] == writes
    # it resumed after its checkpoint and processed nothing: nothing is behind (the lag counts from
    # where the container started, not from the partition's oldest offset)
    assert sum(again.summaries[0].messages_per_stream.values()) == 0
    assert container[LOG_CONSUMER_GROUP]["log-keyed-0-messages-behind-high-watermark"] == 0
    assert container[LOG_CONSUMER_GROUP]["log-keyed-0-high-watermark"] == 100
