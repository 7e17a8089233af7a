"""A streaming (unbounded) Samza job under Dagster, in process with a real on-disk instance: the
live run materializes while it runs; a coordinator-stream change is applied by the live run
(its job coordinator serves a new JobModel) and the sensor records it instead of launching a
second run; a second launch of the same job is refused naming the live run; a terminate stops
the job gracefully — final checkpoint and materialization present — and with no run live the
sensor launches exactly one run for a change. (The same through `dagster dev`, its daemon and
run queue: tests/orchestration/test_ui_dagster.py.)"""

from __future__ import annotations

import threading

import dagster as dg
import pytest

from jobs.wordcount import definitions as wordcount
from jobs.wordcount.sample import SENTENCES, load_sentences, word_count
from samza_dagster.config import Config
from samza_dagster.coordinator.stream.writer_tool import run_coordinator_stream_writer
from samza_dagster.orchestration import JOB_INSTANCE_TAG, SamzaSystemsResource, application_definitions
from samza_dagster.orchestration.assets import stream_key
from samza_dagster.orchestration.observation import checkpointed_offsets, observe_streams
from samza_dagster.planner.plan import StreamInfo
from support.live_runs import live_run
from support.waiting import wait_until
from tests import REPO

#: wordcount made unbounded and quick to react: the coordinator checks its stream every 300 ms,
#: containers their JobModel every 200 ms, the op materializes every second
STREAMING = {
    "streams.sentences.samza.bounded": "false",
    "streams.sentences_replay.samza.bounded": "false",
    "job.coordinator.monitor.interval.ms": "300",
    "job.coordinator.watch.interval.ms": "200",
    "task.commit.ms": "200",
    "dagster.materialization.interval.ms": "1000",
    "dagster.progress.interval.ms": "500",
}


@pytest.fixture
def streaming(tmp_path):
    systems = SamzaSystemsResource(log_path=str(tmp_path / "log"))
    base = Config.from_properties(wordcount.CONFIG_PATH).with_overrides(STREAMING)
    defs = dg.Definitions.merge(
        dg.Definitions(resources={"samza_systems": systems}),
        application_definitions("wordcount", base, declared_outputs=["log.words"]),
    )
    config = systems.apply(base)
    load_sentences(config)
    (tmp_path / "dagster").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        yield defs, config, instance


def _twin_definitions(log_path: str) -> dg.Definitions:
    systems = SamzaSystemsResource(log_path=log_path)
    base = Config.from_properties(wordcount.CONFIG_PATH).with_overrides(STREAMING)
    return dg.Definitions.merge(
        dg.Definitions(resources={"samza_systems": systems}),
        application_definitions("wordcount", base, declared_outputs=["log.words"]),
    )


def launch_twin_main(log_path: str, instance_ref: str) -> None:
    """Run in a subprocess by _launch_twin: one launch of wordcount_job on the given instance;
    prints the step failure's message (empty if it succeeded)."""
    from dagster._serdes import deserialize_value

    with dg.DagsterInstance.from_ref(deserialize_value(instance_ref)) as instance:
        result = (
            _twin_definitions(log_path)
            .resolve_job_def("wordcount_job")
            .execute_in_process(instance=instance, raise_on_error=False)
        )
    failures = result.get_step_failure_events()
    print(failures[0].step_failure_data.error.message if failures else "")


def _launch_twin(config: Config, instance: dg.DagsterInstance) -> str:
    import os
    import subprocess
    import sys

    from dagster._serdes import serialize_value

    root = str(REPO)
    code = "import sys; from tests.orchestration.test_dagster_streaming import launch_twin_main; launch_twin_main(sys.argv[1], sys.argv[2])"
    done = subprocess.run(
        [sys.executable, "-c", code, config.get_str("systems.log.log.path"), serialize_value(instance.get_ref())],
        cwd=root,
        env={**os.environ, "PYTHONPATH": root},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _sensor(defs: dg.Definitions, name: str) -> dg.SensorDefinition:
    (sensor,) = [s for s in defs.sensors if s.name == name]
    return sensor


def _tick(defs, instance, config, cursor):
    systems = SamzaSystemsResource(log_path=config.get_str("systems.log.log.path"))
    context = dg.build_sensor_context(instance=instance, cursor=cursor, resources={"samza_systems": systems})
    return _sensor(defs, "wordcount_coordinator_stream_sensor").evaluate_tick(context)


def _messages(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    return [e.user_message or "" for e in instance.all_logs(run_id)]


def _materializations(instance: dg.DagsterInstance, run_id: str) -> list[dg.AssetMaterialization]:
    events = instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)
    return [e.asset_materialization for e in events if e.asset_materialization is not None]


def _stream(name: str) -> StreamInfo:
    return StreamInfo(name, "log", name, 2, {"output"})


def _words_written(config: Config) -> int:
    return observe_streams(config, [_stream("words")], with_lag=False)["words"].messages


def test_a_live_run_applies_changes_refuses_a_twin_and_stops_gracefully(streaming):
    defs, config, instance = streaming
    # on leaving the block, terminate: Dagster marks the run CANCELING; the op stops the job gracefully
    with live_run(defs.resolve_job_def("wordcount_job"), instance, "wordcount-1") as live:
        wait_until(lambda: _words_written(config) == word_count(SENTENCES), what="the sample's words to be written")
        baseline = _tick(defs, instance, config, None)
        assert not baseline.run_requests

        # a second launch of the same Samza job is refused, naming the live run. From another
        # process, as Dagster launches runs: two in-process executions in one interpreter share
        # Python's logging locks, and the twin's logging set-up once deadlocked against the live
        # run's event-log handler (a harness artefact, not a launch's behaviour)
        failure = _launch_twin(config, instance)
        assert live.run_id in failure and "already live" in failure

        # a change on the coordinator stream: the live run applies it; the sensor only records it
        run_coordinator_stream_writer(config, "set-config", "task.commit.ms", "300")
        tick = _tick(defs, instance, config, baseline.cursor)
        assert not tick.run_requests
        (observed,) = tick.asset_events
        assert observed.asset_key == stream_key("wordcount", "words")
        assert observed.metadata["applied_by_run"].value == live.run_id
        assert observed.metadata["changed_keys"].value == "task.commit.ms"
        # the tick's line in the UI says what it applied (it said "Sensor function returned an
        # empty result": the skip message is what the daemon records for a tick without a run)
        assert (
            tick.skip_message is not None and "task.commit.ms changed at coordinator stream offset" in tick.skip_message
        )
        assert f"applied by the live run {live.run_id}" in tick.skip_message
        wait_until(
            lambda: any(
                "applying JobModel version 2" in m and "task.commit.ms" in m for m in _messages(instance, live.run_id)
            ),
            what="the live run to apply the change",
        )

        # the running job keeps processing and materializes while it runs
        load_sentences(config, ["late words arrive"])
        wait_until(lambda: _words_written(config) == word_count(SENTENCES) + 3, what="the late words")
        wait_until(
            lambda: any(
                m.metadata.get("job_status") and m.metadata["job_status"].value == "running"
                for m in _materializations(instance, live.run_id)
            ),
            what="a live materialization",
        )
    assert live.result.success
    # the run succeeded (a graceful stop is how a streaming job ends) and says why it stopped
    assert instance.get_run_by_id(live.run_id).tags["samza/stopped-by"] == "terminated from Dagster"
    final = [m for m in _materializations(instance, live.run_id) if m.metadata["job_status"].value != "running"]
    (words,) = [m for m in final if m.asset_key == stream_key("wordcount", "words")]
    assert words.metadata["stopped_by"].value == "terminated from Dagster"
    assert words.metadata["messages_written"].value == word_count(SENTENCES) + 3
    # every sentence counted, across the container runs before and after the reconfiguration
    assert words.metadata["messages_processed"].value == len(SENTENCES) + 1
    assert words.metadata["job_model_changes"].value == [{"version": 2, "changed": ["task.commit.ms"]}]
    checks = {
        e.asset_check_evaluation.check_name: e.asset_check_evaluation
        for e in instance.all_logs(live.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
    }
    assert checks["consumer_lag"].passed and checks["consumer_lag"].metadata["lag"].value == 0
    # the final commit covers every input message: a restart resumes after them
    offsets = checkpointed_offsets(config)
    sentences = observe_streams(config, [_stream("sentences")], with_lag=False)["sentences"]
    newest = {(p, int(m.newest_offset)) for p, m in sentences.partitions.items()}
    assert {(ssp.partition, int(o)) for ssp, o in offsets.items() if ssp.stream == "sentences"} == newest

    # no run is live now: a change launches exactly one run, identified by the change's offset
    run_coordinator_stream_writer(config, "set-config", "task.commit.ms", "400")
    (request,) = _tick(defs, instance, config, tick.cursor).run_requests
    again = _tick(defs, instance, config, tick.cursor)
    assert [r.run_key for r in again.run_requests] == [request.run_key]  # same change, same run key: Dagster dedupes
    assert request.tags[JOB_INSTANCE_TAG] == "wordcount-1"
    assert request.run_config["ops"]["wordcount_samza_job"]["config"]["overrides"]["task.commit.ms"] == "400"


def test_a_second_launch_waits_for_the_job_pool_and_leaves_no_failed_check(tmp_path):
    """With the repository's pool limit (one per job instance), a second launch — as Materialize
    on an asset page makes, without the job's run tags — waits for the live run instead of
    failing, so no asset check is left "execution failed"; it runs once the live run stopped."""
    import subprocess
    import sys

    import yaml
    from dagster._serdes import serialize_value

    systems = SamzaSystemsResource(log_path=str(tmp_path / "log"))
    base = Config.from_properties(wordcount.CONFIG_PATH).with_overrides(STREAMING)
    config = systems.apply(base)
    load_sentences(config)
    defs = _twin_definitions(str(tmp_path / "log"))
    repo = REPO
    concurrency = yaml.safe_load((repo / "dagster.yaml").read_text())["concurrency"]
    (tmp_path / "dagster").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster"), overrides={"concurrency": concurrency}) as instance:
        outcome: dict[str, dg.ExecuteInProcessResult] = {}
        job = defs.resolve_job_def("wordcount_job")
        runner = threading.Thread(target=lambda: outcome.setdefault("live", job.execute_in_process(instance=instance)))
        runner.start()
        live = wait_until(
            lambda: instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED])),
            what="the live run to start",
        )[0]
        wait_until(lambda: _words_written(config) == word_count(SENTENCES), what="the sample's words to be written")
        code = (
            "import sys; from tests.orchestration.test_dagster_streaming import launch_twin_main; "
            "launch_twin_main(sys.argv[1], sys.argv[2])"
        )
        second = subprocess.Popen(
            [sys.executable, "-c", code, str(tmp_path / "log"), serialize_value(instance.get_ref())],
            cwd=repo,
            env={**__import__("os").environ, "PYTHONPATH": str(repo)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            waiting = wait_until(
                lambda: [r for r in instance.get_runs() if r.run_id != live.run_id], what="a second run"
            )[0]
            wait_until(
                lambda: any("blocked by limit for pool wordcount-1" in m for m in _messages(instance, waiting.run_id)),
                what="the second run to wait for the job's pool",
            )
            assert not instance.all_logs(waiting.run_id, of_type=dg.DagsterEventType.STEP_FAILURE)
            instance.report_run_canceling(instance.get_run_by_id(live.run_id))
            runner.join(120)
            assert outcome["live"].success
            wait_until(
                lambda: any("job wordcount: starting" in m for m in _messages(instance, waiting.run_id)),
                what="the second run to start the job once the live one stopped",
            )
            instance.report_run_canceling(instance.get_run_by_id(waiting.run_id))
            out, err = second.communicate(timeout=180)
        finally:
            if second.poll() is None:
                second.kill()
        assert second.returncode == 0, err[-3000:]
        assert out.strip() == ""  # no step failure
        checks = [
            e.asset_check_evaluation
            for e in instance.all_logs(waiting.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
        ]
        assert checks and all(c.passed for c in checks), [c.description for c in checks]
