"""Dagster definitions of user_classification: stream assets and job from its plan, the
coordinator-stream sensor (a strategy change requests a reconfiguration run), an op job writing
sample signups, and two reprocessing backfills into ``reclassify_requests`` (priority 0, so
real-time signups are never starved): a one-off Spark job re-sending every past signup, and the
daily-partitioned one (one day of past signups per partition, scheduled daily, backfilled over a
date range from the UI)."""

import time
from pathlib import Path

import dagster as dg

from samza_dagster.config import Config
from samza_dagster.orchestration import (
    SamzaSystemsResource,
    SparkResource,
    application_definitions,
    reprocessing_backfill,
    rewind_backfill,
)

APPLICATION = "user_classification"
#: the sample's signups are spread over this many days up to today (``signed_up_at``), so the daily
#: backfill's partitions — the newest is yesterday — each have signups to re-send
SAMPLE_DAYS = 7
DAY_MS = 86_400_000
CONFIG_PATH = Path(__file__).with_name("user_classification.properties")


def _config(samza_systems: SamzaSystemsResource) -> Config:
    return samza_systems.apply(Config.from_properties(CONFIG_PATH))


@dg.op
def load_signup_sample(context: dg.OpExecutionContext, samza_systems: SamzaSystemsResource) -> int:
    import json

    from jobs.stream_helpers import create_streams, produce
    from jobs.user_classification.data import signups

    config = _config(samza_systems)
    create_streams(config, {"user_signups": 2, "reclassify_requests": 2, "user_country": 2})
    now = int(time.time() * 1000)
    people = [{**u, "signed_up_at": now - (i % SAMPLE_DAYS) * DAY_MS} for i, u in enumerate(signups(5000))]
    n = produce(config, "user_signups", [(u["user_id"].encode(), json.dumps(u).encode(), None) for u in people])
    context.log.info(f"wrote {n} signups, signed up over the last {SAMPLE_DAYS} days (today included)")
    return n


@dg.op
def resend_past_signups(
    context: dg.OpExecutionContext, samza_systems: SamzaSystemsResource, spark: SparkResource
) -> int:
    """The reprocessing backfill: every signup in ``user_signups`` re-sent as a batch request."""
    from jobs.user_classification.scenario import backfill_with_spark

    n = backfill_with_spark(spark.get_session(), _config(samza_systems))
    context.log.info(f"re-sent {n} past signups into reclassify_requests")
    return n


@dg.job(name="user_classification_load_sample", description="Writes sample signups")
def load_sample_job() -> None:
    load_signup_sample()


@dg.job(
    name="user_classification_reprocessing_backfill",
    description="Spark: re-send every past signup into reclassify_requests (batch, priority 0)",
)
def backfill_job() -> None:
    resend_past_signups()


def daily_reprocessing():
    # keep_event_time=False: a re-sent request is stamped when it is re-sent, so the job's
    # latency numbers measure queueing in the batch stream, not the user's age
    return reprocessing_backfill(
        APPLICATION,
        CONFIG_PATH,
        source_stream="user_signups",
        batch_stream="reclassify_requests",
        start_date="2024-01-01",
        timestamp_field="signed_up_at",
        keep_event_time=False,
    )


def daily_rewind():
    # Samza's other way to reprocess a day: rewind the batch input itself (a timestamp startpoint
    # per partition), read again from that day's first message at the job's next start
    return rewind_backfill(APPLICATION, CONFIG_PATH, stream="reclassify_requests", start_date="2024-01-01")


def definitions() -> dg.Definitions:
    return application_definitions(
        APPLICATION,
        CONFIG_PATH,
        declared_outputs=["log.user_country"],
        jobs=[load_sample_job, backfill_job],
        backfills=[daily_reprocessing(), daily_rewind()],
    )
