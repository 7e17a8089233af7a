"""Bounded jobs end by themselves on the thread and process runners: three input streams of
different lengths, on_end_of_stream once per task, every container completed."""

from __future__ import annotations

from pathlib import Path

import pytest

from samza_dagster.config import Config, ConfigError
from samza_dagster.container import ContainerStatus
from samza_dagster.runtime import RUNNERS, run_job
from tests.apps.harness import create_stream, produce, read_checkpoints

LENGTHS = {"a": 30, "b": 200, "c": 7}


def _config(tmp_path: Path, runner: str, **extra: str) -> Config:
    marker = tmp_path / "markers"
    marker.mkdir(exist_ok=True)
    entries = {
        "job.name": f"bounded-{runner}",
        "job.factory.class": runner,
        "job.container.count": "2",
        "job.default.system": "log",
        "systems.log.samza.factory": "log",
        "systems.log.log.path": str(tmp_path / "log"),
        "systems.log.samza.msg.serde": "string",
        "task.inputs": "log.a,log.b,log.c",
        "task.class": "tests.apps.tasks:EndOfStreamCountingTask",
        "test.marker.dir": str(marker),
        "task.commit.ms": "50",
    }
    for stream in LENGTHS:
        entries[f"systems.log.streams.{stream}.samza.bounded"] = "true"
    entries.update(extra)
    return Config(entries)


def _fill(config: Config) -> None:
    for stream, n in LENGTHS.items():
        create_stream(config, "log", stream, 2)
        produce(config, "log", stream, [(i % 2, None, f"{stream}{i}".encode()) for i in range(n)])


@pytest.mark.parametrize("runner", ["thread", "process"])
def test_bounded_job_over_three_streams_terminates_by_itself(tmp_path, runner):
    config = _config(tmp_path, runner)
    _fill(config)
    result = run_job(config)
    assert result.succeeded, result.summary_line()
    assert len(result.summaries) == 2
    assert {s.status for s in result.summaries} == {ContainerStatus.COMPLETED}
    assert result.messages_per_stream == {f"log.{s}": n for s, n in LENGTHS.items()}
    markers = sorted((tmp_path / "markers").glob("*.eos"))
    assert [m.name for m in markers] == ["Partition_0.eos", "Partition_1.eos"]
    per_task = {}
    for m in markers:
        lines = m.read_text().splitlines()
        assert len(lines) == 1, f"on_end_of_stream called {len(lines)} times for {m.name}"
        name, count, calls = lines[0].split("|")
        per_task[name] = int(count)
        assert calls == "1"
    assert sum(per_task.values()) == sum(LENGTHS.values())
    cps = read_checkpoints(config)
    for stream, n in LENGTHS.items():
        for p in (0, 1):
            expected = str(len(range(p, n, 2)) - 1)  # offsets are dense per partition
            assert cps[f"Partition {p}"].offsets[("log", stream, p)] == expected, (stream, p)


def test_failed_task_fails_the_job_naming_the_container_and_offset(tmp_path):
    config = _config(tmp_path, "thread", **{"task.class": "tests.apps.tasks:FailingTask", "job.container.count": "1"})
    create_stream(config, "log", "a", 1)
    create_stream(config, "log", "b", 1)
    create_stream(config, "log", "c", 1)
    produce(config, "log", "a", [(0, None, b"x"), (0, None, b"boom"), (0, None, b"y")])
    result = run_job(config)
    assert not result.succeeded
    assert result.failed_container == "0"
    assert "Partition 0" in result.error and "log.a partition 0 offset 1" in result.error


def test_process_runner_reports_a_failed_container(tmp_path):
    config = _config(tmp_path, "process", **{"task.class": "tests.apps.tasks:NotATask", "job.container.count": "1"})
    _fill(config)
    result = run_job(config)
    assert not result.succeeded
    assert "task.class" in result.error
    assert result.summaries[0].metrics.get("exit_code") == 2


def test_unknown_runner_names_the_key(tmp_path):
    with pytest.raises(ConfigError, match="job.factory.class"):
        run_job(_config(tmp_path, "nope"))
    assert set(RUNNERS) >= {"thread", "process", "spark"}
