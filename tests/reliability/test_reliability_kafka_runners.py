"""Kafka crashes on every runner, and at-least-once on Kafka under SIGKILL.

The exactly-once word-count job of tests/reliability/test_reliability_exactly_once_kafka.py (input,
output, changelog, checkpoints and coordinator stream all on Apache Kafka, both clients) is killed
at points it has reached on the two runners that test leaves out:

* the **thread runner** — ``samza-dagster run`` in a process of its own, its containers threads of
  it, SIGKILLed whole at each point and run again;
* the **Spark runner** — one run holds every kill: each stage attempt's container takes the next
  point, its Python worker is SIGKILLed there and Spark retries the stage, as it restarts a
  crashed container (on the default client: the clients differ below the container, which the
  thread and process runners' tests cover on both).

Checked: a ``read_committed`` reader of the output sees every input's id exactly once, and the
stores hold the exact word counts.

And the same job **at-least-once** on the process runner: after the kills, every input's id is
in the output at least once (none lost) and the stores are exact (transactional state holds
without transactions); the ids seen more than once are counted and reported — what a crash makes
an at-least-once job send again.
"""

from __future__ import annotations

import random
import sys
from collections import Counter

import pytest

from samza_dagster.runtime.spark_runner import SparkJobRunner
from samza_dagster.spark.session import get_or_create_spark
from tests.kill_points import (
    KillPoint,
    Kills,
    SubprocessRun,
    ThreadedRun,
    kill_at_each_point,
    with_kill_points,
)
from tests.reliability.test_reliability_crash import MESSAGES, PARTITIONS, SEED, WORDS, kill_process_runner_at
from tests.reliability.test_reliability_exactly_once_kafka import Job

pytestmark = pytest.mark.kafka

#: three kills per run (each restart of a Kafka job costs seconds; the process-runner test has ten):
#: inside a commit, mid-restore (after a commit has completed, so there is a changelog to restore)
#: and at random
THREAD_POINTS = [KillPoint("before-commit", 3), KillPoint("restore", 1), KillPoint("random", 60)]
#: at-least-once has no transaction to commit: a kill mid-process instead
AT_LEAST_ONCE_POINTS = [KillPoint("process", 30), KillPoint("restore", 1), KillPoint("after-checkpoint", 2)]


def _exact_stores() -> list[dict[str, int]]:
    """The word counts each task (one per partition, in partition order) must hold: from the input."""
    rnd = random.Random(SEED)
    expected = [Counter() for _ in range(PARTITIONS)]
    for i in range(MESSAGES):
        expected[i % PARTITIONS][rnd.choice(WORDS)] += 1
    return [dict(counts) for counts in expected]


def _stores_in_order(job: Job) -> list[dict[str, int]]:
    stores = job.stores()
    return [stores[name] for name in sorted(stores)]


def _check_exactly_once(job: Job, landed: list[KillPoint]) -> None:
    assert _stores_in_order(job) == _exact_stores(), landed
    ids = job.committed_ids()
    missing = [f"m{i}" for i in range(MESSAGES) if ids[f"m{i}"] == 0]
    twice = {k: n for k, n in ids.items() if n > 1}
    assert not missing, f"{len(missing)} inputs never reached the output, e.g. {missing[:5]} ({landed})"
    assert not twice, f"{len(twice)} inputs in the output more than once, e.g. {list(twice.items())[:5]} ({landed})"


def test_thread_runner_sigkill_on_kafka_leaves_each_output_exactly_once(kafka_config, kafka_topic_prefix, tmp_path):
    job = Job(kafka_config, kafka_topic_prefix, tmp_path / "state", **{"job.factory.class": "thread"})
    job.fill()
    kills = Kills(tmp_path / "faults", THREAD_POINTS)
    config = with_kill_points(job.config, "kafka", kills)
    props = tmp_path / "job.properties"
    props.write_text("".join(f"{k}={v}\n" for k, v in config.to_dict().items()))
    argv = [sys.executable, "-m", "samza_dagster.cli", "run", "--config-path", str(props)]
    kill_at_each_point(kills, lambda: SubprocessRun(argv))
    assert kills.landed == kills.points, f"only {len(kills.landed)} of {kills.points} landed: the job ended first"
    job.run_to_end()
    _check_exactly_once(job, kills.landed)


#: every kill in one Spark run (no "markers": Kafka's coordinator writes them outside the container)
SPARK_POINTS = [KillPoint("before-commit", 3), KillPoint("restore", 1), KillPoint("after-flush", 4)]


@pytest.mark.spark
@pytest.mark.timeout(600)
# the Spark runner runs the thread runner's containers: the clients' differences under a kill are
# the thread and process runners' tests'; the default client alone here keeps the suite short
@pytest.mark.parametrize("kafka_client", ["confluent"])
def test_spark_runner_sigkill_on_kafka_leaves_each_output_exactly_once(kafka_config, kafka_topic_prefix, tmp_path):
    job = Job(
        kafka_config,
        kafka_topic_prefix,
        tmp_path / "state",
        **{"job.factory.class": "spark", "job.container.retry.count": str(len(SPARK_POINTS))},
    )
    job.fill()
    kills = Kills(tmp_path / "faults", SPARK_POINTS)
    config = with_kill_points(job.config, "kafka", kills)
    spark = get_or_create_spark(
        {"spark.stage.maxConsecutiveAttempts": str(len(SPARK_POINTS) + 1), "spark.sql.shuffle.partitions": "1"},
        master="local[1]",
        app_name="test-eos-spark-kafka",
    )
    try:
        runner = SparkJobRunner(config, spark=spark)
        run = ThreadedRun(runner.run, stop=runner.stop, restarts_after_a_kill=True)
        kill_at_each_point(kills, lambda: run)
        run.wait(480)
    finally:
        spark.stop()
    ended = run.error or (run.result.summary_line() if run.result is not None else None)
    assert kills.landed == kills.points, (
        f"only {len(kills.landed)} of {kills.points} landed: the job ended first: {ended}"
    )
    assert run.error is None, run.error
    assert run.result.succeeded, run.result.summary_line()
    _check_exactly_once(job, kills.landed)


def test_at_least_once_on_kafka_under_sigkill_loses_nothing_and_keeps_the_stores_exact(
    kafka_config, kafka_topic_prefix, tmp_path, record_property
):
    job = Job(kafka_config, kafka_topic_prefix, tmp_path / "state", **{"job.processing.guarantee": "at-least-once"})
    job.fill()
    kills = Kills(tmp_path / "faults", AT_LEAST_ONCE_POINTS)
    kill_process_runner_at(kills, with_kill_points(job.config, "kafka", kills))
    job.run_to_end()

    assert _stores_in_order(job) == _exact_stores(), kills.landed
    ids = job.committed_ids()
    missing = [f"m{i}" for i in range(MESSAGES) if ids[f"m{i}"] == 0]
    assert not missing, f"{len(missing)} inputs never reached the output, e.g. {missing[:5]} ({kills.landed})"
    assert set(ids) == {f"m{i}" for i in range(MESSAGES)}
    # sent again after a kill: what followed the last commit (reported, not bounded: at-least-once)
    duplicates = sum(n - 1 for n in ids.values())
    record_property("duplicates", duplicates)
    print(f"at-least-once on Kafka, {len(kills.landed)} kills: {duplicates} outputs sent again, none lost")
