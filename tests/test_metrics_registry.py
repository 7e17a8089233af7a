"""Samza's metric types and registry, the snapshot JSON, the Prometheus exposition of snapshots,
and the reporters' config checks (each a ConfigError naming its key, at pre-flight)."""

from __future__ import annotations

import json

import pytest
from prometheus_client.parser import text_string_to_metric_families

from samza_dagster.config import Config, ConfigError
from samza_dagster.metrics import (
    CONTAINER_GROUP,
    MetricsHeader,
    MetricsRegistry,
    MetricsSnapshot,
    MetricsSnapshotError,
)
from samza_dagster.metrics.config import metrics_config
from samza_dagster.metrics.errors import MetricsError
from samza_dagster.metrics.prometheus import exposition, prometheus_name
from samza_dagster.model import SystemStream
from samza_dagster.runtime.preflight import check_job_config


def test_a_counter_is_found_again_by_group_and_name_and_counts_on():
    registry = MetricsRegistry("TaskName-Partition 0")
    counter = registry.new_counter("app", "seen")
    counter.inc()
    counter.inc(4)
    again = registry.new_counter("app", "seen")  # a task's init run again finds its counter
    assert again is counter
    again.dec()
    assert registry.snapshot() == {"app": {"seen": 4}}
    assert registry.new_counter("other", "seen") is not counter  # groups are separate namespaces


def test_registering_a_name_again_as_another_type_is_refused_naming_it():
    registry = MetricsRegistry("samza-container-0")
    registry.new_counter("app", "x")
    with pytest.raises(MetricsError, match=r"app/x .* Counter.* Gauge"):
        registry.new_gauge("app", "x")


def test_gauge_list_gauge_and_timer_values_in_a_snapshot():
    registry = MetricsRegistry("s")
    registry.new_gauge("g", "level", "low").set("high")
    items = registry.new_list_gauge("g", "recent", max_items=3)
    for n in range(5):
        items.add(n)
    timer = registry.new_timer("g", "took-ns")
    timer.update(100)
    timer.update(300)
    first = registry.snapshot()["g"]
    assert first == {"level": "high", "recent": [2, 3, 4], "took-ns": 200.0}
    timer.update(1000)
    assert registry.snapshot()["g"]["took-ns"] == 1000.0  # the mean since the previous snapshot
    assert registry.snapshot()["g"]["took-ns"] == 1000.0  # nothing timed since: the last mean stays


def test_a_failing_computed_gauge_is_left_out_and_the_rest_reported():
    registry = MetricsRegistry("s")
    registry.computed_gauge("g", "broken", lambda: 1 / 0)
    registry.computed_gauge("g", "fine", lambda: 7)
    assert registry.snapshot() == {"g": {"fine": 7}}


def _header(**changes) -> MetricsHeader:
    fields = dict(
        job_name="job",
        job_id="1",
        container_name="0",
        source="samza-container-0",
        host="h",
        time=1_700_000_000_000,
        reset_time=1_699_999_999_000,
        version="0.0.1",
        samza_version="0.1.0",
    )
    fields.update(changes)
    return MetricsHeader(**fields)


def test_a_snapshot_is_samzas_json_and_reads_back():
    snapshot = MetricsSnapshot(_header(), {CONTAINER_GROUP: {"process-envelopes": 12, "process-ns": 1.5}})
    data = json.loads(snapshot.encode())
    assert set(data) == {"header", "metrics"}
    assert set(data["header"]) == {
        "job-name",
        "job-id",
        "container-name",
        "source",
        "host",
        "time",
        "reset-time",
        "version",
        "samza-version",
    }
    assert data["metrics"] == {CONTAINER_GROUP: {"process-envelopes": 12, "process-ns": 1.5}}
    assert MetricsSnapshot.decode(snapshot.encode()) == snapshot


@pytest.mark.parametrize(
    "value, complaint",
    [
        (b"not json", "not JSON"),
        (b'{"header": {}}', "header and metrics"),
        (b'{"header": {"job-name": "j"}, "metrics": {}}', "lacks job-id"),
        (
            b'{"header": {"job-name": "j", "job-id": "1", "container-name": "0", "source": "s", "host": "h", '
            b'"time": "soon", "reset-time": 0, "version": "1", "samza-version": "1"}, "metrics": {}}',
            "time is 'soon'",
        ),
        (
            b'{"header": {"job-name": "j", "job-id": "1", "container-name": "0", "source": "s", "host": "h", '
            b'"time": 1, "reset-time": 0, "version": "1", "samza-version": "1"}, "metrics": {"g": 3}}',
            "groups",
        ),
    ],
)
def test_a_message_that_is_not_a_snapshot_is_refused_saying_why(value, complaint):
    with pytest.raises(MetricsSnapshotError, match=complaint):
        MetricsSnapshot.decode(value)


def test_the_prometheus_exposition_labels_every_value_with_its_container_source_and_group():
    snapshots = [
        MetricsSnapshot(_header(), {CONTAINER_GROUP: {"process-envelopes": 12, "event-loop-utilization": 0.25}}),
        MetricsSnapshot(
            _header(container_name="1", source="samza-container-1"), {CONTAINER_GROUP: {"process-envelopes": 30}}
        ),
        MetricsSnapshot(
            _header(source="TaskName-Partition 0"),
            {"app": {"seen": 5, "recent": [1, 2], "flag": True, "offset": "17", "none": None}},
        ),
    ]
    text = exposition(lambda: snapshots).decode()
    samples = {
        (s.name, s.labels["container"], s.labels["source"]): (s.value, s.labels)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert samples[("samza_process_envelopes", "0", "samza-container-0")][0] == 12
    assert samples[("samza_process_envelopes", "1", "samza-container-1")][0] == 30
    assert samples[("samza_event_loop_utilization", "0", "samza-container-0")][0] == 0.25
    value, labels = samples[("samza_seen", "0", "TaskName-Partition 0")]
    assert value == 5 and labels == {
        "job": "job",
        "job_id": "1",
        "container": "0",
        "source": "TaskName-Partition 0",
        "group": "app",
    }
    assert samples[("samza_flag", "0", "TaskName-Partition 0")][0] == 1
    assert not any(name in ("samza_recent", "samza_offset", "samza_none") for name, _, _ in samples)
    assert (
        prometheus_name("kafka-topic.x-0-messages-behind-high-watermark")
        == "samza_kafka_topic_x_0_messages_behind_high_watermark"
    )


# -- config -------------------------------------------------------------------------------------


def _job(**entries: str) -> Config:
    base = {
        "job.name": "j",
        "job.factory.class": "thread",
        "task.class": "tests.metrics_apps:CountingTask",
        "task.inputs": "log.in",
        "systems.log.samza.factory": "log",
    }
    base.update({k.replace("__", "."): v for k, v in entries.items()})
    return Config(base)


def test_reporters_are_read_with_samzas_keys_and_defaults():
    config = _job(
        metrics__reporters="snap, prom",
        metrics__reporter__snap__class="org.apache.samza.metrics.reporter.MetricsSnapshotReporterFactory",
        metrics__reporter__snap__stream="log.metrics",
        metrics__reporter__prom__class="prometheus",
        metrics__reporter__prom__interval="5",
    )
    parsed = metrics_config(config)
    snap, prom = parsed.reporters
    assert (snap.kind, snap.stream, snap.interval_s) == ("snapshot", SystemStream("log", "metrics"), 60.0)
    assert (prom.kind, prom.stream, prom.interval_s) == ("prometheus", SystemStream("log", "metrics"), 5.0)
    assert parsed.snapshot_streams == {SystemStream("log", "metrics"): 5.0}  # written once, at the shorter interval
    assert parsed.prometheus is prom
    assert metrics_config(_job()).reporters == ()


@pytest.mark.parametrize(
    "entries, key, message",
    [
        ({"metrics.reporter.r.class": "jmx"}, "metrics.reporter.r.class", "unknown metrics reporter class 'jmx'"),
        ({"metrics.reporter.r.class": "no_such_module:Reporter"}, "metrics.reporter.r.class", "cannot import"),
        ({}, "metrics.reporter.r.class", "is not set"),
        ({"metrics.reporter.r.class": "snapshot"}, "metrics.reporter.r.stream", "is not set"),
        (
            {"metrics.reporter.r.class": "snapshot", "metrics.reporter.r.stream": "metrics"},
            "metrics.reporter.r.stream",
            "expected system.stream",
        ),
        (
            {"metrics.reporter.r.class": "snapshot", "metrics.reporter.r.stream": "kafka.metrics"},
            "metrics.reporter.r.stream",
            "system 'kafka', which is not configured",
        ),
        (
            {
                "metrics.reporter.r.class": "snapshot",
                "metrics.reporter.r.stream": "log.m",
                "metrics.reporter.r.interval": "0",
            },
            "metrics.reporter.r.interval",
            "positive number of seconds",
        ),
        (
            {
                "metrics.reporter.r.class": "snapshot",
                "metrics.reporter.r.stream": "log.m",
                "metrics.reporter.r.interval": "-5",
            },
            "metrics.reporter.r.interval",
            "positive",
        ),
        (
            {
                "metrics.reporter.r.class": "snapshot",
                "metrics.reporter.r.stream": "log.m",
                "metrics.reporter.r.interval": "1m",
            },
            "metrics.reporter.r.interval",
            "'1m'",
        ),
        ({"metrics.reporter.r.class": "prometheus"}, "metrics.reporter.r.stream", "exactly one snapshot reporter"),
    ],
)
def test_a_bad_reporter_config_fails_the_preflight_naming_the_key(entries, key, message):
    config = _job(metrics__reporters="r").with_overrides(entries)
    with pytest.raises(ConfigError, match=message) as err:
        check_job_config(config)
    assert err.value.key == key
    assert key in str(err.value)


def test_samza_dagster_run_refuses_a_bad_reporter_with_exit_2_naming_the_key(tmp_path, capsys):
    from samza_dagster.cli import main

    properties = tmp_path / "job.properties"
    entries = dict(
        _job(
            metrics__reporters="snap",
            metrics__reporter__snap__class="snapshot",
            metrics__reporter__snap__stream="log.metrics",
            metrics__reporter__snap__interval="-1",
        ).items()
    )
    entries["systems.log.log.path"] = str(tmp_path / "log")
    properties.write_text("".join(f"{k}={v}\n" for k, v in entries.items()))
    assert main(["run", "--config-path", str(properties)]) == 2
    assert "metrics.reporter.snap.interval" in capsys.readouterr().err
    assert not (tmp_path / "log").exists()  # refused before any stream was created
