"""An exactly-once reprocessing backfill under Dagster (wordcount with
``job.processing.guarantee=exactly-once``): the day's materialization is killed mid-write, launched
again and killed after its write committed but before Dagster recorded it, then launched a third
time — and the batch stream holds each of the day's records exactly once for a ``read_committed``
reader (the job's own isolation), the last run saying the day was written already.

A real Dagster instance on disk shared by the killed runs (each in a process of its own, with its
Spark session) and the last one (in this process); real Spark; real SQLite files. Faults come from
tests/spark_write_faults.py.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import dagster as dg
import pytest

from jobs.wordcount import definitions as wordcount
from jobs.wordcount.sample import load_sentences
from samza_dagster.config import Config, ConfigError
from samza_dagster.orchestration import SamzaSystemsResource, SparkResource, reprocessing_backfill
from samza_dagster.system.streams import produce
from support.log_reading import read_partition
from tests.spark_write_faults import run_until

pytestmark = pytest.mark.spark

DAY = "2024-03-01"
FAULTS = "tests.spark_write_faults:FaultyLogSystemFactory"
EXACTLY_ONCE = {"job.processing.guarantee": "exactly-once"}


def _ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp() * 1000)


#: 600 sentences on the day (keyed by their first word, so both partitions get some), 3 outside it
ON_DAY = [(f"s{i} on the day", _ms(DAY) + i * 60_000) for i in range(600)]
OFF_DAY = [("day before", _ms(DAY) - 1), ("day after", _ms("2024-03-02")), ("much later", _ms("2024-04-01"))]


def _backfill(overrides: dict[str, str]):
    config = Config.from_properties(wordcount.CONFIG_PATH).with_overrides(overrides)
    return reprocessing_backfill("wordcount", config, source_stream="sentences", batch_stream="sentences_replay",
                                 start_date="2024-01-01")


SCRIPT = """
import json, sys
import dagster as dg
from samza_dagster.orchestration import SamzaSystemsResource, SparkResource
from tests.test_dagster_backfill_exactly_once import DAY, _backfill
overrides = json.loads(sys.argv[1])
backfill = _backfill(overrides)
dg.materialize([backfill.asset], partition_key=DAY, instance=dg.DagsterInstance.get(),
               resources={"samza_systems": SamzaSystemsResource(),
                          "spark": SparkResource(master="local[2]", app_name="killed-backfill")})
"""


def _materialize_until(overrides: dict[str, str], home: Path, marker: Path) -> None:
    """A Dagster materialization of the day in a process of its own, SIGKILLed once ``marker`` appears."""
    run_until(SCRIPT, [json.dumps(overrides)], marker, env={"DAGSTER_HOME": str(home)})


def _replay(config: Config, isolation: str) -> list[str]:
    cfg = Config({"systems.log.log.path": config.get_str("systems.log.log.path"),
                  "systems.log.consumer.isolation.level": isolation})  # not bounded: no end-of-stream
    return [v for p in range(2) for _, _, v in read_partition(cfg, "log", "sentences_replay", p, "0")]


def test_a_killed_and_relaunched_exactly_once_backfill_leaves_each_record_once(tmp_path):
    home = tmp_path / "dagster"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    faults = tmp_path / "faults"
    faults.mkdir()
    log_path = str(tmp_path / "log")
    config = Config.from_properties(wordcount.CONFIG_PATH).with_overrides({"systems.log.log.path": log_path})
    load_sentences(config, [])  # sentences and the empty batch stream sentences_replay
    produce(config, "sentences", [(s.split()[0].encode(), s.encode(), t) for s, t in ON_DAY + OFF_DAY])
    expected = Counter(s for s, _ in ON_DAY)
    faulty = {**EXACTLY_ONCE, "systems.log.samza.factory": FAULTS, "systems.log.log.path": log_path,
              "test.fault.dir": str(faults), "test.fault.partition": "0", "test.fault.rows": "100"}

    # 1. killed mid-write: a task paused after 100 of its rows (written, open)
    _materialize_until({**faulty, "test.fault.phase": "pause-after-rows"}, home, faults / "in-pause-after-rows")
    assert len(_replay(config, "read_uncommitted")) >= 100
    assert _replay(config, "read_committed") == []

    # 2. launched again: writes the whole day, commits, and is killed before Dagster records it
    _materialize_until({**faulty, "test.fault.phase": "pause-after-commit"}, home, faults / "in-pause-after-commit")
    assert Counter(_replay(config, "read_committed")) == expected
    assert Counter(_replay(config, "read_uncommitted")) == expected  # the first launch's rows are gone

    # 3. launched a third time (this process, the same instance): nothing written, and it says so
    instance = dg.DagsterInstance.from_config(str(home))
    backfill = _backfill({**EXACTLY_ONCE, "systems.log.log.path": log_path})
    spark = SparkResource(master="local[2]", app_name="test-dagster-backfill-exactly-once")
    resources = {"samza_systems": SamzaSystemsResource(log_path=log_path), "spark": spark}
    try:
        result = dg.materialize([backfill.asset], partition_key=DAY, resources=resources, instance=instance)
        assert result.success
        (mat,) = result.get_asset_materialization_events()
        md = {k: v.value for k, v in mat.materialization.metadata.items()}
        assert md["already_written"] is True and md["records_resent"] == 0
        assert md["written_records"] == len(ON_DAY)
        assert md["write_id"] == f"backfill/wordcount-1/log.sentences_replay/{DAY}"
        assert Counter(_replay(config, "read_committed")) == expected
        # the killed runs never succeeded; only the third materialized the day
        runs = instance.get_run_records()
        assert sum(r.dagster_run.status == dg.DagsterRunStatus.SUCCESS for r in runs) == 1 and len(runs) == 3

        # a new generation re-sends the day on purpose, once
        again = dg.materialize([backfill.asset], partition_key=DAY, resources=resources, instance=instance,
                               run_config={"ops": {backfill.asset.op.name: {"config": {"generation": 1}}}})
        (mat,) = again.get_asset_materialization_events()
        md = {k: v.value for k, v in mat.materialization.metadata.items()}
        assert md["already_written"] is False and md["records_resent"] == len(ON_DAY)
        assert Counter(_replay(config, "read_committed")) == expected + expected
    finally:
        spark.get_session().stop()


def test_an_exactly_once_backfill_into_a_kafka_batch_stream_is_a_config_error_naming_the_key():
    with pytest.raises(ConfigError, match="job.processing.guarantee.*systems.kafka.samza.factory") as info:
        _backfill({**EXACTLY_ONCE, "systems.kafka.samza.factory": "kafka",
                   "systems.kafka.consumer.bootstrap.servers": "127.0.0.1:9",
                   "streams.sentences_replay.samza.system": "kafka",
                   "task.inputs": "log.sentences,kafka.sentences_replay"})
    assert info.value.key == "systems.kafka.samza.factory"
