"""Dagster shows the job's own metrics: a live (unbounded) wordcount run under Dagster with a
snapshot reporter materializes the containers' process-envelopes, their rate and process-ns from
the metrics stream while it runs; the final materialization and the consumer_lag check read the
containers' registries (lag from messages-behind-high-watermark), the numbers the snapshot
stream holds."""

from __future__ import annotations

import dagster as dg

from jobs.wordcount import definitions as wordcount
from jobs.wordcount.sample import SENTENCES, load_sentences
from samza_dagster.config import Config
from samza_dagster.metrics import CONTAINER_GROUP, latest_snapshots
from samza_dagster.model import SystemStream
from samza_dagster.orchestration import JOB_INSTANCE_TAG, SamzaSystemsResource, application_definitions
from samza_dagster.orchestration.assets import stream_key
from support.live_run import live_run
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


def test_live_and_final_materializations_and_the_lag_check_read_the_jobs_metrics(tmp_path):
    systems = SamzaSystemsResource(log_path=str(tmp_path / "log"))
    base = Config.from_properties(wordcount.CONFIG_PATH).with_overrides(LIVE)
    defs = dg.Definitions.merge(
        dg.Definitions(resources={"samza_systems": systems}),
        application_definitions("wordcount", base, declared_outputs=["log.words"]),
    )
    config = systems.apply(base)
    load_sentences(config)
    words = stream_key("wordcount", "words")
    (tmp_path / "dagster").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        job = defs.resolve_job_def("wordcount_job")
        with live_run(job, instance, tags={JOB_INSTANCE_TAG: "wordcount-1"}) as live:
            # a live materialization shows every sentence processed, as the containers count it
            seen = wait_until(
                lambda: [
                    m
                    for m in live.materializations(instance)
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
            for m in live.materializations(instance)
            if m.asset_key == words and m.metadata["job_status"].value != "running"
        ]
        (last,) = final
        assert last.metadata["process_envelopes"].value == len(SENTENCES) == last.metadata["messages_processed"].value
        checks = {
            e.asset_check_evaluation.check_name: e.asset_check_evaluation
            for e in instance.all_logs(live.run.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
        }
        lag = checks["consumer_lag"]
        assert lag.passed and lag.metadata["lag_source"].value == "metrics"
        assert lag.metadata["lag_per_input"].value == {"sentences": 0, "sentences_replay": 0}

    # the same count on the snapshot stream: one source of truth
    snapshots = latest_snapshots(config, SystemStream("log", "wordcount-metrics")).snapshots()
    containers = [s for s in snapshots if s.header.source.startswith("samza-container-")]
    assert sum(s.value(CONTAINER_GROUP, "process-envelopes") for s in containers) == len(SENTENCES)
