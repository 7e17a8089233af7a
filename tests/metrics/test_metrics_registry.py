"""Samza's metric types and registry, the snapshot JSON, the Prometheus exposition of snapshots,
and the reporters' config checks (each a ConfigError naming its key, at pre-flight)."""

from __future__ import annotations

import json

import pytest
from prometheus_client.parser import text_string_to_metric_families

from samza_dagster.config import Config, ConfigError
from samza_dagster.metrics import (
    CACHED_STORE_GROUP,
    CONTAINER_GROUP,
    LOG_CONSUMER_GROUP,
    TASK_GROUP,
    MetricsHeader,
    MetricsRegistry,
    MetricsSnapshot,
    MetricsSnapshotError,
)
from samza_dagster.metrics.config import metrics_config
from samza_dagster.metrics.errors import MetricsError
from samza_dagster.metrics.groups import OPERATOR_GROUP
from samza_dagster.metrics.prometheus import exposition
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
        "exec-env-container-id",
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


def _families(text: str) -> dict[str, object]:
    return {family.name: family for family in text_string_to_metric_families(text)}


def test_the_prometheus_exposition_follows_prometheus_naming_conventions():
    """Parsed back by prometheus_client's own parser: counters are counters (``_total``), timers
    are seconds, memory bytes; the partition, store and operator a Samza name carries are labels;
    every family has a HELP line that says more than its name."""
    snapshots = [
        MetricsSnapshot(
            _header(),
            {
                CONTAINER_GROUP: {
                    "process-envelopes": 12,
                    "process-ns": 1500.0,
                    "physical-memory-mb": 2.0,
                    "event-loop-utilization": 0.25,
                },
                LOG_CONSUMER_GROUP: {
                    "log-user-signups-1-messages-behind-high-watermark": 3,
                    "log-user-signups-1-high-watermark": 9,
                    "messages-behind-high-watermark": 3,
                },
            },
        ),
        MetricsSnapshot(
            _header(container_name="1", source="samza-container-1"), {CONTAINER_GROUP: {"process-envelopes": 30}}
        ),
        MetricsSnapshot(
            _header(source="TaskName-Partition 1"),
            {
                TASK_GROUP: {"log-user-signups-1-messages-processed": 6, "log-user-signups-1-offset": "8"},
                CACHED_STORE_GROUP: {"counts-cache-hits": 4, "counts-cache-size": 2},
                OPERATOR_GROUP: {"late_messages": 1, "late_messages.hourly": 1},
                "app": {"seen": 5, "took-ns": 2_000_000.0, "level": 3, "recent": [1, 2], "flag": True, "none": None},
            },
            {"app": {"seen": "counter", "took-ns": "timer"}},
        ),
    ]
    text = exposition(lambda: snapshots, ["log"]).decode()
    families = _families(text)

    def sample(family: str, **labels: str):
        (found,) = [s for s in families[family].samples if all(s.labels.get(k) == v for k, v in labels.items())]
        return found

    envelopes = families["samza_process_envelopes"]
    assert envelopes.type == "counter"
    assert {(s.name, s.labels["container"], s.value) for s in envelopes.samples} == {
        ("samza_process_envelopes_total", "0", 12),
        ("samza_process_envelopes_total", "1", 30),
    }
    assert families["samza_process_seconds"].type == "gauge" and sample("samza_process_seconds").value == 1.5e-06
    assert sample("samza_physical_memory_bytes").value == 2 * 2**20
    assert sample("samza_event_loop_utilization_ratio").value == 0.25
    # the partition is labels, never part of a name
    assert not any(any(ch.isdigit() for ch in name) for name in families), sorted(families)
    lag = sample("samza_messages_behind_high_watermark", stream="user-signups")
    assert lag.value == 3 and (lag.labels["system"], lag.labels["partition"]) == ("log", "1")
    processed = sample("samza_messages_processed", stream="user-signups")
    assert families["samza_messages_processed"].type == "counter" and processed.name.endswith("_total")
    assert processed.labels["task"] == "Partition 1" and processed.value == 6
    assert sample("samza_offset", partition="1").value == 8
    assert sample("samza_container_messages_behind_high_watermark").value == 3
    assert sample("samza_store_cache_hits", store="counts").name == "samza_store_cache_hits_total"
    assert sample("samza_store_cache_entries", store="counts").value == 2
    assert sample("samza_operator_late_messages", operator="hourly").value == 1
    assert sample("samza_late_messages").value == 1
    # a task's own metrics, by the kinds its snapshot recorded
    assert families["samza_seen"].type == "counter" and sample("samza_seen").name == "samza_seen_total"
    assert sample("samza_took_seconds").value == 0.002
    assert families["samza_level"].type == "gauge" and sample("samza_flag").value == 1
    assert sample("samza_seen").labels == {
        "job": "job",
        "job_id": "1",
        "container": "0",
        "task": "Partition 1",
        "source": "TaskName-Partition 1",
        "group": "app",
    }
    assert not any(name in ("samza_recent", "samza_none") for name in families)
    assert envelopes.documentation == "envelopes processed by the container's tasks"
    assert families["samza_messages_behind_high_watermark"].documentation.startswith(
        "messages of the partition not yet"
    )
    for name, family in families.items():
        assert family.documentation and not family.documentation.startswith("Samza metric"), (name, family)


def test_a_snapshot_records_the_kind_of_each_counter_and_timer():
    registry = MetricsRegistry("TaskName-Partition 0")
    registry.new_counter("app", "seen")
    registry.new_timer("app", "took-ns")
    registry.new_gauge("app", "level", 0)
    snapshot = MetricsSnapshot(_header(), registry.snapshot(), registry.kinds())
    again = MetricsSnapshot.decode(snapshot.encode())
    assert again.types == {"app": {"seen": "counter", "took-ns": "timer"}}
    assert again.kind("app", "seen") == "counter" and again.kind("app", "level") is None
    # Samza's own snapshots have no types: read as before
    assert MetricsSnapshot.decode(json.dumps({"header": _header().to_dict(), "metrics": {}})).types == {}


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


def test_a_v2_snapshot_wraps_maps_lists_and_longs_and_reads_back():
    snapshot = MetricsSnapshot(_header(exec_env_container_id="c-1"), {"g": {"n": 3, "avg": 1.5, "l": [["x"], 2]}})
    data = json.loads(snapshot.encode("v2"))
    assert data["header"][0] == "java.util.HashMap" and data["header"][1]["time"] == [
        "java.lang.Long",
        1_700_000_000_000,
    ]
    assert data["metrics"] == [
        "java.util.HashMap",
        {
            "g": [
                "java.util.HashMap",
                {
                    "n": ["java.lang.Long", 3],
                    "avg": 1.5,
                    "l": ["java.util.ArrayList", [["java.util.ArrayList", ["x"]], ["java.lang.Long", 2]]],
                },
            ]
        },
    ]
    assert MetricsSnapshot.decode(snapshot.encode("v2")) == snapshot


def test_a_snapshot_this_engine_wrote_before_without_exec_env_container_id_still_reads():
    old = json.loads(MetricsSnapshot(_header(), {"g": {"n": 1}}).encode())
    del old["header"]["exec-env-container-id"]
    assert MetricsSnapshot.decode(json.dumps(old)).header == _header()
