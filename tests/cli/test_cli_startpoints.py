"""``samza-dagster startpoint set|list|delete`` on the embedded log, in process: the four kinds
are written for the partitions asked for; bad input (a stream the job does not read, an unknown
partition, an offset outside the partition, a timestamp no message is at or after, a timestamp
that is not one) exits 2 naming the value and writes nothing; a set startpoint is applied by the
next run of the job."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.stream_helpers import create_streams, produce, read_stream
from samza_dagster.cli import main
from samza_dagster.config import Config
from samza_dagster.model import SystemStreamPartition
from samza_dagster.runtime import run_job
from samza_dagster.runtime.startpoints import list_startpoints
from samza_dagster.startpoint.startpoint import (
    StartpointOldest,
    StartpointSpecific,
    StartpointTimestamp,
    StartpointUpcoming,
)

JOB = """job.name=startpoint-cli
job.factory.class=thread
job.default.system=log
systems.log.samza.factory=log
systems.log.samza.msg.serde=string
systems.log.streams.words.samza.bounded=true
task.class=tests.apps.tasks:CopyTask
task.inputs=log.words
"""
T0 = 1_709_251_200_000  # 2024-03-01T00:00:00Z


@pytest.fixture
def job(tmp_path: Path, monkeypatch) -> tuple[str, Config]:
    monkeypatch.setenv("SAMZA_LOG_PATH", str(tmp_path / "log"))
    path = tmp_path / "job.properties"
    path.write_text(JOB)
    config = Config.from_properties(str(path)).with_overrides({"systems.log.log.path": str(tmp_path / "log")})
    create_streams(config, {"words": 2, "other": 1, "output": 1})
    # partition 0: w0..w4 an hour apart; partition 1: one message
    produce(config, "words", [(None, f"w{i}".encode(), T0 + 3_600_000 * i) for i in range(5)], source="t")
    return str(path), config


def _cli(config_path: str, *argv: str) -> int:
    return main(["startpoint", argv[0], "--config-path", config_path, *argv[1:]])


def test_set_list_delete_each_kind(job, capsys):
    path, config = job
    ssp0, ssp1 = (SystemStreamPartition("log", "words", p) for p in (0, 1))
    assert _cli(path, "set", "--stream", "log.words", "--oldest") == 0
    assert {k.ssp: type(v) for k, v in list_startpoints(config).items()} == {
        ssp0: StartpointOldest,
        ssp1: StartpointOldest,
    }
    assert _cli(path, "set", "--stream", "words", "--partition", "0", "--offset", "1") == 0
    assert _cli(path, "set", "--stream", "log.words", "--partition", "1", "--upcoming") == 0
    got = {k.ssp: v for k, v in list_startpoints(config).items()}
    assert isinstance(got[ssp0], StartpointSpecific) and got[ssp0].offset == "1"
    assert isinstance(got[ssp1], StartpointUpcoming)
    assert _cli(path, "set", "--stream", "log.words", "--partition", "0", "--timestamp", "2024-03-01T01:30:00Z") == 0
    out = capsys.readouterr().out
    # the earliest message at or after 01:30 is w2 (02:00); partition 0 holds every other word
    assert "log.words partition 0: timestamp 1709256600000 (2024-03-01T01:30:00.000Z) (offset" in out
    got = {k.ssp: v for k, v in list_startpoints(config).items()}
    assert isinstance(got[ssp0], StartpointTimestamp) and got[ssp0].timestamp == T0 + 5_400_000

    assert _cli(path, "list") == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed == [
        "log.words partition 0: timestamp 1709256600000 (2024-03-01T01:30:00.000Z)",
        "log.words partition 1: upcoming",
    ]
    assert _cli(path, "delete", "--stream", "log.words", "--partition", "1") == 0
    assert [k.ssp for k in list_startpoints(config)] == [ssp0]
    assert _cli(path, "delete") == 0
    assert list_startpoints(config) == {}


def test_list_and_delete_handle_a_task_startpoint_beside_a_partition_one(job, capsys):
    """What a killed run leaves: the fanned-out ``--oldest`` of a task, then a new partition-level
    ``--offset`` for the same partition. Listing and deleting both work and say both."""
    from samza_dagster.startpoint.manager import StartpointManager

    path, config = job
    ssp0 = SystemStreamPartition("log", "words", 0)
    with StartpointManager(config) as manager:
        manager.write_startpoint(ssp0, StartpointOldest(), "Partition 0")
    assert _cli(path, "set", "--stream", "log.words", "--partition", "0", "--offset", "3") == 0
    capsys.readouterr()
    assert _cli(path, "list") == 0
    assert capsys.readouterr().out.splitlines() == [
        "log.words partition 0: offset 3",
        "log.words partition 0 of task 'Partition 0': oldest",
    ]
    assert _cli(path, "delete", "--stream", "log.words") == 0
    assert capsys.readouterr().out.splitlines() == [
        "deleted startpoint of log.words partition 0",
        "deleted startpoint of log.words partition 0 of task 'Partition 0'",
    ]
    assert list_startpoints(config) == {}


@pytest.mark.parametrize(
    "argv, named",
    [
        (["--stream", "log.other", "--oldest"], "stream 'log.other' is not an input of job startpoint-cli"),
        (["--stream", "log.words", "--partition", "5", "--oldest"], "log.words has no partition 5"),
        (["--stream", "log.words", "--partition", "0", "--offset", "99"], "offset 99 is not in log.words partition 0"),
        (["--stream", "log.words", "--offset", "x1"], "offset 'x1' is not an offset of log.words"),
        (
            ["--stream", "log.words", "--timestamp", "2099-01-01T00:00:00Z"],
            "timestamp 4070908800000 (2099-01-01T00:00:00.000Z) for log.words partition",
        ),
        (
            ["--stream", "log.words", "--timestamp", "last tuesday"],
            "timestamp 'last tuesday' is not epoch milliseconds",
        ),
    ],
    ids=[
        "not an input",
        "unknown partition",
        "offset outside",
        "offset not one",
        "timestamp after all",
        "bad timestamp",
    ],
)
def test_bad_input_exits_2_naming_the_value_and_writes_nothing(job, capsys, argv, named):
    path, config = job
    assert _cli(path, "set", "--stream", "log.words", "--partition", "1", "--oldest") == 0
    before = list_startpoints(config)
    assert _cli(path, "set", *argv) == 2
    err = capsys.readouterr().err
    assert named in err and "Traceback" not in err
    assert list_startpoints(config) == before  # nothing written: no offset moves


def test_a_set_startpoint_is_applied_by_the_next_run(job):
    path, config = job
    run_config = config.with_overrides({"test.output.stream": "output"})
    assert run_job(run_config).succeeded
    first = len(read_stream(config, "output"))
    assert first == 5
    assert _cli(path, "set", "--stream", "log.words", "--partition", "0", "--timestamp", str(T0 + 3 * 3_600_000)) == 0
    assert run_job(run_config).succeeded
    again = [r.value.decode() for r in read_stream(config, "output")][first:]
    # partition 0's messages at or after 03:00 are read again, nothing of partition 1
    p0 = [r for r in read_stream(config, "words") if r.partition == 0 and r.timestamp >= T0 + 3 * 3_600_000]
    assert again == [r.value.decode() for r in p0] and again
    assert list_startpoints(config) == {}
