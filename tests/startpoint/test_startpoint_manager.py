"""Startpoints on a real coordinator stream (embedded log): the four kinds round-trip through
``set-startpoint`` messages in compact JSON; fan-out gives every task that reads a partition its
own copy (a broadcast partition: several tasks), lets the newer of a task's own and the
partition's win, keeps one no task reads (with a warning), and deletes the partition-level ones;
a malformed message is skipped with a warning naming its key."""

from __future__ import annotations

import logging

import pytest

from samza_dagster.config import Config
from samza_dagster.coordinator.stream.messages import CoordinatorStreamMessage
from samza_dagster.coordinator.stream.reader_writer import CoordinatorStreamWriter
from samza_dagster.model import SystemStreamPartition
from samza_dagster.startpoint.manager import StartpointManager
from samza_dagster.startpoint.startpoint import (
    Startpoint,
    StartpointError,
    StartpointKey,
    StartpointOldest,
    StartpointSpecific,
    StartpointTimestamp,
    StartpointUpcoming,
    parse_timestamp_value,
)


@pytest.fixture
def config(tmp_path) -> Config:
    return Config(
        {
            "job.name": "sp",
            "job.default.system": "log",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(tmp_path / "log"),
        }
    )


def _ssp(stream: str, p: int) -> SystemStreamPartition:
    return SystemStreamPartition("log", stream, p)


def test_the_four_kinds_round_trip_as_compact_json(config):
    kinds = [
        StartpointOldest(creation_timestamp=1),
        StartpointUpcoming(creation_timestamp=2),
        StartpointSpecific("42", creation_timestamp=3),
        StartpointTimestamp(1_709_251_200_000, creation_timestamp=4),
    ]
    assert kinds[3].to_json() == '{"type":"timestamp","timestamp":1709251200000,"creationTimestamp":4}'
    with StartpointManager(config) as manager:
        for p, sp in enumerate(kinds):
            manager.write_startpoint(_ssp("a.b", p), sp)  # a dot in the stream name
        manager.write_startpoint(_ssp("a.b", 0), kinds[2], task_name="Partition 0")
        assert manager.read_all() == {
            **{StartpointKey(_ssp("a.b", p)): sp for p, sp in enumerate(kinds)},
            StartpointKey(_ssp("a.b", 0), "Partition 0"): kinds[2],
        }
        assert manager.read_startpoint(_ssp("a.b", 3)) == kinds[3]
        manager.delete_startpoint(_ssp("a.b", 3))
        assert manager.read_startpoint(_ssp("a.b", 3)) is None
    for text in ("2024-03-01T00:00:00Z", "2024-03-01T00:00:00", "2024-03-01T01:00:00+01:00", "1709251200000"):
        assert parse_timestamp_value(text) == 1_709_251_200_000
    for bad in ("soon", "-5", True):
        with pytest.raises(StartpointError):
            parse_timestamp_value(bad)
    with pytest.raises(StartpointError, match="unknown startpoint type 'latest'"):
        Startpoint.from_json('{"type":"latest"}')


def test_fan_out_to_every_reader_newest_wins_unread_kept(config, caplog):
    tasks = {"T0": {_ssp("in", 0), _ssp("side", 0)}, "T1": {_ssp("in", 1), _ssp("side", 0)}}
    with StartpointManager(config) as manager:
        manager.write_startpoint(_ssp("side", 0), StartpointOldest(creation_timestamp=100))  # broadcast
        manager.write_startpoint(_ssp("in", 0), StartpointSpecific("5", creation_timestamp=100))
        manager.write_startpoint(_ssp("in", 0), StartpointSpecific("9", creation_timestamp=200), task_name="T0")
        manager.write_startpoint(_ssp("in", 1), StartpointSpecific("7", creation_timestamp=300))
        manager.write_startpoint(_ssp("in", 1), StartpointSpecific("1", creation_timestamp=50), task_name="T1")
        manager.write_startpoint(_ssp("gone", 0), StartpointUpcoming(creation_timestamp=1))
        with caplog.at_level(logging.WARNING):
            written = manager.fan_out(tasks)
        assert "startpoint upcoming for log.gone partition 0 is not applied: no task of this job reads" in caplog.text
        assert written == {
            "T0": {_ssp("side", 0): StartpointOldest(creation_timestamp=100)},
            "T1": {
                _ssp("side", 0): StartpointOldest(creation_timestamp=100),
                _ssp("in", 1): StartpointSpecific("7", creation_timestamp=300),
            },  # newer than T1's own
        }
        assert manager.task_startpoints(["T0", "T1"]) == {
            "T0": {
                _ssp("side", 0): StartpointOldest(creation_timestamp=100),
                _ssp("in", 0): StartpointSpecific("9", creation_timestamp=200),
            },  # its own, newer
            "T1": {
                _ssp("side", 0): StartpointOldest(creation_timestamp=100),
                _ssp("in", 1): StartpointSpecific("7", creation_timestamp=300),
            },
        }
        partition_level = [k for k in manager.read_all() if k.task_name is None]
        assert partition_level == [StartpointKey(_ssp("gone", 0))]
        assert manager.fan_out(tasks) == {}  # a second fan-out changes nothing
        manager.remove_task_startpoints("T0", [_ssp("in", 0), _ssp("side", 0)])
        assert "T0" not in manager.task_startpoints(["T0", "T1"])


def test_a_malformed_set_startpoint_is_skipped_naming_its_key(config, caplog):
    with CoordinatorStreamWriter(config, "someone") as writer:
        writer.send(
            CoordinatorStreamMessage.set_startpoint(
                "someone", "log.x.0", {"system": "log", "stream": "x", "partition": "0", "startpoint": "{"}
            )
        )
    with caplog.at_level(logging.WARNING), StartpointManager(config) as manager:
        manager.write_startpoint(_ssp("y", 0), StartpointOldest())
        for _ in range(3):  # a run folds the stream at start, fan-out and each commit: one warning
            assert list(manager.read_all()) == [StartpointKey(_ssp("y", 0))]
    assert caplog.text.count("skipping set-startpoint 'log.x.0'") == 1
