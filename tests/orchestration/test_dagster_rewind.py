"""The rewind backfill on a real log and a real Dagster instance: materializing a day's partition
writes timestamp startpoints for every partition of the job's input, the job's next run reads
that input again from the day's first offset (per partition), and the startpoints are gone after
it. Over several days the earliest pending rewind is kept, whatever order the runs ran in. A
partition with nothing that day starts at its upcoming offset; a day no message is at or after
is "nothing to reprocess" (the run succeeds saying so, naming the time) and moves no offset."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest

from jobs.stream_helpers import create_streams, produce, read_stream
from samza_dagster.config import Config
from samza_dagster.orchestration import SamzaSystemsResource, application_definitions, rewind_backfill
from samza_dagster.runtime import run_job
from samza_dagster.runtime.startpoints import list_startpoints
from samza_dagster.startpoint.startpoint import StartpointTimestamp


def _ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


#: two messages a day from 2024-03-01 to 03-04, alternating between the two partitions
EVENTS = [
    (f"{day}T{hour:02d}", _ms(f"2024-03-{day[-2:]}T{hour:02d}:00:00"))
    for day in ("2024-03-01", "2024-03-02", "2024-03-03", "2024-03-04")
    for hour in (6, 18)
]

BASE = {
    "job.name": "rewinder",
    "job.factory.class": "thread",
    "job.default.system": "log",
    "systems.log.samza.factory": "log",
    "systems.log.samza.msg.serde": "string",
    "task.class": "tests.apps.tasks:CopyTask",
    "task.inputs": "log.events",
    "streams.events.samza.system": "log",
    "streams.events.partitions": "2",
    "streams.events.samza.bounded": "true",
    "test.output.stream": "copied",
}


@pytest.fixture
def setup(tmp_path: Path):
    systems = SamzaSystemsResource(log_path=str(tmp_path / "log"))
    config = systems.apply(Config(BASE))
    create_streams(config, {"events": 2, "copied": 1})
    produce(config, "events", [(None, name.encode(), ts) for name, ts in EVENTS])
    assert run_job(config).succeeded  # everything read and checkpointed once
    assert len(read_stream(config, "copied")) == len(EVENTS)
    backfill = rewind_backfill("rewinder", Config(BASE), stream="events", start_date="2024-03-01")
    return config, backfill, {"samza_systems": systems}


def _copied_since(config: Config, seen: int) -> list[str]:
    return [r.value.decode() for r in read_stream(config, "copied")][seen:]


def test_a_days_partition_rewinds_the_input_to_that_day(setup):
    config, backfill, resources = setup
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize([backfill.asset], partition_key="2024-03-03", resources=resources, instance=instance)
    assert result.success
    (mat,) = result.get_asset_materialization_events()
    offsets = mat.materialization.metadata["starting_offsets"].value
    day = _ms("2024-03-03T00:00:00")
    events = read_stream(config, "events")
    expected = {str(p): str(min(r.offset for r in events if r.partition == p and r.timestamp >= day)) for p in (0, 1)}
    assert offsets == expected
    assert {k.ssp.partition: sp for k, sp in list_startpoints(config).items()} == {
        p: StartpointTimestamp(day, creation_timestamp=sp.creation_timestamp)
        for p, sp in ((k.ssp.partition, sp) for k, sp in list_startpoints(config).items())
    }

    assert run_job(config).succeeded
    again = sorted(_copied_since(config, len(EVENTS)))
    assert again == sorted(name for name, ts in EVENTS if ts >= day)
    assert list_startpoints(config) == {}
    assert run_job(config).succeeded  # the next start resumes from the checkpoint
    assert _copied_since(config, len(EVENTS) + len(again)) == []


def test_a_backfill_over_days_keeps_the_earliest_rewind(setup):
    config, backfill, resources = setup
    instance = dg.DagsterInstance.ephemeral()
    for day in ("2024-03-03", "2024-03-02", "2024-03-04"):  # runs of a backfill, in any order
        assert dg.materialize([backfill.asset], partition_key=day, resources=resources, instance=instance).success
    assert {sp.timestamp for sp in list_startpoints(config).values()} == {_ms("2024-03-02T00:00:00")}
    assert run_job(config).succeeded
    assert sorted(_copied_since(config, len(EVENTS))) == sorted(
        n for n, ts in EVENTS if ts >= _ms("2024-03-02T00:00:00")
    )


def test_a_quiet_partition_starts_at_its_upcoming_offset(setup):
    config, backfill, resources = setup
    produce(config, "events", [(None, b"2024-03-05T12", _ms("2024-03-05T12:00:00"))])  # partition 0 only
    upcoming_1 = str(max(r.offset for r in read_stream(config, "events") if r.partition == 1) + 1)
    result = dg.materialize(
        [backfill.asset], partition_key="2024-03-05", resources=resources, instance=dg.DagsterInstance.ephemeral()
    )
    (mat,) = result.get_asset_materialization_events()
    assert mat.materialization.metadata["starting_offsets"].value == {"0": "4", "1": upcoming_1}
    assert run_job(config).succeeded
    assert _copied_since(config, len(EVENTS)) == ["2024-03-05T12"]


def test_a_day_after_every_message_is_nothing_to_reprocess_and_moves_nothing(setup):
    config, backfill, resources = setup
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize([backfill.asset], partition_key="2024-03-05", resources=resources, instance=instance)
    assert result.success  # a quiet day is not a failure
    (mat,) = result.get_asset_materialization_events()
    metadata = mat.materialization.metadata
    assert metadata["nothing_to_reprocess"].value is True
    assert metadata["rewind_to"].value == _ms("2024-03-05T00:00:00") / 1000  # shown as a date
    assert "is at or after 1709596800000 (2024-03-05T00:00:00.000Z)" in metadata["reason"].value
    logs = [e.user_message for e in instance.all_logs(result.run_id)]
    assert any(m.startswith("nothing to reprocess for 2024-03-05") for m in logs), logs
    assert list_startpoints(config) == {}


def test_application_definitions_take_a_rewind_backfill(tmp_path):
    backfill = rewind_backfill("rewinder", Config(BASE), stream="log.events", start_date="2024-03-01")
    defs = application_definitions("rewinder", Config(BASE), declared_outputs=["log.copied"], backfills=[backfill])
    assert backfill.key in defs.assets[-1].keys  # drawn as reading events, not feeding it (no cycle)
    (rewind,) = [a for a in defs.assets if getattr(a, "keys", None) and backfill.key in a.keys]
    assert rewind.asset_deps[backfill.key] == {dg.AssetKey(["rewinder", "events"])}
    with pytest.raises(ValueError, match="not an input of job rewinder"):
        rewind_backfill("rewinder", Config(BASE), stream="log.copied", start_date="2024-03-01")
