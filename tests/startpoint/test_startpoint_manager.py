"""Startpoints on a real coordinator stream (embedded log), in Samza 1.8's metadata-store form
(``samza-startpoint-v1``, values Samza's own JSON unwrapped; Samza's classes read and write them
in tests/samza_interop): the four kinds round-trip; fan-out gives every task that reads a
partition its own copy in its ``samza-startpoint-v1-fan-out`` entry (a broadcast partition:
several tasks), lets the newer of a task's own and the partition's win, keeps one no task reads
(with a warning), and deletes the written ones; a malformed message is skipped with a warning
naming its key; the engine's earlier ``set-startpoint`` messages are read and migrated by the
fan-out."""

from __future__ import annotations

import json
import logging

import pytest

from samza_dagster.config import Config
from samza_dagster.coordinator.stream.messages import CoordinatorStreamMessage
from samza_dagster.coordinator.stream.reader_writer import (
    CoordinatorStreamReader,
    CoordinatorStreamWriter,
    read_coordinator_stream,
)
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
    parse_store_key,
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
    assert kinds[3].to_json() == '{"@type":"StartpointTimestamp","creationTimestamp":4,"timestampOffset":1709251200000}'
    assert kinds[2].to_json() == '{"@type":"StartpointSpecific","creationTimestamp":3,"specificOffset":"42"}'
    for sp in kinds:
        assert Startpoint.from_json(sp.to_json()) == sp
    # the engine's earlier form is still read
    assert Startpoint.from_json('{"type":"specific","offset":"42","creationTimestamp":3}') == kinds[2]
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
    with pytest.raises(StartpointError, match="unknown startpoint @type 'StartpointLatest'"):
        Startpoint.from_json('{"@type":"StartpointLatest","creationTimestamp":1}')
    with pytest.raises(StartpointError, match="StartpointOldest has no property 'offset'"):
        Startpoint.from_json('{"@type":"StartpointOldest","creationTimestamp":1,"offset":"3"}')
    with pytest.raises(StartpointError, match="StartpointSpecific without a specificOffset"):
        Startpoint.from_json('{"@type":"StartpointSpecific","creationTimestamp":1}')


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
            "T0": {
                _ssp("side", 0): StartpointOldest(creation_timestamp=100),
                _ssp("in", 0): StartpointSpecific("9", creation_timestamp=200),
            },  # its own, newer
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
        written = [k for k in manager.read_all() if not k.fanned_out]
        assert written == [StartpointKey(_ssp("gone", 0))]
        assert manager.fan_out(tasks) == {}  # a second fan-out changes nothing
        manager.remove_task_startpoints("T0", [_ssp("in", 0)])
        assert manager.task_startpoints(["T0"]) == {"T0": {_ssp("side", 0): StartpointOldest(creation_timestamp=100)}}
        manager.remove_task_startpoints("T0", [_ssp("side", 0)])
        assert "T0" not in manager.task_startpoints(["T0", "T1"])
    state = read_coordinator_stream(config)
    assert ("samza-startpoint-v1-fan-out", "T0") not in state.other  # an empty fan-out is deleted
    fan_out = json.loads(state.other[("samza-startpoint-v1-fan-out", "T1")].raw)
    assert set(fan_out) == {"timestamp", "fanOuts"}
    assert fan_out["fanOuts"] == {
        "log.in.1": {"@type": "StartpointSpecific", "creationTimestamp": 300, "specificOffset": "7"},
        "log.side.0": {"@type": "StartpointOldest", "creationTimestamp": 100},
    }


def test_written_as_samza_writes_them_on_the_coordinator_stream(config):
    with StartpointManager(config) as manager:
        manager.write_startpoint(_ssp("in", 2), StartpointSpecific("5", creation_timestamp=7))
        manager.write_startpoint(_ssp("in", 2), StartpointOldest(creation_timestamp=8), task_name="Partition 2")
    raw = _raw_messages(config)
    assert raw == [
        (
            b'[1,"samza-startpoint-v1","log.in.2"]',
            b'{"@type":"StartpointSpecific","creationTimestamp":7,"specificOffset":"5"}',
        ),
        (b'[1,"samza-startpoint-v1","log.in.2.Partition 2"]', b'{"@type":"StartpointOldest","creationTimestamp":8}'),
    ]


def _raw_messages(config: Config) -> list[tuple[bytes, bytes | None]]:
    with CoordinatorStreamReader(config) as reader:
        messages, _ = reader.read()
    return [m.encode() for _, m in messages]


def test_a_malformed_startpoint_is_skipped_naming_its_key(config, caplog):
    with CoordinatorStreamWriter(config, "someone") as writer:
        writer.send(
            CoordinatorStreamMessage.set_startpoint(
                "someone", "log.x.0", {"system": "log", "stream": "x", "partition": "0", "startpoint": "{"}
            ),
            CoordinatorStreamMessage.unwrapped("samza-startpoint-v1", "log.z.0", b'{"@type":"StartpointNewest"}'),
        )
    with caplog.at_level(logging.WARNING), StartpointManager(config) as manager:
        manager.write_startpoint(_ssp("y", 0), StartpointOldest())
        for _ in range(3):  # a run folds the stream at start, fan-out and each commit: one warning
            assert list(manager.read_all()) == [StartpointKey(_ssp("y", 0))]
    assert caplog.text.count("skipping set-startpoint 'log.x.0'") == 1
    assert caplog.text.count("skipping samza-startpoint-v1 'log.z.0'") == 1
    assert "unknown startpoint @type 'StartpointNewest'" in caplog.text


def test_the_earlier_set_startpoint_messages_are_read_and_migrated_by_the_fan_out(config, caplog):
    def earlier(key: StartpointKey, sp: dict) -> CoordinatorStreamMessage:
        return CoordinatorStreamMessage.set_startpoint(
            "old", key.coordinator_key(), {**key.to_values(), "startpoint": json.dumps(sp)}
        )

    with CoordinatorStreamWriter(config, "old") as writer:
        writer.send(
            earlier(StartpointKey(_ssp("in", 0)), {"type": "specific", "offset": "4", "creationTimestamp": 10}),
            earlier(StartpointKey(_ssp("in", 1), "T1"), {"type": "oldest", "creationTimestamp": 11}),
        )
    with StartpointManager(config) as manager:
        assert manager.read_all() == {
            StartpointKey(_ssp("in", 0)): StartpointSpecific("4", creation_timestamp=10),
            StartpointKey(_ssp("in", 1), "T1", fanned_out=True): StartpointOldest(creation_timestamp=11),
        }
        # a container started before the coordinator migrated them still finds its task's
        assert manager.task_startpoints(["T1"]) == {"T1": {_ssp("in", 1): StartpointOldest(creation_timestamp=11)}}
        with caplog.at_level(logging.INFO, logger="samza_dagster.startpoint.manager"):
            manager.fan_out({"T0": {_ssp("in", 0)}, "T1": {_ssp("in", 1)}})
        assert "migrated 2 startpoint(s) from the engine's earlier set-startpoint messages" in caplog.text
        assert manager.read_all() == {
            StartpointKey(_ssp("in", 0), "T0", fanned_out=True): StartpointSpecific("4", creation_timestamp=10),
            StartpointKey(_ssp("in", 1), "T1", fanned_out=True): StartpointOldest(creation_timestamp=11),
        }
    state = read_coordinator_stream(config)
    assert not [k for k in state.other if k[0] == "set-startpoint"]  # the earlier ones are deleted
    assert sorted(k for k in state.other) == [
        ("samza-startpoint-v1-fan-out", "T0"),
        ("samza-startpoint-v1-fan-out", "T1"),
    ]


def test_samza_store_keys_split_with_the_jobs_streams_first():
    """Samza never parses its keys; listing must. ``<system>.<stream>.<partition>[.<task>]`` is
    ambiguous once a stream name holds a dot and a digit part: the job's streams decide."""
    key = StartpointKey(SystemStreamPartition("kafka", "v.1.b", 0), "Partition 0")
    assert key.store_key() == "kafka.v.1.b.0.Partition 0"
    assert parse_store_key(key.store_key(), [("kafka", "v.1.b")]) == key
    assert parse_store_key(key.store_key()) == StartpointKey(SystemStreamPartition("kafka", "v", 1), "b.0.Partition 0")
    assert parse_store_key("kafka.page.views.3") == StartpointKey(SystemStreamPartition("kafka", "page.views", 3))
    for text in (parse_store_key("kafka.v.1.b", [("kafka", "v.1.b")]).store_key(), "kafka.v.1.b.0.Partition 0"):
        assert parse_store_key(text).store_key() == text  # whichever split, the same key is deleted
    with pytest.raises(StartpointError, match="is not <system>.<stream>.<partition>"):
        parse_store_key("kafka.nopartition")
