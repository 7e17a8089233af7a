"""Metrics snapshots against Apache Samza 1.8.0's own ``MetricsSnapshotSerde`` (JSON) and
``MetricsSnapshotSerdeV2``: what the engine's reporter writes, Samza reads with every header field
and metric equal (``MetricsHeader.fromMap`` needs ``exec-env-container-id``); what Samza's serdes
write, the engine reads; the reporter writes the form its stream's serde names, as Samza's does."""

from __future__ import annotations

import json

import pytest

from samza_dagster.config import Config
from samza_dagster.metrics.registry import MetricsRegistry
from samza_dagster.metrics.reporter import SnapshotReporter
from samza_dagster.metrics.snapshot import JSON_FORM, V2_FORM, MetricsHeader, MetricsSnapshot
from samza_dagster.model import SystemStream, SystemStreamPartition
from samza_dagster.runtime.preflight import check_serde_names
from samza_dagster.system.factories import system_factory
from tests.samza_interop.harness import SamzaWire, b64, unb64

HEADER = MetricsHeader(
    job_name="clicks",
    job_id="1",
    container_name="samza-container-0",
    source="TaskName-Partition 3",
    host="worker-4",
    time=1_700_000_000_123,
    reset_time=1_699_999_000_000,
    version="0.0.1",
    samza_version="0.1.0",
    exec_env_container_id="container_1700000000_0001_01_000002",
    samza_epoch_id="epoch-7",
)
METRICS = {
    "org.apache.samza.container.TaskInstanceMetrics": {"messages-actually-processed": 1234, "process-ns": 1520.5},
    "org.apache.samza.container.SamzaContainerMetrics": {"process-envelopes": 0, "event-loop-utilization": 0.25},
    "user": {"last-key": "k-17", "recent": ["a", "b"], "running": True},
}
SERDES = {JSON_FORM: "json", V2_FORM: "v2"}


def _samza_view(snapshot: MetricsSnapshot) -> dict:
    header = snapshot.header.to_dict()
    return {"header": header, "metrics": snapshot.metrics}


@pytest.mark.parametrize("form", [JSON_FORM, V2_FORM])
def test_samza_reads_a_snapshot_the_engine_writes_field_by_field(samza: SamzaWire, form: str) -> None:
    snapshot = MetricsSnapshot(HEADER, METRICS, {"user": {"last-key": "gauge"}})
    got = samza.call("metrics.decode", serde=SERDES[form], bytes=b64(snapshot.encode(form)))
    assert got["header"] == _samza_view(snapshot)["header"]
    assert got["metrics"] == METRICS
    if form == V2_FORM:  # Samza's reporter holds a counter's count as a long
        assert got["javaTypes"]["org.apache.samza.container.TaskInstanceMetrics"] == {
            "messages-actually-processed": "java.lang.Long",
            "process-ns": "java.lang.Double",
        }


def test_samza_reads_the_header_of_a_snapshot_with_no_execution_environment(samza: SamzaWire) -> None:
    bare = MetricsHeader(**{**_fields(HEADER), "exec_env_container_id": "", "samza_epoch_id": None})
    got = samza.call("metrics.decode", serde="json", bytes=b64(MetricsSnapshot(bare, METRICS).encode()))
    assert got["header"]["exec-env-container-id"] == "" and "samza-epoch-id" not in got["header"]


def _fields(header: MetricsHeader) -> dict:
    return {name: getattr(header, name) for name in header.__slots__}


@pytest.mark.parametrize("form", [JSON_FORM, V2_FORM])
def test_the_engine_reads_a_snapshot_samzas_serdes_write(samza: SamzaWire, form: str) -> None:
    written = unb64(samza.call("metrics.encode", serde=SERDES[form], header=HEADER.to_dict(), metrics=METRICS)["bytes"])
    snapshot = MetricsSnapshot.decode(written)
    assert snapshot.header == HEADER
    assert snapshot.metrics == METRICS
    # and writes the same structure back: every type wrapper where Samza put one
    assert json.loads(snapshot.encode(form)) == json.loads(written)


def _config(tmp_path, **extra: str) -> Config:
    return Config(
        {
            "job.name": "clicks",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(tmp_path / "log"),
            **extra,
        }
    )


def _reported(config: Config, stream: SystemStream) -> list[bytes]:
    registry = MetricsRegistry("TaskName-Partition 0")
    registry.new_counter("org.apache.samza.container.TaskInstanceMetrics", "messages-actually-processed").inc(41)
    registry.new_gauge("user", "lag", default=0).set(7)
    reporter = SnapshotReporter(config, "samza-container-0", stream, 3600.0)
    reporter.register("TaskName-Partition 0", registry)
    reporter.start()
    reporter.stop()
    consumer = system_factory(config, "log").get_consumer("log", config)
    ssps = [SystemStreamPartition("log", stream.stream, 0)]
    consumer.register(ssps[0], "0")
    consumer.start()
    try:
        return [e.message for e in consumer.poll(ssps, 1.0).get(ssps[0], []) if not e.is_end_of_stream]
    finally:
        consumer.stop()


@pytest.mark.parametrize(
    "serde_config, serde",
    [
        ({}, "json"),
        (
            {
                "serializers.registry.metrics.class": "org.apache.samza.serializers.MetricsSnapshotSerdeV2Factory",
                "streams.metrics.samza.system": "log",
                "streams.metrics.samza.physical.name": "metrics",
                "streams.metrics.samza.msg.serde": "metrics",
            },
            "v2",
        ),
        (
            {
                "serializers.registry.m.class": "org.apache.samza.serializers.MetricsSnapshotSerdeV2Factory",
                "systems.log.samza.msg.serde": "m",
            },
            "v2",
        ),
        (
            {
                "serializers.registry.m.class": "org.apache.samza.serializers.MetricsSnapshotSerdeFactory",
                "systems.log.samza.msg.serde": "m",
            },
            "json",
        ),
    ],
    ids=["unconfigured", "stream-serde-v2", "system-serde-v2", "system-serde-json"],
)
def test_the_reporter_writes_what_its_streams_serde_names_and_samza_reads_it(
    samza: SamzaWire, tmp_path, serde_config: dict, serde: str
) -> None:
    config = _config(tmp_path, **serde_config)
    check_serde_names(config)  # Samza's factory class names pass the pre-flight: the engine has their serdes
    snapshots = _reported(config, SystemStream("log", "metrics"))
    assert len(snapshots) == 2  # one when it starts, one when it stops
    for data in snapshots:
        got = samza.call("metrics.decode", serde=serde, bytes=b64(data))
        assert got["metrics"]["org.apache.samza.container.TaskInstanceMetrics"]["messages-actually-processed"] == 41
        assert got["metrics"]["user"]["lag"] == 7
        assert got["header"] == MetricsSnapshot.decode(data).header.to_dict()
        assert (got["header"]["job-name"], got["header"]["container-name"]) == ("clicks", "samza-container-0")
