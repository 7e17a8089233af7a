"""Dagster shows the job's own metrics: a live (unbounded) wordcount run under Dagster with a
snapshot reporter materializes the containers' process-envelopes, their rate and process-ns from
the metrics stream while it runs; the final materialization and the consumer_lag check read the
containers' registries (lag from messages-behind-high-watermark), the numbers the snapshot
stream holds. Across a reconfiguration (the containers restart and count from 0) the live numbers
still count the whole run, and the live run's consumer_lag check is evaluated while it runs."""

from __future__ import annotations

import dagster as dg
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus

from jobs.wordcount import definitions as wordcount
from jobs.wordcount.sample import SENTENCES, load_sentences
from samza_dagster.config import Config
from samza_dagster.coordinator.stream.writer_tool import run_coordinator_stream_writer
from samza_dagster.metrics import CONTAINER_GROUP, latest_snapshots
from samza_dagster.model import SystemStream
from samza_dagster.orchestration import SamzaSystemsResource, application_definitions
from samza_dagster.orchestration.assets import stream_key
from support.live_runs import live_run
from support.waiting import wait_until

LIVE = {
    "streams.sentences.samza.bounded": "false",
    "streams.sentences_replay.samza.bounded": "false",
    "task.commit.ms": "200",
    "dagster.materialization.interval.ms": "500",
    "dagster.progress.interval.ms": "500",
    "metrics.reporters": "snapshot",
    "metrics.reporter.snapshot.class": "snapshot",
    "metrics.reporter.snapshot.stream": "log.wordcount-metrics",
    "metrics.reporter.snapshot.interval": "0.2",
}


def _materializations(instance: dg.DagsterInstance, run_id: str) -> list[dg.AssetMaterialization]:
    events = instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)
    return [e.asset_materialization for e in events if e.asset_materialization is not None]


def _live_wordcount(tmp_path, extra: dict[str, str] | None = None) -> tuple[dg.Definitions, Config]:
    """wordcount made unbounded with a snapshot reporter, its sample loaded; its definitions and
    the config the job runs with."""
    systems = SamzaSystemsResource(log_path=str(tmp_path / "log"))
    base = Config.from_properties(wordcount.CONFIG_PATH).with_overrides({**LIVE, **(extra or {})})
    defs = dg.Definitions.merge(
        dg.Definitions(resources={"samza_systems": systems}),
        application_definitions("wordcount", base, declared_outputs=["log.words"]),
    )
    config = systems.apply(base)
    load_sentences(config)
    return defs, config


def test_live_and_final_materializations_and_the_lag_check_read_the_jobs_metrics(tmp_path):
    defs, config = _live_wordcount(tmp_path)
    words = stream_key("wordcount", "words")
    (tmp_path / "dagster").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        with live_run(defs.resolve_job_def("wordcount_job"), instance, "wordcount-1") as live:
            # a live materialization shows every sentence processed, as the containers count it
            seen = wait_until(
                lambda: [
                    m
                    for m in _materializations(instance, live.run_id)
                    if m.asset_key == words
                    and m.metadata["job_status"].value == "running"
                    and "process_envelopes" in m.metadata
                    and m.metadata["process_envelopes"].value == len(SENTENCES)
                ],
                120,
                what="a live materialization with the containers' process-envelopes",
            )
            md = seen[-1].metadata
            assert md["process_ns"].value > 0
            assert md["process_envelopes_per_s"].value >= 0
            assert md["lag"].value == 0 and md["lag_sentences"].value == 0
        assert live.result.success
        final = [
            m
            for m in _materializations(instance, live.run_id)
            if m.asset_key == words and m.metadata["job_status"].value != "running"
        ]
        (last,) = final
        assert last.metadata["process_envelopes"].value == len(SENTENCES) == last.metadata["messages_processed"].value
        checks = {
            e.asset_check_evaluation.check_name: e.asset_check_evaluation
            for e in instance.all_logs(live.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
        }
        lag = checks["consumer_lag"]
        assert lag.passed and lag.metadata["lag_source"].value == "metrics"
        assert lag.metadata["lag_per_input"].value == {"sentences": 0, "sentences_replay": 0}

    # the same count on the snapshot stream: one source of truth
    snapshots = latest_snapshots(config, SystemStream("log", "wordcount-metrics")).snapshots()
    containers = [s for s in snapshots if s.header.source.startswith("samza-container-")]
    assert sum(s.value(CONTAINER_GROUP, "process-envelopes") for s in containers) == len(SENTENCES)


def test_live_numbers_count_the_whole_run_across_a_reconfiguration_and_the_lag_check_is_live(tmp_path):
    """A reconfiguration restarts the containers, whose counters start again at 0: the live
    materializations still count every message of the run (never going back, never below what
    was written from them), and the live run's consumer_lag check is evaluated while it runs —
    not "not evaluated" until it ends."""
    defs, config = _live_wordcount(
        tmp_path, {"job.coordinator.monitor.interval.ms": "300", "job.coordinator.watch.interval.ms": "200"}
    )
    words = stream_key("wordcount", "words")
    lag_check = dg.AssetCheckKey(words, "consumer_lag")

    def live_envelopes(run_id: str) -> list[int]:
        return [
            m.metadata["process_envelopes"].value
            for m in _materializations(instance, run_id)
            if m.asset_key == words
            and m.metadata["job_status"].value == "running"
            and "process_envelopes" in m.metadata
        ]

    (tmp_path / "dagster").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        with live_run(defs.resolve_job_def("wordcount_job"), instance, "wordcount-1") as live:
            wait_until(lambda: len(SENTENCES) in live_envelopes(live.run_id), 120, what="the sample processed")
            # the live run's check, evaluated while it runs
            record = wait_until(
                lambda: [
                    r
                    for r in instance.event_log_storage.get_asset_check_execution_history(lag_check, limit=1)
                    if r.status == AssetCheckExecutionRecordStatus.SUCCEEDED
                ],
                30,
                what="the live run's consumer_lag check evaluated",
            )[0]
            assert record.run_id == live.run_id
            assert instance.get_run_by_id(live.run_id).status == dg.DagsterRunStatus.STARTED

            run_coordinator_stream_writer(config, "set-config", "task.commit.ms", "300")
            wait_until(
                lambda: any(
                    "applying JobModel version 2" in (e.user_message or "") for e in instance.all_logs(live.run_id)
                ),
                120,
                what="the reconfiguration to be applied",
            )
            load_sentences(config, ["late words arrive"])
            wait_until(
                lambda: len(SENTENCES) + 1 in live_envelopes(live.run_id),
                120,
                what="the late sentence counted on top of the first container run's",
            )
        assert live.result.success
        seen = live_envelopes(live.run_id)
        assert seen == sorted(seen), seen  # never back to the restarted containers' own count
        (last,) = [
            m
            for m in _materializations(instance, live.run_id)
            if m.asset_key == words and m.metadata["job_status"].value != "running"
        ]
        assert last.metadata["job_model_changes"].value == [{"version": 2, "changed": ["task.commit.ms"]}]
        assert (
            last.metadata["process_envelopes"].value == len(SENTENCES) + 1 == last.metadata["messages_processed"].value
        )
