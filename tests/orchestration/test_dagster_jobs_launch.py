"""Every job of the code location (definitions.py) runs as the UI launches it: the job resolved
from ``definitions.defs`` with its bound resources (``SAMZA_LOG_PATH`` pointing the systems
resource at a temporary log root), executed in process with a real on-disk instance. Each
application's ``load_sample`` job first, then its Samza job, then its backfills; the unbounded
``user_classification_job`` is terminated once it has classified the sample, and must stop
cleanly. A job added to definitions.py without a launch here fails the first test."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import dagster as dg
import pytest

from support.waiting import wait_until

pytestmark = pytest.mark.spark

#: every job of definitions.py, in the order a user would launch them
LAUNCHES: list[tuple[str, str | None]] = [
    ("wordcount_load_sample", None),
    ("wordcount_job", None),
    ("wordcount_reprocess_sentences_replay", "2024-01-01"),
    ("currency_join_load_sample", None),
    ("currency_join_job", None),
    ("ad_ctr_load_sample", None),
    ("ad_ctr_job", None),
    ("pageview_pipeline_load_sample", None),
    ("pageview_pipeline_job", None),
    ("user_classification_load_sample", None),
    ("user_classification_reprocessing_backfill", None),
    ("user_classification_reprocess_reclassify_requests", "2024-01-01"),
    # after the re-sends, the batch stream holds messages: the day's first offset exists
    ("user_classification_rewind_reclassify_requests", "2024-01-01"),
    ("clicks_lake_load_sample", None),
    ("clicks_lake_job", None),
    # the sample is the three days before today: yesterday, the schedule's next partition, has rows
    ("clicks_lake_daily_clicks", (datetime.now(UTC).date() - timedelta(days=1)).isoformat()),
    # the same day on Spark, through Iceberg's Spark runtime
    ("clicks_lake_daily_clicks_spark", (datetime.now(UTC).date() - timedelta(days=1)).isoformat()),
]
UNBOUNDED = "user_classification_job"


@pytest.fixture(scope="module")
def code_location(tmp_path_factory):
    root = tmp_path_factory.mktemp("launch")
    patch = pytest.MonkeyPatch()
    patch.setenv("SAMZA_LOG_PATH", str(root / "log"))
    import definitions

    (root / "dagster").mkdir()
    with dg.instance_for_test(temp_dir=str(root / "dagster")) as instance:
        yield definitions.defs, instance
    patch.undo()
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    if session is not None:
        session.stop()


def test_every_job_of_the_code_location_is_launched_here(code_location):
    defs, _ = code_location
    names = {job.name for job in defs.jobs}
    assert names == {name for name, _ in LAUNCHES} | {UNBOUNDED}


@pytest.mark.parametrize(("job_name", "partition"), LAUNCHES, ids=[name for name, _ in LAUNCHES])
def test_job_launches_and_succeeds(code_location, job_name, partition):
    defs, instance = code_location
    if job_name == "clicks_lake_daily_clicks_spark":
        # launched from the UI, a run is a process of its own, whose first Spark session is the
        # asset's: the backfills' session (no Iceberg extensions) is not left for it here either
        from pyspark.sql import SparkSession

        session = SparkSession.getActiveSession()
        if session is not None:
            session.stop()
    result = defs.resolve_job_def(job_name).execute_in_process(
        instance=instance, partition_key=partition, raise_on_error=False
    )
    failures = [e.step_failure_data.error.message for e in result.get_step_failure_events()]
    assert result.success, f"{job_name} failed: {failures}"
    if job_name.endswith("_job"):
        # a bounded Samza job ended by itself: its end-of-stream check passed on every output
        eos = [c for c in result.get_asset_check_evaluations() if c.check_name == "reached_end_of_stream"]
        assert eos and all(c.passed for c in eos), [c.description for c in eos]
    if job_name == "pageview_pipeline_job":
        # the side input (user_profiles) fills a table by its own offsets: it has no consumer lag
        lag = [c for c in result.get_asset_check_evaluations() if c.check_name == "consumer_lag"]
        assert lag and all(c.passed for c in lag), [c.description for c in lag]
        assert all(set(c.metadata["lag_per_input"].value) == {"page_views"} for c in lag)


def test_the_sample_spans_the_days_the_backfills_offer(code_location):
    """After user_classification_load_sample, the newest partition of both daily backfills
    (yesterday) has work: the re-send finds that day's signups, the rewind a first offset."""
    defs, instance = code_location
    from jobs.user_classification.definitions import SAMPLE_DAYS

    job = defs.resolve_job_def("user_classification_reprocess_reclassify_requests")
    yesterday = job.partitions_def.get_last_partition_key()
    resend = job.execute_in_process(instance=instance, partition_key=yesterday)
    (mat,) = resend.get_asset_materialization_events()
    sent = mat.materialization.metadata["records_resent"].value
    assert sent == sum(1 for i in range(5000) if i % SAMPLE_DAYS == 1)  # one day of the sample's seven
    assert mat.materialization.metadata["nothing_to_reprocess"].value is False
    rewind = defs.resolve_job_def("user_classification_rewind_reclassify_requests").execute_in_process(
        instance=instance, partition_key=yesterday
    )
    (mat,) = rewind.get_asset_materialization_events()
    assert mat.materialization.metadata["nothing_to_reprocess"].value is False
    assert mat.materialization.metadata["starting_offsets"].value


def test_the_unbounded_job_runs_until_terminated_and_stops_cleanly(code_location):
    defs, instance = code_location
    from jobs.user_classification import definitions as user_classification
    from samza_dagster.config import Config
    from samza_dagster.orchestration import SamzaSystemsResource
    from samza_dagster.orchestration.observation import observe_streams
    from samza_dagster.planner.plan import StreamInfo

    config = SamzaSystemsResource().apply(Config.from_properties(user_classification.CONFIG_PATH))
    out = StreamInfo("user_country", "log", "user_country", 2, {"output"})
    before = observe_streams(config, [out], with_lag=False)["user_country"].messages
    signups = observe_streams(
        config, [StreamInfo("user_signups", "log", "user_signups", 2, {"input"})], with_lag=False
    )["user_signups"].messages
    outcome: dict[str, dg.ExecuteInProcessResult] = {}
    job = defs.resolve_job_def(UNBOUNDED)
    worker = threading.Thread(target=lambda: outcome.setdefault("run", job.execute_in_process(instance=instance)))
    worker.start()
    run = None
    try:
        run = wait_until(
            lambda: instance.get_runs(dg.RunsFilter(job_name=UNBOUNDED, statuses=[dg.DagsterRunStatus.STARTED])),
            what="the run to start",
        )[0]
        # every signup of the sample classified (the backfill's requests too, at batch priority)
        wait_until(
            lambda: observe_streams(config, [out], with_lag=False)["user_country"].messages >= before + signups,
            what="the sample to be classified",
        )
    finally:
        if run is not None:
            instance.report_run_canceling(instance.get_run_by_id(run.run_id))
        worker.join(120)
    assert not worker.is_alive()
    _assert_ended_terminated_from_dagster(outcome["run"])


def test_the_unbounded_job_terminated_as_its_run_starts_stops_with_a_report(code_location):
    """Terminate the moment Dagster marks the run started — before the op has launched the job's
    containers: the run ends by itself, successfully, its final materializations saying it was
    terminated, and nothing is left running."""
    defs, instance = code_location
    assert defs.resolve_job_def("user_classification_load_sample").execute_in_process(instance=instance).success
    outcome: dict[str, dg.ExecuteInProcessResult] = {}
    job = defs.resolve_job_def(UNBOUNDED)
    known = {r.run_id for r in instance.get_runs(dg.RunsFilter(job_name=UNBOUNDED))}
    worker = threading.Thread(target=lambda: outcome.setdefault("run", job.execute_in_process(instance=instance)))
    worker.start()
    try:
        run = wait_until(
            lambda: [
                r
                for r in instance.get_runs(dg.RunsFilter(job_name=UNBOUNDED, statuses=[dg.DagsterRunStatus.STARTED]))
                if r.run_id not in known
            ],
            timeout_s=60,
            poll_s=0.01,
            what="the run to start",
        )[0]
        instance.report_run_canceling(instance.get_run_by_id(run.run_id))
    finally:
        worker.join(180)
    assert not worker.is_alive()
    _assert_ended_terminated_from_dagster(outcome["run"])


def _assert_ended_terminated_from_dagster(result: dg.ExecuteInProcessResult) -> None:
    """The run succeeded and its final materializations say Dagster terminated the job."""
    assert result.success
    mats = [e.event_specific_data.materialization for e in result.get_asset_materialization_events()]
    final = [m for m in mats if m.metadata["job_status"].value != "running"]
    assert final and all(m.metadata["stopped_by"].value == "terminated from Dagster" for m in final)
