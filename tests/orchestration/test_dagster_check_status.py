"""The state of a check as the asset page shows it — ``executionForLatestMaterialization`` over
GraphQL, from a code server of this module's definitions and a real on-disk instance; sensor
ticks are evaluated and their events reported to the instance as the daemon does.

* ``consumer_lag``, evaluated by every run, showed grey "Not evaluated": the stream-observation
  sensor's evaluations during a run are newer executions than the run's own (which Dagster
  records when the run plans it), and older than the run's final materialization, so none
  counted. The sensor now leaves the check to a live run.
* A component whose plan is rejected showed ``plan_accepted`` "Not evaluated" until someone
  executed it; a sensor of the placeholder records the failure at its first tick."""

from __future__ import annotations

import os

import dagster as dg
from dagster_graphql.test.utils import define_out_of_process_context, execute_dagster_graphql

from jobs.wordcount import definitions as wordcount
from jobs.wordcount.sample import SENTENCES, load_sentences
from samza_dagster.config import Config
from samza_dagster.orchestration import SamzaSystemsResource, application_definitions
from samza_dagster.orchestration.application import failed_application_definitions
from samza_dagster.orchestration.observation import checkpointed_offsets
from support.live_runs import live_run
from support.waiting import wait_until
from tests.orchestration.test_dagster_streaming import STREAMING

CHECKS = """query($path: [String!]!) { assetNodes(assetKeys: [{path: $path}]) {
  assetChecksOrError { ... on AssetChecks { checks { name
    executionForLatestMaterialization { status runId evaluation { success } } } } } } }"""

#: the code location: the streaming wordcount (its log root from SAMZA_LOG_PATH, as the code
#: server sees it) and an application whose plan is rejected
defs = dg.Definitions.merge(
    dg.Definitions(resources={"samza_systems": SamzaSystemsResource()}),
    application_definitions(
        "wordcount",
        Config.from_properties(wordcount.CONFIG_PATH).with_overrides(STREAMING),
        declared_outputs=["log.words"],
    ),
    failed_application_definitions("broken", ValueError("config key 'task.commit.ms' must be an integer, got '1s'")),
)


def _sensor(name: str) -> dg.SensorDefinition:
    (sensor,) = [s for s in defs.sensors if s.name == name]
    return sensor


def _tick_as_the_daemon(instance: dg.DagsterInstance, name: str, cursor: str | None = None) -> str | None:
    """One tick of sensor ``name``; its asset events reported as the sensor daemon reports them."""
    context = dg.build_sensor_context(
        instance=instance, cursor=cursor, resources={"samza_systems": SamzaSystemsResource()}
    )
    data = _sensor(name).evaluate_tick(context)
    for event in data.asset_events:
        instance.report_runless_asset_event(event)
    return data.cursor


def _checks(context, path: list[str]) -> dict[str, dict | None]:
    (node,) = execute_dagster_graphql(context, CHECKS, {"path": path}).data["assetNodes"]
    return {c["name"]: c["executionForLatestMaterialization"] for c in node["assetChecksOrError"]["checks"]}


def test_the_runs_lag_check_stays_shown_and_a_rejected_plan_shows_failing(tmp_path, monkeypatch):
    monkeypatch.setenv("SAMZA_LOG_PATH", str(tmp_path / "log"))
    config = SamzaSystemsResource().apply(Config.from_properties(wordcount.CONFIG_PATH).with_overrides(STREAMING))
    load_sentences(config)
    (tmp_path / "dagster").mkdir()
    sensor = "wordcount_stream_observation_sensor"

    def committed() -> int:
        offsets = checkpointed_offsets(config) or {}
        return sum(int(o) + 1 for ssp, o in offsets.items() if ssp.stream == "sentences")

    with (
        dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance,
        define_out_of_process_context(__file__, "defs", instance) as context,
    ):
        cursor = _tick_as_the_daemon(instance, sensor)
        with live_run(defs.resolve_job_def("wordcount_job"), instance, "wordcount-1") as live:
            wait_until(lambda: committed() == len(SENTENCES), what="the sentences committed")
            load_sentences(config, ["new words while it runs"])  # a new data version and lag: the sensor reports
            cursor = _tick_as_the_daemon(instance, sensor, cursor)
            wait_until(lambda: committed() == len(SENTENCES) + 1, what="the new sentence committed")
        assert live.result.success
        shown = _checks(context, ["wordcount", "words"])["consumer_lag"]
        assert shown is not None, "consumer_lag shows 'Not evaluated' after a run that evaluated it"
        assert shown["status"] == "SUCCEEDED" and shown["runId"] == live.run_id, shown

        # after the run the sensor evaluates the lag again, newer than the run's materialization
        load_sentences(config, ["after the run"])
        _tick_as_the_daemon(instance, sensor, cursor)
        shown = _checks(context, ["wordcount", "words"])["consumer_lag"]
        assert shown is not None and shown["status"] == "SUCCEEDED" and shown["runId"] == "", shown

        assert _checks(context, ["broken", "execution_plan"])["plan_accepted"] is None  # before the first tick
        recorded = _tick_as_the_daemon(instance, "broken_plan_check_sensor")
        shown = _checks(context, ["broken", "execution_plan"])["plan_accepted"]
        assert shown is not None and shown["status"] == "FAILED" and shown["evaluation"]["success"] is False, shown
        again = _sensor("broken_plan_check_sensor").evaluate_tick(
            dg.build_sensor_context(instance=instance, cursor=recorded)
        )
        assert not again.asset_events  # recorded once, not every tick
    assert os.environ["SAMZA_LOG_PATH"] == str(tmp_path / "log")
