"""The Dagster layer in process: stream assets from a plan (keys, groups, roles, lineage), the
wordcount job materialized on a real log in a tmp dir (asset metadata asserted against what the
log holds), a failing container failing the run with its error, an unreachable Kafka failing
fast with its address, and a rejected plan contained to its application."""

from __future__ import annotations

import socket
from pathlib import Path

import dagster as dg
import pytest

from jobs.wordcount import definitions as wordcount
from jobs.wordcount.sample import SENTENCES, load_sentences, word_count
from samza_dagster.application import StreamApplication, SystemDescriptor
from samza_dagster.config import Config
from samza_dagster.orchestration import SamzaSystemsResource, SparkResource, application_definitions, stream_assets
from samza_dagster.planner import ExecutionPlanner
from samza_dagster.system import system_factory
from samza_dagster.task import StreamTask


def _key(m):
    return m


class Enrich(StreamApplication):
    """A bootstrap side of profiles and real-time clicks, repartitioned, sent to an output."""

    def describe(self, app):
        kafka = SystemDescriptor("kafka")
        clicks = app.get_input_stream(kafka.input("clicks"))
        profiles = app.get_input_stream(kafka.input("profiles"))
        out = app.get_output_stream(kafka.output("enriched"))
        clicks.merge(profiles).partition_by(_key, op_id="by-user").send_to(out)


def test_stream_assets_follow_the_plan_roles_priorities_and_lineage():
    config = {
        "job.name": "enrich",
        "systems.kafka.samza.factory": "kafka",
        "streams.profiles.samza.bootstrap": "true",
    }
    plan = ExecutionPlanner(config, {"clicks": 4, "profiles": 4, "enriched": 2}).plan(Enrich())
    assets = stream_assets(plan, application="enrich")
    specs = {s.key: s for s in (*assets.read_specs, *assets.written_specs)}
    inter = "enrich-1-partition_by-by-user"
    key = lambda sid: dg.AssetKey(["enrich", sid])  # noqa: E731
    assert set(specs) == {key("clicks"), key("profiles"), key("enriched"), key(inter)}
    assert {s.group_name for s in specs.values()} == {"enrich"}
    roles = {k.path[1]: s.tags["samza/role"] for k, s in specs.items()}
    assert roles == {"clicks": "real-time", "profiles": "bootstrap", inter: "intermediate", "enriched": "output"}
    # bootstrap streams default to one above the highest configured priority
    assert specs[key("profiles")].tags["samza/priority"] == "1" and specs[key("clicks")].tags["samza/priority"] == "0"
    assert specs[key("clicks")].metadata["partitions"].value == 4
    assert specs[key(inter)].metadata["partitions"].value == 4  # inferred from the inputs
    assert {d.asset_key for d in specs[key(inter)].deps} == {key("clicks"), key("profiles")}
    assert {d.asset_key for d in specs[key("enriched")].deps} == {key(inter)}
    assert {s.key for s in assets.read_specs} == {key("clicks"), key("profiles")}


@pytest.fixture
def systems(tmp_path: Path) -> SamzaSystemsResource:
    return SamzaSystemsResource(log_path=str(tmp_path / "log"))


def _job_asset(defs: dg.Definitions) -> dg.AssetsDefinition:
    # the job's multi-asset (not the daily-partitioned reprocessing backfill)
    (job_asset,) = [
        a
        for a in defs.assets
        if isinstance(a, dg.AssetsDefinition) and a.partitions_def is None and not a.is_observable
    ]
    return job_asset


def _metadata(event) -> dict:
    return {k: v.value for k, v in event.metadata.items()}


def test_wordcount_materializes_words_with_offsets_and_counts(systems):
    config = systems.apply(Config.from_properties(wordcount.CONFIG_PATH))
    assert config["job.factory.class"] == "thread"
    load_sentences(config)
    result = dg.materialize(
        [_job_asset(wordcount.definitions())],
        resources={"samza_systems": systems},
        instance=dg.DagsterInstance.ephemeral(),
    )
    assert result.success
    (mat,) = result.get_asset_materialization_events()
    assert mat.asset_key == dg.AssetKey(["wordcount", "words"])
    md = _metadata(mat.materialization)
    # what the log holds, partition by partition
    admin = system_factory(config, "log").get_admin("log", config)
    words = admin.get_system_stream_metadata(["words"])["words"].partitions
    assert md["partitions"] == 2
    assert md["messages_written"] == word_count(SENTENCES) == sum(int(m.upcoming_offset) for m in words.values())
    for p, m in words.items():
        assert md[f"partition_{p}_upcoming_offset"] == int(m.upcoming_offset)
        assert md[f"partition_{p}_messages_written"] == int(m.upcoming_offset)
    assert md["messages_processed"] == len(SENTENCES)
    # the batch input (the reprocessing backfill's) is empty: nothing processed from it
    assert md["messages_processed_per_stream"] == {"log.sentences": len(SENTENCES), "log.sentences_replay": 0}
    assert md["job_status"] == "completed"
    # the input was observed before the run (data version = newest offsets) and its progress after
    observations = [e for e in result.get_asset_observation_events() if e.asset_key.path == ["wordcount", "sentences"]]
    before, after = (e.asset_observation_data.asset_observation for e in observations)
    assert before.tags["dagster/data_version"] == "0:1,1:1"
    assert _metadata(before)["messages"] == len(SENTENCES)
    assert _metadata(after)["progress"] == 1.0 and _metadata(after)["processed_by_run"] == len(SENTENCES)

    # a second run over the same bounded input reads nothing new: its checkpoint is at the end
    again = dg.materialize(
        [_job_asset(wordcount.definitions())],
        resources={"samza_systems": systems},
        instance=dg.DagsterInstance.ephemeral(),
    )
    (mat2,) = again.get_asset_materialization_events()
    assert _metadata(mat2.materialization)["messages_written"] == 0
    assert _metadata(mat2.materialization)["messages"] == md["messages_written"]


class BoomTask(StreamTask):
    def process(self, envelope, collector, coordinator):
        if envelope.message == "boom":
            raise ValueError("cannot digest boom")


def _boom_config(tmp_path: Path) -> Config:
    return Config(
        {
            "job.name": "boom",
            "job.factory.class": "thread",
            "task.class": f"{__name__}:BoomTask",
            "task.inputs": "log.in",
            "systems.log.samza.msg.serde": "string",
            "streams.in.partitions": "1",
            "streams.out.partitions": "1",
        }
    )


def test_a_failed_container_fails_the_run_with_the_containers_error(tmp_path, systems):
    config = _boom_config(tmp_path)
    load_sentences(systems.apply(config), ["fine", "boom"], stream="in", partitions=1)
    defs = application_definitions("boom", config, declared_outputs=["log.out"])
    result = dg.materialize(
        [_job_asset(defs)],
        resources={"samza_systems": systems},
        instance=dg.DagsterInstance.ephemeral(),
        raise_on_error=False,
    )
    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    text = str(failure.step_failure_data.error)
    assert "cannot digest boom" in text and "job boom failed" in text


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_kafka_fails_the_op_naming_the_address(tmp_path):
    port = _closed_port()
    systems = SamzaSystemsResource(
        log_path=str(tmp_path / "log"), kafka_bootstrap_servers=f"127.0.0.1:{port}", kafka_bootstrap_timeout_ms=1000
    )
    config = _boom_config(tmp_path).with_overrides({"task.inputs": "kafka.in", "streams.in.samza.system": "kafka"})
    defs = application_definitions("boom", config, declared_outputs=["log.out"])
    # the bootstrap timeout (1 s) ends it; the test's own timeout guards against a hang
    result = dg.materialize(
        [_job_asset(defs)],
        resources={"samza_systems": systems},
        instance=dg.DagsterInstance.ephemeral(),
        raise_on_error=False,
    )
    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    assert f"127.0.0.1:{port}" in str(failure.step_failure_data.error)


def test_a_rejected_plan_is_contained_to_its_application(systems, caplog):
    bad = Config({"job.name": "broken", "task.inputs": "log.in"})  # neither app.class nor task.class
    broken = application_definitions("broken", bad)
    bound = dg.Definitions(resources={"samza_systems": systems, "spark": SparkResource()})
    merged = dg.Definitions.merge(bound, wordcount.definitions(), broken)
    keys = merged.resolve_asset_graph().get_all_asset_keys()
    assert dg.AssetKey(["broken", "execution_plan"]) in keys and dg.AssetKey(["wordcount", "words"]) in keys
    assert "application broken is not loaded" in caplog.text and "app.class" in caplog.text
    (check,) = broken.asset_checks
    result = dg.materialize(
        [*broken.assets, check],
        instance=dg.DagsterInstance.ephemeral(),
        raise_on_error=False,
        selection=dg.AssetSelection.checks(check),
    )
    (evaluation,) = result.get_asset_check_evaluations()
    assert not evaluation.passed and "app.class" in evaluation.description


def test_bootstrap_progress_is_logged_and_reported_as_metadata(systems):
    """A bootstrap stream (profiles) next to a real-time one (sentences): the op says how far the
    bootstrap stream is before the run, and when the job stopped whether it reached its head and
    how long that took — from the DefaultChooser's metrics — as log lines and metadata."""
    config = Config(
        {
            "job.name": "boot",
            "job.factory.class": "thread",
            "task.class": "jobs.wordcount.task:WordSplitTask",
            "task.inputs": "log.profiles,log.sentences",
            "systems.log.samza.msg.serde": "string",
            "systems.log.samza.key.serde": "string",
            "systems.log.samza.offset.default": "oldest",
            "streams.profiles.samza.bootstrap": "true",
            "streams.profiles.samza.bounded": "true",
            "streams.profiles.partitions": "2",
            "streams.sentences.samza.bounded": "true",
            "streams.sentences.partitions": "2",
            "streams.words.partitions": "2",
        }
    )
    resolved = systems.apply(config)
    load_sentences(resolved, ["ann likes tea", "bob likes jam", "cid likes fig"], stream="profiles")
    load_sentences(resolved)
    defs = application_definitions("boot", config, declared_outputs=["log.words"])
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize([_job_asset(defs)], resources={"samza_systems": systems}, instance=instance)
    assert result.success
    (mat,) = result.get_asset_materialization_events()
    boot = _metadata(mat.materialization)["bootstrap"]
    assert set(boot) == {"log.profiles"} and boot["log.profiles"]["caught_up"] is True
    assert boot["log.profiles"]["time_to_head_s"] >= 0 and boot["log.profiles"]["messages_behind"] == 0
    after = [
        _metadata(e.asset_observation_data.asset_observation)
        for e in result.get_asset_observation_events()
        if e.asset_key.path == ["boot", "profiles"]
    ][-1]
    assert after["bootstrap_reached_head"] is True and after["bootstrap_progress"] == 1.0
    assert after["bootstrap_time_to_head_s"] == round(boot["log.profiles"]["time_to_head_s"], 3)
    logs = [e.user_message for e in instance.all_logs(result.run_id)]
    assert any("before the run, bootstrap log.profiles 0/3 (0%)" in m for m in logs)
    assert any("bootstrap stream log.profiles reached its head in" in m for m in logs)
    # the real-time stream is not a bootstrap stream: no bootstrap metadata on it
    sentences = [
        _metadata(e.asset_observation_data.asset_observation)
        for e in result.get_asset_observation_events()
        if e.asset_key.path == ["boot", "sentences"]
    ][-1]
    assert "bootstrap_reached_head" not in sentences and sentences["progress"] == 1.0


def _stale_status(instance: dg.DagsterInstance, defs: dg.Definitions, key: dg.AssetKey):
    """What the UI's "Unsynced" badge shows, computed as the webserver computes it."""
    from dagster._core.definitions.data_version import CachingStaleStatusResolver
    from dagster._core.loader import LoadingContextForTest

    return CachingStaleStatusResolver(instance, defs.resolve_asset_graph(), LoadingContextForTest(instance)).get_status(
        key
    )


def test_an_output_is_in_sync_after_its_run_and_unsynced_once_its_input_grows(systems):
    """Dagster reads an input's version when the step starts; the op observes its inputs itself
    during the step. The output must not show "Unsynced" right after a run that processed all
    its input, and must once new messages are observed."""
    from dagster._core.definitions.data_version import StaleStatus

    from samza_dagster.orchestration.observation import observe_streams
    from samza_dagster.planner.plan import StreamInfo

    config = systems.apply(Config.from_properties(wordcount.CONFIG_PATH))
    load_sentences(config)
    job_asset = _job_asset(wordcount.definitions())
    defs = dg.Definitions(
        assets=wordcount.definitions().assets, resources={"samza_systems": systems, "spark": SparkResource()}
    )
    words, sentences = dg.AssetKey(["wordcount", "words"]), dg.AssetKey(["wordcount", "sentences"])
    instance = dg.DagsterInstance.ephemeral()
    # the input observed before the run, as the stream observation sensor does
    info = StreamInfo("sentences", "log", "sentences", 2, {"input"})
    instance.report_runless_asset_event(
        observe_streams(config, [info], with_lag=False)["sentences"].to_event(sentences)
    )
    assert dg.materialize([job_asset], resources={"samza_systems": systems}, instance=instance).success
    assert _stale_status(instance, defs, words) == StaleStatus.FRESH

    load_sentences(config)  # new messages, then the sensor's next observation
    instance.report_runless_asset_event(
        observe_streams(config, [info], with_lag=False)["sentences"].to_event(sentences)
    )
    assert _stale_status(instance, defs, words) == StaleStatus.STALE

    assert dg.materialize([job_asset], resources={"samza_systems": systems}, instance=instance).success
    assert _stale_status(instance, defs, words) == StaleStatus.FRESH


def test_a_launch_without_its_inputs_fails_naming_them_where_it_looked_and_what_to_do(systems):
    result = dg.materialize(
        [_job_asset(wordcount.definitions())],
        resources={"samza_systems": systems},
        instance=dg.DagsterInstance.ephemeral(),
        raise_on_error=False,
    )
    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    message = failure.step_failure_data.user_failure_data.description
    assert "input stream(s) sentences, sentences_replay do not exist (log.sentences, log.sentences_replay)" in message
    assert f"under the log root {systems.log_path}" in message
    assert "<app>_load_sample" in message and "SAMZA_LOG_PATH" in message
