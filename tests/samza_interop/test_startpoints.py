"""Startpoints against Apache Samza 1.8.0's own ``StartpointManager``, over a metadata store that
turns coordinator stream messages into Samza's namespaced keys and back exactly as Samza's
``CoordinatorStreamStore`` does (SamzaWire.java, ``startpoint.store``): what the engine writes on a
job's coordinator stream — written startpoints, fan-outs, removals — Samza reads with every field
equal, and the bytes Samza writes for the same startpoint are the engine's; what Samza writes, the
engine reads, fans out and applies. Whole flows too: a startpoint set by ``samza-dagster
startpoint set`` is fanned out by Samza's ``fanOut`` and reaches the task through
``getFanOutForTask`` (what Samza's job coordinator and ``OffsetManager`` call), and a startpoint
Samza's ``writeStartpoint`` put on a job's coordinator stream moves the job here."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from jobs.stream_helpers import read_stream
from samza_dagster.config import Config
from samza_dagster.coordinator.stream.messages import CoordinatorStreamMessage, coordinator_stream_name
from samza_dagster.coordinator.stream.reader_writer import CoordinatorStreamWriter, create_coordinator_stream
from samza_dagster.model import SystemStreamPartition
from samza_dagster.runtime.startpoints import list_startpoints, set_startpoints
from samza_dagster.startpoint.manager import StartpointManager
from samza_dagster.startpoint.startpoint import (
    Startpoint,
    StartpointKey,
    StartpointOldest,
    StartpointSpecific,
    StartpointTimestamp,
    StartpointUpcoming,
)
from tests.samza_interop.harness import SamzaWire, b64, unb64
from tests.startpoint.test_startpoints import Scenario, produce_timed


@pytest.fixture
def config(tmp_path: Path) -> Config:
    config = Config(
        {
            "job.name": "sp-interop",
            "job.default.system": "log",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(tmp_path / "log"),
        }
    )
    create_coordinator_stream(config)
    return config


def _ssp(stream: str, p: int, system: str = "log") -> SystemStreamPartition:
    return SystemStreamPartition(system, stream, p)


def _ssp_json(ssp: SystemStreamPartition) -> dict[str, Any]:
    return {"system": ssp.system, "stream": ssp.stream, "partition": ssp.partition}


def _samza_view(sp: Startpoint) -> dict[str, Any]:
    """A startpoint as SamzaWire reports Samza's object: its class and getters."""
    view: dict[str, Any] = {"class": sp.samza_type, "creationTimestamp": sp.creation_timestamp}
    if isinstance(sp, StartpointSpecific):
        view["specificOffset"] = sp.offset
    if isinstance(sp, StartpointTimestamp):
        view["timestampOffset"] = sp.timestamp
    return view


def _stream_messages(config: Config) -> list[dict[str, str | None]]:
    """The job's coordinator stream as it is on the log: every message's key and value bytes."""
    name = coordinator_stream_name(config.get("job.name"), config.get("job.id", "1"))
    return [
        {"key": b64(r.key or b""), "value": None if r.value is None else b64(r.value)}
        for r in read_stream(config, name, system="log")
    ]


def _samza(
    samza: SamzaWire, config: Config | None, *actions: dict[str, Any]
) -> tuple[list[Any], list[tuple[bytes, bytes | None]]]:
    """Samza's StartpointManager over the job's coordinator stream (an empty one when None): the
    actions' results and the messages Samza wrote (key and value bytes)."""
    messages = [] if config is None else _stream_messages(config)
    got = samza.call("startpoint.store", messages=messages, actions=list(actions))
    written = [(unb64(w["key"]), None if w["value"] is None else unb64(w["value"])) for w in got["written"]]
    return got["results"], written


def _apply(config: Config, written: list[tuple[bytes, bytes | None]]) -> None:
    """What Samza wrote, appended to the job's coordinator stream as it is."""
    with CoordinatorStreamWriter(config, "samza") as writer:
        writer.send(*(CoordinatorStreamMessage.decode(key, value) for key, value in written))


def _now() -> int:
    # Samza ignores a written startpoint older than 12 hours: these are fresh
    return time.time_ns() // 1_000_000


def _kinds(now: int) -> list[Startpoint]:
    return [
        StartpointOldest(creation_timestamp=now),
        StartpointUpcoming(creation_timestamp=now + 1),
        StartpointSpecific("42", creation_timestamp=now + 2),
        StartpointTimestamp(1_709_251_200_000, creation_timestamp=now + 3),
    ]


def test_samza_reads_every_kind_the_engine_writes_and_writes_the_same_bytes(samza: SamzaWire, config: Config) -> None:
    kinds = _kinds(_now())
    with StartpointManager(config) as manager:
        for p, sp in enumerate(kinds):
            manager.write_startpoint(_ssp("in", p), sp)
        manager.write_startpoint(_ssp("in", 0), kinds[2], task_name="Partition 0")
    reads = [{"do": "read", "ssp": _ssp_json(_ssp("in", p))} for p in range(4)]
    reads.append({"do": "read", "ssp": _ssp_json(_ssp("in", 0)), "taskName": "Partition 0"})
    reads.append({"do": "read", "ssp": _ssp_json(_ssp("in", 9))})
    results, written = _samza(samza, config, *reads)
    assert results == [*(_samza_view(sp) for sp in kinds), _samza_view(kinds[2]), None]
    assert written == []

    # Samza's writeStartpoint of the same startpoints: the very bytes the engine wrote
    writes = [
        {"do": "write", "ssp": _ssp_json(_ssp("in", p)), "startpoint": sp.to_dict()} for p, sp in enumerate(kinds)
    ]
    writes.append(
        {"do": "write", "ssp": _ssp_json(_ssp("in", 0)), "taskName": "Partition 0", "startpoint": kinds[2].to_dict()}
    )
    _, samza_written = _samza(samza, None, *writes)
    ours = [(unb64(m["key"]), None if m["value"] is None else unb64(m["value"])) for m in _stream_messages(config)]
    assert samza_written == ours
    assert samza_written[2] == (
        b'[1,"samza-startpoint-v1","log.in.2"]',
        f'{{"@type":"StartpointSpecific","creationTimestamp":{kinds[2].creation_timestamp},"specificOffset":"42"}}'.encode(),
    )


def test_the_engine_reads_what_samza_writes_and_samza_reads_the_engine_fan_out(
    samza: SamzaWire, config: Config
) -> None:
    now = _now()
    kinds = _kinds(now)
    tasks = {"T0": [_ssp("in", 0), _ssp("side", 0)], "T1": [_ssp("in", 1), _ssp("side", 0)]}
    _, written = _samza(
        samza,
        config,
        {"do": "write", "ssp": _ssp_json(_ssp("side", 0)), "startpoint": kinds[0].to_dict()},
        {"do": "write", "ssp": _ssp_json(_ssp("in", 0)), "startpoint": kinds[2].to_dict()},
        {"do": "write", "ssp": _ssp_json(_ssp("in", 0)), "taskName": "T0", "startpoint": kinds[3].to_dict()},
        {"do": "write", "ssp": _ssp_json(_ssp("in", 1)), "startpoint": kinds[1].to_dict()},
    )
    _apply(config, written)
    with StartpointManager(config) as manager:
        assert manager.read_all() == {
            StartpointKey(_ssp("side", 0)): kinds[0],
            StartpointKey(_ssp("in", 0)): kinds[2],
            StartpointKey(_ssp("in", 0), "T0"): kinds[3],
            StartpointKey(_ssp("in", 1)): kinds[1],
        }
        fanned = manager.fan_out(tasks)
    expected = {
        "T0": {_ssp("side", 0): kinds[0], _ssp("in", 0): kinds[3]},  # T0's own is newer
        "T1": {_ssp("side", 0): kinds[0], _ssp("in", 1): kinds[1]},
    }
    assert fanned == expected
    # Samza's getFanOutForTask (what its OffsetManager applies) reads the engine's fan-outs;
    # its readStartpoint finds the written ones deleted
    results, _ = _samza(
        samza,
        config,
        {"do": "getFanOut", "taskName": "T0"},
        {"do": "getFanOut", "taskName": "T1"},
        *({"do": "read", "ssp": _ssp_json(ssp)} for ssp in (_ssp("side", 0), _ssp("in", 0), _ssp("in", 1))),
        {"do": "read", "ssp": _ssp_json(_ssp("in", 0)), "taskName": "T0"},
    )
    for task, result in zip(("T0", "T1"), results[:2], strict=True):
        assert result == {f"log.{s.stream}.{s.partition}": _samza_view(sp) for s, sp in expected[task].items()}
    assert results[2:] == [None, None, None, None]

    # a commit removes one partition from T0's fan-out, then the other: Samza sees each
    with StartpointManager(config) as manager:
        manager.remove_task_startpoints("T0", [_ssp("in", 0)])
    results, _ = _samza(samza, config, {"do": "getFanOut", "taskName": "T0"})
    assert results == [{"log.side.0": _samza_view(kinds[0])}]
    with StartpointManager(config) as manager:
        manager.remove_task_startpoints("T0", [_ssp("side", 0)])
    results, _ = _samza(samza, config, {"do": "getFanOut", "taskName": "T0"}, {"do": "getFanOut", "taskName": "T1"})
    assert results[0] == {}
    assert results[1] == {"log.side.0": _samza_view(kinds[0]), "log.in.1": _samza_view(kinds[1])}


def test_samza_fans_out_what_samza_dagster_sets_and_the_engine_applies_samza_fan_outs(
    samza: SamzaWire, config: Config
) -> None:
    scenario = Scenario(config, "log", "")
    produce_timed(scenario.config, "log", scenario.input, [(f"m{i}", 1_000_000 + 1000 * i) for i in range(6)])
    assert scenario.run() == [f"m{i}" for i in range(6)]

    # `samza-dagster startpoint set` → Samza's job coordinator fans it out, its OffsetManager reads it
    result = set_startpoints(scenario.config, scenario.input, StartpointSpecific("2"))
    assert result.offsets == {scenario.ssp: "2"}
    created = result.startpoint.creation_timestamp
    results, written = _samza(
        samza,
        scenario.config,
        {"do": "fanOut", "tasks": {"Partition 0": [_ssp_json(scenario.ssp)]}},
        {"do": "getFanOut", "taskName": "Partition 0"},
    )
    view = {"class": "StartpointSpecific", "creationTimestamp": created, "specificOffset": "2"}
    assert results == [{"Partition 0": {f"log.{scenario.input}.0": view}}, {f"log.{scenario.input}.0": view}]
    fan_out_key = b'[1,"samza-startpoint-v1-fan-out","Partition 0"]'
    assert [key for key, _ in written] == [fan_out_key, f'[1,"samza-startpoint-v1","log.{scenario.input}.0"]'.encode()]
    assert written[1][1] is None  # the written one deleted, as Samza's fanOut does

    # Samza's fan-out, on the job's coordinator stream: the engine's container applies it
    _apply(scenario.config, written)
    assert [str(k) for k in list_startpoints(scenario.config)] == [
        f"log.{scenario.input} partition 0 of task 'Partition 0'"
    ]
    assert scenario.run() == ["m2", "m3", "m4", "m5"]
    assert list_startpoints(scenario.config) == {}
    results, _ = _samza(samza, scenario.config, {"do": "getFanOut", "taskName": "Partition 0"})
    assert results == [{}]  # the engine's commit removed it where Samza looks

    # Samza's writeStartpoint (its tooling) → the engine's coordinator fans it out and the job rewinds
    sp = StartpointOldest(creation_timestamp=_now())
    _, written = _samza(
        samza, scenario.config, {"do": "write", "ssp": _ssp_json(scenario.ssp), "startpoint": sp.to_dict()}
    )
    _apply(scenario.config, written)
    assert scenario.run() == [f"m{i}" for i in range(6)]
    assert scenario.run() == []
    stream = coordinator_stream_name("sp-interop", "1")
    raw = [(r.key, r.value) for r in read_stream(scenario.config, stream, system="log")]
    fan_out = [json.loads(v) for k, v in raw if k == fan_out_key and v is not None][-1]
    assert fan_out["fanOuts"] == {f"log.{scenario.input}.0": sp.to_dict()}  # the engine's fan-out, Samza's form
