"""The coordinator-stream sensor against a real coordinator stream on the log: a set-config
written by the CLI's writer yields exactly one reconfiguration RunRequest with the new value; a
second evaluation none; a malformed message in between changes nothing; a delete reverting a key
to the .properties value is a change too; enabling the sensor on a stream the job already wrote
takes it as the baseline; an unreadable stream is one warning line and a skipped tick. (The
sensor against a live run: tests/orchestration/test_dagster_streaming.py.)"""

from __future__ import annotations

import dagster as dg
import pytest

from jobs.wordcount import definitions as wordcount
from samza_dagster.config import Config
from samza_dagster.coordinator.stream.reader_writer import CoordinatorStreamLocation
from samza_dagster.coordinator.stream.writer_tool import run_coordinator_stream_writer
from samza_dagster.orchestration import SamzaSystemsResource, SparkResource, op_name, stream_assets
from samza_dagster.planner import configured_plan
from samza_dagster.system import OutgoingMessageEnvelope, system_factory


@pytest.fixture
def setup(tmp_path):
    systems = SamzaSystemsResource(log_path=str(tmp_path / "log"))
    defs = wordcount.definitions()
    (sensor,) = [s for s in defs.sensors if s.name == "wordcount_coordinator_stream_sensor"]
    config = systems.apply(Config.from_properties(wordcount.CONFIG_PATH))
    instance = dg.DagsterInstance.ephemeral()
    yield systems, sensor, config, instance
    instance.dispose()


def _evaluate(sensor, instance, systems, cursor):
    context = dg.build_sensor_context(instance=instance, cursor=cursor, resources={"samza_systems": systems})
    return sensor.evaluate_tick(context)


def _write_raw(config: Config, key: bytes, value: bytes) -> None:
    where = CoordinatorStreamLocation.from_config(config)
    producer = system_factory(config, where.system).get_producer(where.system, config)
    producer.register("test")
    producer.start()
    producer.send("test", OutgoingMessageEnvelope(where.system_stream, value, key=key, partition=0))
    producer.flush("test")
    producer.stop()


def test_set_config_requests_exactly_one_reconfiguration_run(setup):
    systems, sensor, config, instance = setup
    first = _evaluate(sensor, instance, systems, None)
    assert not first.run_requests and "no coordinator stream" in first.skip_message
    assert first.cursor == "start"  # the stream's first change will be read from its beginning

    run_coordinator_stream_writer(config, "set-config", "task.commit.ms", "250")
    result = _evaluate(sensor, instance, systems, first.cursor)
    (request,) = result.run_requests
    op = op_name(stream_assets(configured_plan(config), application="wordcount"))
    assert request.run_config["ops"][op]["config"]["overrides"] == {"task.commit.ms": "250"}
    assert request.run_key == "wordcount-1@0" and request.tags["samza/changed-keys"] == "task.commit.ms"
    assert request.tags["samza/job-instance"] == "wordcount-1"
    cursor = result.cursor
    assert cursor == "1"

    again = _evaluate(sensor, instance, systems, cursor)
    assert not again.run_requests

    # a malformed message (not JSON) and a set-config to the value it already has: no change
    _write_raw(config, b"not json", b"{broken")
    run_coordinator_stream_writer(config, "set-config", "task.commit.ms", "250")
    after_bad = _evaluate(sensor, instance, systems, cursor)
    assert not after_bad.run_requests and after_bad.cursor == "3"

    # a real change after the bad message is still seen, with the whole stream's config
    run_coordinator_stream_writer(config, "set-config", "task.window.ms", "5000")
    changed = _evaluate(sensor, instance, systems, after_bad.cursor)
    (request,) = changed.run_requests
    assert request.run_key == "wordcount-1@3"
    assert request.run_config["ops"][op]["config"]["overrides"] == {"task.commit.ms": "250", "task.window.ms": "5000"}

    # deleting a key reverts it to the .properties value (1000): a change
    run_coordinator_stream_writer(config, "delete", "task.commit.ms", None)
    reverted = _evaluate(sensor, instance, systems, changed.cursor)
    (request,) = reverted.run_requests
    assert request.run_config["ops"][op]["config"]["overrides"] == {"task.window.ms": "5000"}
    assert request.tags["samza/changed-keys"] == "task.commit.ms"


def test_the_reconfiguration_run_uses_the_new_value(setup, tmp_path):
    """The RunRequest's run config is accepted by the job and reaches the Samza job's config."""
    systems, sensor, config, instance = setup
    from jobs.wordcount.sample import load_sentences

    load_sentences(config)
    run_coordinator_stream_writer(config, "set-config", "task.commit.ms", "500")
    (request,) = _evaluate(sensor, instance, systems, "start").run_requests
    bound = dg.Definitions(resources={"samza_systems": systems, "spark": SparkResource()})  # the backfill's
    defs = dg.Definitions.merge(bound, wordcount.definitions())
    result = defs.resolve_job_def("wordcount_job").execute_in_process(
        run_config=request.run_config, instance=instance, tags=request.tags
    )
    assert result.success
    assert result.dagster_run.tags["samza/coordinator-offset"] == "0"
    logs = [entry.user_message for entry in instance.all_logs(result.run_id)]
    assert any("config overrides {'task.commit.ms': '500'}" in (m or "") for m in logs)


def test_enabling_the_sensor_on_a_job_that_ran_takes_the_stream_as_its_baseline(setup):
    """The job's own submission (the resolved config, log path included) is no change: enabling
    the sensor requests nothing; a writer's change after it does."""
    from samza_dagster.coordinator.stream.submission import submit_job_config

    systems, sensor, config, instance = setup
    submit_job_config(config)  # what a launch writes
    enabled = _evaluate(sensor, instance, systems, None)
    assert not enabled.run_requests and "baseline" in enabled.skip_message
    submit_job_config(config.with_overrides({"task.commit.ms": "2000"}))  # a launch with an override: its own write
    own = _evaluate(sensor, instance, systems, enabled.cursor)
    assert not own.run_requests
    run_coordinator_stream_writer(config, "set-config", "app.note", "x")
    (request,) = _evaluate(sensor, instance, systems, own.cursor).run_requests
    # the stream's values that differ from the deployed config, the earlier launch's override included
    op = op_name(stream_assets(configured_plan(config), application="wordcount"))
    assert request.run_config["ops"][op]["config"]["overrides"] == {"app.note": "x", "task.commit.ms": "2000"}


def test_an_unreadable_coordinator_stream_is_one_warning_and_a_skipped_tick(setup, tmp_path, capfd):
    systems, sensor, config, instance = setup
    run_coordinator_stream_writer(config, "set-config", "task.commit.ms", "250")
    (tmp_path / "log" / "__samza_coordinator_wordcount_1.db").write_bytes(b"not a SQLite database" * 100)
    result = _evaluate(sensor, instance, systems, "start")
    assert not result.run_requests and "unreadable" in result.skip_message
    err = capfd.readouterr().err
    (warning,) = [line for line in err.splitlines() if "cannot read the coordinator stream" in line]
    assert "WARNING" in warning and "log.__samza_coordinator_wordcount_1" in warning and "not a database" in warning
    assert "Traceback" not in err


def test_observation_sensor_reports_new_offsets_once(setup):
    systems, _, config, instance = setup
    from jobs.wordcount.sample import load_sentences

    (sensor,) = [s for s in wordcount.definitions().sensors if s.name == "wordcount_stream_observation_sensor"]
    load_sentences(config)
    first = _evaluate(sensor, instance, systems, None)
    event, replay = first.asset_events  # sorted by stream id; the batch stream is empty
    assert replay.asset_key == dg.AssetKey(["wordcount", "sentences_replay"])
    assert replay.tags["dagster/data_version"] == "0:-,1:-"
    assert event.asset_key == dg.AssetKey(["wordcount", "sentences"])
    assert event.tags["dagster/data_version"] == "0:1,1:1"
    assert event.metadata["messages"].value == 4
    assert not _evaluate(sensor, instance, systems, first.cursor).asset_events
    load_sentences(config, ["one more"])
    second = _evaluate(sensor, instance, systems, first.cursor)
    (changed,) = second.asset_events
    assert changed.tags["dagster/data_version"] == "0:1,1:2"
    # a tick that only records shows as skipped in the UI: its reason names what it recorded
    assert second.skip_message == "observed new messages in sentences"
