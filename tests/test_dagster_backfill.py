"""The reprocessing backfill on a real log and a local Spark session: three date partitions of
wordcount's ``reprocess_sentences_replay`` asset each re-send exactly that day's past sentences
(by record timestamp, UTC) into the batch stream ``sentences_replay`` — keys, values and event
times kept — then the job reads them at its batch priority. Also: a ``job.factory.class=spark``
job op runs on the SparkResource's session (no second session start-up)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest

from jobs.stream_helpers import produce, read_stream
from jobs.wordcount import definitions as wordcount
from jobs.wordcount.sample import load_sentences, word_count
from samza_dagster.config import Config
from samza_dagster.orchestration import (
    SamzaSystemsResource,
    SparkResource,
    application_definitions,
    reprocessing_backfill,
)

pytestmark = pytest.mark.spark

DAYS = ["2024-03-01", "2024-03-02", "2024-03-03", "2024-03-05"]  # the 5th: nothing that day


def _ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


#: (sentence, event time): the three backfilled days, their edges, and days outside them
PAST = [
    ("before the range", _ms("2024-02-29T23:59:59.999")),
    ("first day at midnight", _ms("2024-03-01T00:00:00")),
    ("first day at noon", _ms("2024-03-01T12:00:00")),
    ("second day morning", _ms("2024-03-02T08:30:00")),
    ("second day last millisecond", _ms("2024-03-02T23:59:59.999")),
    ("third day only one", _ms("2024-03-03T17:00:00")),
    ("after the range", _ms("2024-03-04T00:00:00")),
]


def _day(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d")


@pytest.fixture(scope="module")
def spark_resource():
    resource = SparkResource(master="local[2]", app_name="test-dagster-backfill")
    yield resource
    resource.get_session().stop()


@pytest.fixture
def systems(tmp_path: Path) -> SamzaSystemsResource:
    return SamzaSystemsResource(log_path=str(tmp_path / "log"))


def test_backfill_of_three_days_resends_exactly_each_days_records(systems, spark_resource):
    config = systems.apply(Config.from_properties(wordcount.CONFIG_PATH))
    load_sentences(config, [])  # creates sentences and the (empty) batch stream sentences_replay
    produce(config, "sentences", [(s.split()[0].encode(), s.encode(), t) for s, t in PAST])
    backfill = wordcount.replay_backfill()
    assert backfill.partitions_def.get_partition_keys()[:1] == ["2024-01-01"]
    resources = {"samza_systems": systems, "spark": spark_resource}
    instance = dg.DagsterInstance.ephemeral()

    seen = 0
    for day in DAYS:
        result = dg.materialize([backfill.asset], partition_key=day, resources=resources, instance=instance)
        assert result.success
        replay = read_stream(config, "sentences_replay")
        expected = sorted((s, t) for s, t in PAST if _day(t) == day)
        got = sorted((r.value.decode(), r.timestamp) for r in replay)
        sent_so_far = sorted((s, t) for s, t in PAST if _day(t) in DAYS[: DAYS.index(day) + 1])
        # the batch stream holds exactly the days backfilled so far, with their event times
        assert got == sent_so_far
        assert len(replay) - seen == len(expected)
        seen = len(replay)
        (mat,) = result.get_asset_materialization_events()
        md = {k: v.value for k, v in mat.materialization.metadata.items()}
        assert mat.materialization.partition == day
        assert md["records_resent"] == len(expected) and md["batch_stream_messages"] == seen
        assert md["window_start"] == _ms(f"{day}T00:00:00") / 1000  # a timestamp: shown as a date
        assert md["nothing_to_reprocess"] is (not expected)
        assert sum(md["resent_per_partition"].values()) == len(expected)
        # keys kept: each record lands in the partition its key picks, as the producer would
        for r in replay:
            assert r.key == r.value.split()[0]
    assert {r.value.decode() for r in read_stream(config, "sentences_replay")}.isdisjoint(
        {"before the range", "after the range"}
    )

    # the job reads the re-sent sentences from its batch stream (priority 0) next to the live ones
    job_asset = [a for a in wordcount.definitions().assets if isinstance(a, dg.AssetsDefinition) and a.key.path[-1] == "words"]
    result = dg.materialize(job_asset, resources={"samza_systems": systems}, instance=instance)
    (mat,) = result.get_asset_materialization_events()
    md = {k: v.value for k, v in mat.materialization.metadata.items()}
    replayed = [s for s, t in PAST if _day(t) in DAYS]
    assert md["messages_processed_per_stream"] == {"log.sentences": len(PAST), "log.sentences_replay": len(replayed)}
    assert md["messages_written"] == word_count(s for s, _ in PAST) + word_count(replayed)


def test_backfill_rejects_a_batch_stream_the_job_does_not_read():
    with pytest.raises(ValueError, match="batch_stream 'log.words'.*not an input of job wordcount"):
        reprocessing_backfill("wordcount", wordcount.CONFIG_PATH, source_stream="sentences", batch_stream="log.words",
                              start_date="2024-01-01")


def test_backfill_is_in_the_application_definitions_with_lineage_and_a_daily_schedule(systems):
    bound = dg.Definitions(resources={"samza_systems": systems, "spark": SparkResource()})
    defs = dg.Definitions.merge(bound, wordcount.definitions())
    graph = defs.resolve_asset_graph()
    backfill_key = dg.AssetKey(["wordcount", "reprocess_sentences_replay"])
    assert graph.get(backfill_key).parent_keys == {dg.AssetKey(["wordcount", "sentences"])}
    assert backfill_key in graph.get(dg.AssetKey(["wordcount", "sentences_replay"])).parent_keys
    schedule = defs.resolve_schedule_def("wordcount_reprocess_sentences_replay_schedule")
    assert schedule.cron_schedule == "0 1 * * *" and schedule.job_name == "wordcount_reprocess_sentences_replay"
    assert schedule.default_status == dg.DefaultScheduleStatus.STOPPED
    assert graph.get(backfill_key).partitions_def == dg.DailyPartitionsDefinition(start_date="2024-01-01")


def test_a_spark_job_op_runs_on_the_spark_resources_session(systems, spark_resource):
    config = Config.from_properties(wordcount.CONFIG_PATH).with_overrides({"job.factory.class": "spark"})
    resolved = systems.apply(config)
    load_sentences(resolved)
    defs = application_definitions("wordcount_spark", config, declared_outputs=["log.words"])
    (job_asset,) = [a for a in defs.assets if isinstance(a, dg.AssetsDefinition)]
    assert "spark" in job_asset.required_resource_keys
    session = spark_resource.get_session()
    result = dg.materialize(
        [job_asset], resources={"samza_systems": systems, "spark": spark_resource},
        instance=dg.DagsterInstance.ephemeral(),
    )
    assert result.success
    (mat,) = result.get_asset_materialization_events()
    md = {k: v.value for k, v in mat.materialization.metadata.items()}
    assert md["runner"] == "spark" and md["job_status"] == "completed"
    # the runner was handed the resource's running session: no start-up time is reported for it
    assert md["spark_session"] == "reused" and "spark_startup_s" not in md
    assert md["messages_written"] == word_count()
    assert spark_resource.get_session() is session
