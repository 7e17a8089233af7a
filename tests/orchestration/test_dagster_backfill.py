"""The reprocessing backfill on a real log and a local Spark session: three date partitions of
wordcount's ``reprocess_sentences_replay`` asset each re-send exactly that day's past sentences
(by record timestamp, UTC) into the batch stream ``sentences_replay`` — keys, values and event
times kept — then the job reads them at its batch priority. Also: a ``job.factory.class=spark``
job op runs on the SparkResource's session (no second session start-up).

Exactly-once (wordcount with ``job.processing.guarantee=exactly-once``): the day's materialization
is killed mid-write, launched again and killed after its write committed but before Dagster
recorded it, then launched a third time — the batch stream holds each of the day's records once
for a ``read_committed`` reader (the job's own isolation), the last run saying the day was written
already. The killed runs run each in a process of their own, with their own Spark session, on a
Dagster instance on disk that the last run (in this process) shares; faults come from
tests/spark_write_faults.py."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from jobs.stream_helpers import produce, read_stream
from jobs.wordcount import definitions as wordcount
from jobs.wordcount.sample import load_sentences, word_count
from samza_dagster.config import Config, ConfigError
from samza_dagster.orchestration import (
    SamzaSystemsResource,
    SparkResource,
    application_definitions,
    reprocessing_backfill,
)
from support.log_reading import read_partition
from tests.spark_write_faults import run_until

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
    job_asset = [
        a
        for a in wordcount.definitions().assets
        if isinstance(a, dg.AssetsDefinition) and any(k.path[-1] == "words" for k in a.keys)
    ]
    result = dg.materialize(job_asset, resources={"samza_systems": systems}, instance=instance)
    (mat,) = result.get_asset_materialization_events()
    md = {k: v.value for k, v in mat.materialization.metadata.items()}
    replayed = [s for s, t in PAST if _day(t) in DAYS]
    assert md["messages_processed_per_stream"] == {"log.sentences": len(PAST), "log.sentences_replay": len(replayed)}
    assert md["messages_written"] == word_count(s for s, _ in PAST) + word_count(replayed)


def test_backfill_rejects_a_batch_stream_the_job_does_not_read():
    with pytest.raises(ValueError, match="batch_stream 'log.words'.*not an input of job wordcount"):
        reprocessing_backfill(
            "wordcount",
            wordcount.CONFIG_PATH,
            source_stream="sentences",
            batch_stream="log.words",
            start_date="2024-01-01",
        )


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
    (job_asset,) = [a for a in defs.assets if isinstance(a, dg.AssetsDefinition) and not a.is_observable]
    assert "spark" in job_asset.required_resource_keys
    session = spark_resource.get_session()
    result = dg.materialize(
        [job_asset],
        resources={"samza_systems": systems, "spark": spark_resource},
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


# -- exactly-once -------------------------------------------------------------------------------
EO_DAY = "2024-03-01"
FAULTS = "tests.spark_write_faults:FaultyLogSystemFactory"
EXACTLY_ONCE = {"job.processing.guarantee": "exactly-once"}
#: 600 sentences on the day (keyed by their first word, so both partitions get some), 3 outside it
ON_EO_DAY = [(f"s{i} on the day", _ms(EO_DAY) + i * 60_000) for i in range(600)]
OFF_EO_DAY = [("day before", _ms(EO_DAY) - 1), ("day after", _ms("2024-03-02")), ("much later", _ms("2024-04-01"))]


def _eo_backfill(overrides: dict[str, str]) -> Any:
    config = Config.from_properties(wordcount.CONFIG_PATH).with_overrides(overrides)
    return reprocessing_backfill(
        "wordcount", config, source_stream="sentences", batch_stream="sentences_replay", start_date="2024-01-01"
    )


def _eo_log(tmp_path: Path) -> Config:
    """wordcount's streams on a log under ``tmp_path``, the day's and the other sentences loaded."""
    config = Config.from_properties(wordcount.CONFIG_PATH).with_overrides(
        {"systems.log.log.path": str(tmp_path / "log")}
    )
    load_sentences(config, [])  # sentences and the empty batch stream sentences_replay
    produce(config, "sentences", [(s.split()[0].encode(), s.encode(), t) for s, t in ON_EO_DAY + OFF_EO_DAY])
    return config


def _replay(config: Config, isolation: str) -> list[str]:
    cfg = Config(
        {
            "systems.log.log.path": config.get_str("systems.log.log.path"),
            "systems.log.consumer.isolation.level": isolation,
        }
    )  # not bounded: no end-of-stream
    return [v for p in range(2) for _, _, v in read_partition(cfg, "log", "sentences_replay", p, "0")]


def _metadata(result: Any) -> dict[str, Any]:
    (mat,) = result.get_asset_materialization_events()
    return {k: v.value for k, v in mat.materialization.metadata.items()}


SCRIPT = """
import json, sys
import dagster as dg
from samza_dagster.orchestration import SamzaSystemsResource, SparkResource
from tests.orchestration.test_dagster_backfill import EO_DAY, _eo_backfill
backfill = _eo_backfill(json.loads(sys.argv[1]))
dg.materialize([backfill.asset], partition_key=EO_DAY, instance=dg.DagsterInstance.get(),
               resources={"samza_systems": SamzaSystemsResource(),
                          "spark": SparkResource(master="local[2]", app_name="killed-backfill")})
"""


@pytest.mark.timeout(900)  # two runs in processes of their own, each starting Spark (minutes under load)
def test_a_killed_and_relaunched_exactly_once_backfill_leaves_each_record_once(tmp_path, spark_resource):
    home = tmp_path / "dagster"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    faults = tmp_path / "faults"
    faults.mkdir()
    config = _eo_log(tmp_path)
    log_path = config.get_str("systems.log.log.path")
    expected = Counter(s for s, _ in ON_EO_DAY)
    faulty = {
        **EXACTLY_ONCE,
        "systems.log.samza.factory": FAULTS,
        "systems.log.log.path": log_path,
        "test.fault.dir": str(faults),
        "test.fault.partition": "0",
        "test.fault.rows": "100",
    }

    def materialize_until(phase: str) -> None:
        """The day materialized in a process of its own, SIGKILLed (with its Spark) at ``phase``."""
        run_until(
            SCRIPT,
            [json.dumps({**faulty, "test.fault.phase": phase})],
            faults / f"in-{phase}",
            env={"DAGSTER_HOME": str(home)},
        )

    # 1. killed mid-write: a task paused after 100 of its rows (written, open)
    materialize_until("pause-after-rows")
    assert len(_replay(config, "read_uncommitted")) >= 100
    assert _replay(config, "read_committed") == []

    # 2. launched again: writes the whole day, commits, and is killed before Dagster records it
    materialize_until("pause-after-commit")
    assert Counter(_replay(config, "read_committed")) == expected
    assert Counter(_replay(config, "read_uncommitted")) == expected  # the first launch's rows are gone

    # 3. launched a third time (this process, the same instance): nothing written, and it says so
    instance = dg.DagsterInstance.from_config(str(home))
    backfill = _eo_backfill({**EXACTLY_ONCE, "systems.log.log.path": log_path})
    resources = {"samza_systems": SamzaSystemsResource(log_path=log_path), "spark": spark_resource}
    result = dg.materialize([backfill.asset], partition_key=EO_DAY, resources=resources, instance=instance)
    assert result.success
    md = _metadata(result)
    assert md["already_written"] is True and md["records_resent"] == 0
    assert md["written_records"] == len(ON_EO_DAY)
    assert md["write_id"] == f"backfill/wordcount-1/log.sentences_replay/{EO_DAY}"
    assert Counter(_replay(config, "read_committed")) == expected
    # the killed runs never succeeded; only the third materialized the day
    runs = instance.get_run_records()
    assert sum(r.dagster_run.status == dg.DagsterRunStatus.SUCCESS for r in runs) == 1 and len(runs) == 3

    # the job (exactly-once: it reads read_committed) reads the day once from the batch stream, past
    # the offsets of the first launch's removed rows, and ends (both its inputs are bounded)
    job_config = Config.from_properties(wordcount.CONFIG_PATH).with_overrides(
        {**EXACTLY_ONCE, "systems.log.log.path": log_path}
    )
    words = [
        a
        for a in application_definitions("wordcount", job_config, declared_outputs=["log.words"]).assets
        if isinstance(a, dg.AssetsDefinition) and any(k.path[-1] == "words" for k in a.keys)
    ]
    md = _metadata(
        dg.materialize(words, resources={"samza_systems": SamzaSystemsResource(log_path=log_path)}, instance=instance)
    )
    assert md["messages_processed_per_stream"] == {
        "log.sentences": len(ON_EO_DAY) + len(OFF_EO_DAY),
        "log.sentences_replay": len(ON_EO_DAY),
    }


def test_an_exactly_once_backfill_run_again_sends_nothing_until_a_new_generation(tmp_path, spark_resource):
    config = _eo_log(tmp_path)
    log_path = config.get_str("systems.log.log.path")
    backfill = _eo_backfill({**EXACTLY_ONCE, "systems.log.log.path": log_path})
    resources = {"samza_systems": SamzaSystemsResource(log_path=log_path), "spark": spark_resource}
    instance = dg.DagsterInstance.ephemeral()
    expected = Counter(s for s, _ in ON_EO_DAY)

    first = _metadata(dg.materialize([backfill.asset], partition_key=EO_DAY, resources=resources, instance=instance))
    assert first["already_written"] is False and first["records_resent"] == len(ON_EO_DAY)
    again = _metadata(dg.materialize([backfill.asset], partition_key=EO_DAY, resources=resources, instance=instance))
    assert again["already_written"] is True and again["records_resent"] == 0 and again["nothing_to_reprocess"] is False
    assert again["written_records"] == len(ON_EO_DAY) and again["batch_stream_messages"] == len(ON_EO_DAY)
    assert Counter(_replay(config, "read_committed")) == expected
    # a new generation re-sends the day on purpose, once
    run_config = {"ops": {backfill.asset.op.name: {"config": {"generation": 1}}}}
    for _ in range(2):
        md = _metadata(
            dg.materialize(
                [backfill.asset], partition_key=EO_DAY, resources=resources, instance=instance, run_config=run_config
            )
        )
    assert md["already_written"] is True and md["write_id"].endswith(f"{EO_DAY}#g1")
    assert Counter(_replay(config, "read_committed")) == expected + expected


def test_an_exactly_once_backfill_into_a_kafka_batch_stream_is_a_config_error_naming_the_key():
    with pytest.raises(ConfigError, match="job.processing.guarantee.*systems.kafka.samza.factory") as info:
        _eo_backfill(
            {
                **EXACTLY_ONCE,
                "systems.kafka.samza.factory": "kafka",
                "systems.kafka.consumer.bootstrap.servers": "127.0.0.1:9",
                "streams.sentences_replay.samza.system": "kafka",
                "task.inputs": "log.sentences,kafka.sentences_replay",
            }
        )
    assert info.value.key == "systems.kafka.samza.factory"
