"""Dagster's operator conventions on the code location: role tags from the chooser's priority and
bootstrap settings, owners and kinds, freshness on an unbounded job's outputs, the lag and
end-of-stream checks, the failure sensor recording a failed Samza job on its outputs, a launch
warning about the coordinator-stream values it replaces, the progress backoff, and the
``dagster.*`` settings rejecting bad values by key."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from jobs.wordcount import definitions as wordcount
from jobs.wordcount.sample import load_sentences
from samza_dagster.config import Config, ConfigError
from samza_dagster.coordinator.stream.writer_tool import run_coordinator_stream_writer
from samza_dagster.orchestration import DagsterSettings, SamzaSystemsResource, application_definitions
from samza_dagster.orchestration.supervision import next_progress_interval

ROLE = "samza/role"


@pytest.fixture(scope="module")
def specs() -> dict[dg.AssetKey, dg.AssetSpec]:
    import definitions

    graph = definitions.defs.resolve_asset_graph()
    return {key: graph.get(key) for key in graph.get_all_asset_keys()}


def _role(specs, app: str, stream: str) -> str:
    return specs[dg.AssetKey([app, stream])].tags[ROLE]


def test_roles_come_from_priorities_and_bootstrap_not_from_boundedness(specs):
    # user_classification: signups priority 1, reclassify requests priority 0, both unbounded
    assert _role(specs, "user_classification", "user_signups") == "real-time"
    assert _role(specs, "user_classification", "reclassify_requests") == "batch"
    # wordcount: both inputs bounded, told apart by priority (1 real-time, 0 batch)
    assert _role(specs, "wordcount", "sentences") == "real-time"
    assert _role(specs, "wordcount", "sentences_replay") == "batch"
    assert _role(specs, "currency_join", "currency_codes") == "bootstrap"
    assert _role(specs, "pageview_pipeline", "user_profiles") == "side-input"
    assert _role(specs, "pageview_pipeline", "country_counts") == "output"


def test_owners_kinds_and_freshness(specs):
    out = specs[dg.AssetKey(["user_classification", "user_country"])]
    assert out.owners == ["team:streaming"]
    assert {"samza", "log"} <= set(out.kinds)
    # an unbounded job's output has a freshness policy; a bounded job's has none
    assert out.freshness_policy is not None
    assert specs[dg.AssetKey(["wordcount", "words"])].freshness_policy is None


def test_outputs_carry_the_lag_check_and_bounded_jobs_the_end_of_stream_check():
    import definitions

    checks = {
        (k.asset_key.path[0], k.asset_key.path[1], k.name)
        for k in definitions.defs.resolve_asset_graph().asset_check_keys
    }
    assert ("user_classification", "user_country", "consumer_lag") in checks
    assert ("user_classification", "user_country", "reached_end_of_stream") not in checks
    assert ("wordcount", "words", "reached_end_of_stream") in checks
    assert ("pageview_pipeline", "country_counts", "reached_end_of_stream") in checks


class FailingTask:
    def process(self, envelope, collector, coordinator):
        raise ValueError(f"cannot digest {envelope.message}")


def test_the_failure_sensor_records_a_failed_job_on_its_outputs(tmp_path: Path):
    systems = SamzaSystemsResource(log_path=str(tmp_path / "log"))
    config = Config(
        {
            "job.name": "boom",
            "job.factory.class": "thread",
            "task.class": f"{__name__}:FailingTask",
            "task.inputs": "log.in",
            "systems.log.samza.msg.serde": "string",
            "streams.in.partitions": "1",
            "streams.out.partitions": "1",
        }
    )
    load_sentences(systems.apply(config), ["boom"], stream="in", partitions=1)
    defs = dg.Definitions.merge(
        dg.Definitions(resources={"samza_systems": systems}),
        application_definitions("boom", config, declared_outputs=["log.out"]),
    )
    instance = dg.DagsterInstance.ephemeral()
    result = defs.resolve_job_def("boom_job").execute_in_process(instance=instance, raise_on_error=False)
    assert not result.success
    (sensor,) = [s for s in defs.sensors if s.name == "boom_job_failure_sensor"]
    failure = instance.all_logs(result.run_id, of_type=dg.DagsterEventType.RUN_FAILURE)[0]
    context = dg.build_run_status_sensor_context(
        sensor_name=sensor.name,
        dagster_instance=instance,
        dagster_run=result.dagster_run,
        dagster_event=failure.dagster_event,
    ).for_run_failure()
    sensor(context)
    record = instance.fetch_observations(dg.AssetKey(["boom", "out"]), limit=1).records[0]
    observation = record.asset_observation
    assert observation.metadata["job_status"].value == "failed"
    assert "cannot digest boom" in observation.metadata["error"].value
    assert observation.metadata["failed_run"].value == result.run_id


def test_a_launch_keeps_coordinator_stream_values_unless_overridden_explicitly(tmp_path: Path):
    """A relaunch never reverts a reconfiguration made on the coordinator stream; an explicit
    override does, and says so in the log and the run's tags."""
    from samza_dagster.coordinator.stream.reader_writer import CoordinatorStreamReader

    systems = SamzaSystemsResource(log_path=str(tmp_path / "log"))
    config = systems.apply(Config.from_properties(wordcount.CONFIG_PATH))
    load_sentences(config)
    run_coordinator_stream_writer(config, "set-config", "task.commit.ms", "250")
    defs = dg.Definitions.merge(
        dg.Definitions(resources={"samza_systems": systems, "spark": dg.ResourceDefinition.none_resource()}),
        wordcount.definitions(),
    )
    instance = dg.DagsterInstance.ephemeral()
    job = defs.resolve_job_def("wordcount_job")

    def submitted() -> str | None:
        with CoordinatorStreamReader(config) as reader:
            state, _ = reader.read_state()
        return state.config.get("task.commit.ms")

    plain = job.execute_in_process(instance=instance)
    logs = [e.user_message or "" for e in instance.all_logs(plain.run_id)]
    assert any(
        "keeping the coordinator stream's task.commit.ms='250' (set by coordinator-stream-writer at offset 0; "
        "the deployed config has '1000')" in m
        for m in logs
    ), logs
    assert submitted() == "250" and "samza/replaced-coordinator-config" not in instance.get_run_by_id(plain.run_id).tags
    again = job.execute_in_process(instance=instance)  # its own re-submission does not make 250 the job's
    assert any(
        "keeping the coordinator stream's task.commit.ms='250'" in (e.user_message or "")
        for e in instance.all_logs(again.run_id)
    )
    assert submitted() == "250"

    overridden = job.execute_in_process(
        instance=instance,
        run_config={"ops": {"wordcount_samza_job": {"config": {"overrides": {"task.commit.ms": "500"}}}}},
    )
    (warning,) = [
        e.user_message
        for e in instance.all_logs(overridden.run_id)
        if "replace coordinator stream values" in (e.user_message or "")
    ]
    assert "task.commit.ms: '250' (set by coordinator-stream-writer at offset 0) -> '500'" in warning
    assert instance.get_run_by_id(overridden.run_id).tags["samza/replaced-coordinator-config"] == "task.commit.ms"
    assert submitted() == "500"


def test_progress_logging_backs_off_while_nothing_moves_and_resets_when_it_does():
    settings = DagsterSettings(progress_interval_s=5.0, progress_max_interval_s=300.0)
    interval = settings.progress_interval_s
    seen = []
    for _ in range(8):
        interval = next_progress_interval(interval, False, settings)
        seen.append(interval)
    assert seen == [10.0, 20.0, 40.0, 80.0, 160.0, 300.0, 300.0, 300.0]
    assert next_progress_interval(300.0, True, settings) == 5.0


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("dagster.owners", "streaming people"),
        ("dagster.check.lag.warn.messages", "-1"),
        ("dagster.check.lag.error.messages", "5"),  # below the warn default
        ("dagster.freshness.fail.window.ms", "1000"),  # not above the warn window
        ("dagster.materialization.interval.ms", "soon"),
    ],
)
def test_bad_dagster_settings_are_rejected_naming_the_key(key, value):
    with pytest.raises(ConfigError) as error:
        DagsterSettings.from_config(Config({key: value}))
    assert key in str(error.value)


def _wordcount_launch(tmp_path: Path, overrides: dict[str, str]):
    """wordcount_job launched with launchpad overrides on a real (ephemeral) instance."""
    systems = SamzaSystemsResource(log_path=str(tmp_path / "log"))
    config = systems.apply(Config.from_properties(wordcount.CONFIG_PATH))
    load_sentences(config)
    defs = dg.Definitions.merge(
        dg.Definitions(resources={"samza_systems": systems, "spark": dg.ResourceDefinition.none_resource()}),
        wordcount.definitions(),
    )
    instance = dg.DagsterInstance.ephemeral()
    result = defs.resolve_job_def("wordcount_job").execute_in_process(
        instance=instance,
        raise_on_error=False,
        run_config={"ops": {"wordcount_samza_job": {"config": {"overrides": overrides}}}},
    )
    return result, instance, config


def test_a_bad_override_fails_the_launch_naming_the_key_before_anything_starts(tmp_path: Path):
    result, _, _ = _wordcount_launch(tmp_path, {"task.commit.ms": "1s"})
    assert not result.success
    (failure,) = [e for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_FAILURE]
    message = failure.step_failure_data.error.message
    # the pre-flight's one line, not a container's failure after the job had started
    assert "job wordcount: config key 'task.commit.ms' must be an integer, got '1s'" in message, message
    assert "container" not in message
    assert not (tmp_path / "log" / "words.db").exists()  # no output stream created: the job never started


def test_a_mistyped_override_fails_the_launch_naming_the_key_it_meant(tmp_path: Path):
    result, _, _ = _wordcount_launch(tmp_path, {"streams.sentences.samza.bouned": "true"})
    assert not result.success
    (failure,) = [e for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_FAILURE]
    message = failure.step_failure_data.error.message
    assert "'streams.sentences.samza.bouned'" in message, message
    assert "did you mean 'streams.sentences.samza.bounded'" in message, message
    assert not (tmp_path / "log" / "words.db").exists()


def test_a_mistyped_override_is_a_warning_in_the_run_log_when_relaxed(tmp_path: Path):
    result, instance, _ = _wordcount_launch(
        tmp_path, {"streams.sentences.samza.bouned": "true", "job.config.misspelled.keys": "warn"}
    )
    assert result.success
    warnings = [e.user_message for e in instance.all_logs(result.run_id) if e.level == 30]  # logging.WARNING
    assert any(
        "'streams.sentences.samza.bouned'" in w and "did you mean 'streams.sentences.samza.bounded'" in w
        for w in warnings
    ), warnings


def test_dagster_settings_overridden_at_launch_apply_to_that_run(tmp_path: Path):
    result, instance, _ = _wordcount_launch(
        tmp_path, {"dagster.check.lag.warn.messages": "7", "dagster.check.lag.error.messages": "9"}
    )
    assert result.success
    (evaluation,) = [
        e.event_specific_data
        for e in result.all_events
        if e.event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION
        and e.event_specific_data.check_name == "consumer_lag"
    ]
    assert evaluation.metadata["warn_above"].value == 7
    assert evaluation.metadata["error_above"].value == 9
