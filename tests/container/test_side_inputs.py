"""Side inputs followed for the life of the container (Samza's SideInputsManager): read to the
head before the task's first message, then followed on their own thread, offsets kept beside a
persistent store so a restart resumes. On the embedded log and on Kafka."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from samza_dagster.config import Config
from samza_dagster.container.side_inputs import OFFSETS_FILE
from samza_dagster.runtime import create_runner, run_job
from support.hl_harness import read_all
from support.log_reading import delete_rows_below
from support.waiting import wait_until
from tests.apps.harness import create_stream, produce


def _config(base: Config, system: str, prefix: str = "", **extra: str) -> Config:
    users, profiles, enriched = (f"{prefix}users", f"{prefix}profiles", f"{prefix}enriched")
    return base.with_overrides(
        {
            "job.name": f"{prefix}enrich",
            "job.factory.class": "thread",
            "job.default.system": system,
            "task.class": "tests.apps.tasks:ProfileLookupTask",
            "task.inputs": f"{system}.{users}",
            "test.output.system": system,
            "test.output.stream": enriched,
            f"systems.{system}.streams.{users}.samza.msg.serde": "string",
            f"systems.{system}.streams.{profiles}.samza.key.serde": "string",
            f"systems.{system}.streams.{profiles}.samza.msg.serde": "json",
            f"systems.{system}.streams.{enriched}.samza.key.serde": "string",
            f"systems.{system}.streams.{enriched}.samza.msg.serde": "json",
            "stores.profiles.factory": "rocksdb",
            "stores.profiles.side.inputs": f"{system}.{profiles}",
            "stores.profiles.key.serde": "string",
            "stores.profiles.msg.serde": "json",
            "task.commit.ms": "200",
            **extra,
        }
    )


def _log_base(tmp_path: Path) -> Config:
    return Config(
        {
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(tmp_path / "log"),
            "job.logged.store.base.dir": str(tmp_path / "state"),
        }
    )


def _streams(config: Config, system: str, prefix: str = "") -> None:
    for stream in ("users", "profiles", "enriched"):
        create_stream(config, system, f"{prefix}{stream}", 1)


def _profile(config: Config, system: str, user: str, name: str | None, prefix: str = "") -> None:
    value = {"deleted": True} if name is None else {"name": name}
    produce(config, system, f"{prefix}profiles", [(0, user.encode(), json.dumps(value).encode())])


def _user(config: Config, system: str, user: str, prefix: str = "") -> None:
    produce(config, system, f"{prefix}users", [(0, None, user.encode())])


def _seen(config: Config, system: str, prefix: str = "") -> list[dict]:
    return [json.loads(v) for _, v in read_all(config, f"{prefix}enriched", system=system, decode=False)]


def _follows_updates_while_running(config: Config, system: str, prefix: str = "") -> None:
    _profile(config, system, "u1", "ann", prefix)
    _user(config, system, "u1", prefix)
    runner = create_runner(config)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    try:
        first = wait_until(lambda: _seen(config, system, prefix), 60, "the first enriched message")
        # read to the head before the first message: never an empty table
        assert first[0] == {"user": "u1", "profile": {"name": "ann"}}

        _profile(config, system, "u1", "bea", prefix)

        def sees_update() -> bool:
            _user(config, system, "u1", prefix)
            return any(m["profile"] == {"name": "bea"} for m in _seen(config, system, prefix))

        wait_until(sees_update, 30, "the updated profile in the task's table", poll_s=0.2)
        profiles = [m["profile"]["name"] for m in _seen(config, system, prefix)]
        # the table moves forward only: ann until the update, bea after
        assert profiles == sorted(profiles) and profiles[0] == "ann" and profiles[-1] == "bea"
    finally:
        runner.stop()
        thread.join(60)


def test_the_task_sees_side_input_updates_while_it_runs(tmp_path):
    config = _config(_log_base(tmp_path), "log")
    _streams(config, "log")
    _follows_updates_while_running(config, "log")


@pytest.mark.kafka
@pytest.mark.timeout(180)
def test_the_task_sees_side_input_updates_while_it_runs_on_kafka(kafka_config, kafka_topic_prefix, tmp_path):
    prefix = kafka_topic_prefix + "-"
    config = _config(
        kafka_config.with_overrides({"job.logged.store.base.dir": str(tmp_path / "state")}), "kafka", prefix
    )
    _streams(config, "kafka", prefix)
    _follows_updates_while_running(config, "kafka", prefix)


def _bounded(config: Config) -> Config:
    return config.with_overrides({"systems.log.streams.users.samza.bounded": "true"})


def test_a_restart_resumes_after_the_stored_offsets(tmp_path):
    config = _bounded(_config(_log_base(tmp_path), "log"))
    _streams(config, "log")
    for i in range(5):
        _profile(config, "log", f"u{i}", f"n{i}")
    _user(config, "log", "u0")
    first = run_job(config)
    assert first.succeeded, first.summary_line()
    assert first.summaries[0].metrics["side_inputs"]["bootstrapped"] == {"profiles": 5}
    offsets_file = tmp_path / "state" / "enrich-1" / "profiles" / "Partition_0" / OFFSETS_FILE
    assert json.loads(offsets_file.read_text()) == {"log.profiles.0": "4"}

    _profile(config, "log", "u0", "renamed")
    _user(config, "log", "u0")
    second = run_job(config)
    assert second.succeeded, second.summary_line()
    # only the one new profile message was read; the store kept the other four
    assert second.summaries[0].metrics["side_inputs"]["bootstrapped"] == {"profiles": 1}
    assert [m["profile"] for m in _seen(config, "log")] == [{"name": "n0"}, {"name": "renamed"}]


def test_an_in_memory_side_input_store_is_read_again_from_the_oldest_offset(tmp_path):
    config = _bounded(_config(_log_base(tmp_path), "log", **{"stores.profiles.factory": "inmemory"}))
    _streams(config, "log")
    for i in range(3):
        _profile(config, "log", f"u{i}", f"n{i}")
    for _ in range(2):
        _user(config, "log", "u2")
        result = run_job(config)
        assert result.summaries[0].metrics["side_inputs"]["bootstrapped"] == {"profiles": 3}
    assert [m["profile"] for m in _seen(config, "log")] == [{"name": "n2"}] * 2


def test_a_configured_processor_shapes_and_deletes_entries(tmp_path):
    config = _bounded(
        _config(
            _log_base(tmp_path),
            "log",
            **{"stores.profiles.side.inputs.processor.factory": "tests.apps.tasks:UpperNameProcessor"},
        )
    )
    _streams(config, "log")
    _profile(config, "log", "u1", "ann")
    _profile(config, "log", "u2", "bob")
    _profile(config, "log", "u2", None)
    for user in ("u1", "u2"):
        _user(config, "log", user)
    assert run_job(config).succeeded
    assert [m["profile"] for m in _seen(config, "log")] == [{"name": "ANN"}, None]


def test_a_side_input_store_with_a_changelog_is_a_config_error(tmp_path):
    config = _bounded(_config(_log_base(tmp_path), "log", **{"stores.profiles.changelog": "log.profiles-changelog"}))
    _streams(config, "log")
    _user(config, "log", "u1")
    result = run_job(config)
    assert not result.succeeded
    assert "stores.profiles.changelog" in result.error and "side inputs" in result.error


def test_a_processor_that_fails_fails_the_job_naming_store_partition_and_offset(tmp_path):
    config = _bounded(
        _config(
            _log_base(tmp_path),
            "log",
            **{"stores.profiles.side.inputs.processor.factory": "tests.apps.tasks:UpperNameProcessor"},
        )
    )
    _streams(config, "log")
    produce(config, "log", "profiles", [(0, b"u1", json.dumps({"nickname": "x"}).encode())])
    _user(config, "log", "u1")
    result = run_job(config)
    assert not result.succeeded
    assert "side-input store 'profiles' of Partition 0" in result.error
    assert "SystemStreamPartition [log, profiles, 0] offset 0" in result.error and "'name'" in result.error


def test_stored_offsets_that_retention_removed_continue_from_the_oldest_with_a_warning(tmp_path, caplog):
    """The store left off at offset 1; retention then removed offsets 0-2. A restart continues
    from the oldest offset the stream still holds (3), naming the skipped range — never silently
    and never from a position the log no longer has."""
    from samza_dagster.system.factories import system_factory

    config = _bounded(_config(_log_base(tmp_path), "log"))
    _streams(config, "log")
    _profile(config, "log", "u0", "a")
    _profile(config, "log", "u1", "b")
    _user(config, "log", "u0")
    assert run_job(config).succeeded
    for name in ("c", "d", "e"):
        _profile(config, "log", "u1", name)
    admin = system_factory(config, "log").get_admin("log", config)
    path = admin.root
    admin.stop()
    from samza_dagster.system.log.storage import stream_file

    delete_rows_below(stream_file(path, "profiles"), 3)  # what a retention pass leaves: offsets 3, 4
    _user(config, "log", "u1")
    with caplog.at_level("WARNING"):
        result = run_job(config)
    assert result.succeeded, result.summary_line()
    assert result.summaries[0].metrics["side_inputs"]["bootstrapped"] == {"profiles": 2}
    assert any(
        "resumes at offset 2, outside the partition's offsets [3, 5]" in r.getMessage()
        and "skipping offsets [2, 3) and starting at 3" in r.getMessage()
        for r in caplog.records
    ), caplog.text
    assert _seen(config, "log")[-1]["profile"] == {"name": "e"}


def test_tasks_sharing_a_side_input_partition_resume_from_the_earliest_store(tmp_path):
    """Grouped by stream partition, two tasks read partition 0 of the side input, each into its
    own store. When one store is lost (its directory deleted), the restart reads the partition
    from where that store needs it — the oldest offset — not from where the other left off."""
    import shutil

    config = _bounded(
        _config(
            _log_base(tmp_path),
            "log",
            **{
                "task.inputs": "log.users,log.clicks",
                "job.systemstreampartition.grouper.factory": "group-by-system-stream-partition",
                "systems.log.streams.clicks.samza.msg.serde": "string",
                "systems.log.streams.clicks.samza.bounded": "true",
            },
        )
    )
    _streams(config, "log")
    create_stream(config, "log", "clicks", 1)
    _profile(config, "log", "u1", "ann")
    _user(config, "log", "u1")
    produce(config, "log", "clicks", [(0, None, b"u1")])
    assert run_job(config).succeeded

    lost = tmp_path / "state" / "enrich-1" / "profiles" / "SystemStreamPartition_log_clicks_0_"
    assert (lost / OFFSETS_FILE).exists(), sorted(p.name for p in lost.parent.iterdir())
    shutil.rmtree(lost)
    produce(config, "log", "clicks", [(0, None, b"u1")])
    result = run_job(config)
    assert result.succeeded, result.summary_line()
    assert [m["profile"] for m in _seen(config, "log")][-1] == {"name": "ann"}


def _store_offsets_file(tmp_path: Path) -> Path:
    return tmp_path / "state" / "enrich-1" / "profiles" / "Partition_0" / OFFSETS_FILE


def _first_run_with_profiles(tmp_path: Path, *names: str) -> Config:
    config = _bounded(_config(_log_base(tmp_path), "log"))
    _streams(config, "log")
    for i, name in enumerate(names):
        _profile(config, "log", f"u{i}", name)
    _user(config, "log", "u0")
    assert run_job(config).succeeded
    return config


def _offset_reset_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "samza_dagster.container.offset_reset"]


def test_stored_offsets_past_the_end_of_the_stream_are_read_again_from_the_oldest_with_a_warning(tmp_path, caplog):
    """A stored offset beyond what the partition holds (the stream was deleted and created again):
    as Kafka's offset-out-of-range, never a silent stale table that ignores every later update."""
    config = _first_run_with_profiles(tmp_path, "a", "b")
    _store_offsets_file(tmp_path).write_text(json.dumps({"log.profiles.0": "40"}))
    _profile(config, "log", "u1", "c")  # offset 2: before the stored 40, and the table must see it
    _user(config, "log", "u1")
    with caplog.at_level("WARNING"):
        result = run_job(config)
    assert result.succeeded, result.summary_line()
    assert result.summaries[0].metrics["side_inputs"]["bootstrapped"] == {"profiles": 3}
    warnings = _offset_reset_warnings(caplog)
    assert len(warnings) == 1, warnings
    assert (
        "stream profiles, partition 0: side-input store 'profiles' of Partition 0 resumes at offset 41, "
        "outside the partition's offsets [0, 3]" in warnings[0]
    )
    assert _seen(config, "log")[-1]["profile"] == {"name": "c"}


def test_stored_offsets_before_a_compacted_prefix_say_no_live_record_was_skipped(tmp_path, caplog):
    config = _first_run_with_profiles(tmp_path, "a")  # the store left off at offset 0
    from samza_dagster.system.factories import system_factory

    for name in ("b", "c", "d"):
        _profile(config, "log", "u0", name)
    admin = system_factory(config, "log").get_admin("log", config)
    try:
        import sqlite3

        from samza_dagster.system.log.storage import stream_file

        with sqlite3.connect(stream_file(admin.root, "profiles")) as conn:
            # what compaction leaves of a compacted stream: the superseded u0 values 0-2 are gone
            conn.execute("INSERT OR REPLACE INTO meta (name, value) VALUES ('property.cleanup.policy', 'compact')")
        delete_rows_below(stream_file(admin.root, "profiles"), 3)
    finally:
        admin.stop()
    _store_offsets_file(tmp_path).write_text(json.dumps({"log.profiles.0": "0"}))
    _user(config, "log", "u0")
    with caplog.at_level("WARNING"):
        assert run_job(config).succeeded
    (warning,) = _offset_reset_warnings(caplog)
    assert (
        "compaction removed only superseded records and expired tombstones there; no live record is skipped" in warning
    )
    assert _seen(config, "log")[-1]["profile"] == {"name": "d"}


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"log.profiles.0": "abc"}', "the offset of log.profiles.0 is 'abc', not an offset of system 'log'"),
        ('"log.profiles.0"', "expected a JSON object of partition -> offset, found a JSON str"),
        ('["log.profiles.0", "1"]', "expected a JSON object of partition -> offset, found a JSON list"),
        ('{"log.profiles.0": null}', "the offset of log.profiles.0 is null, not an offset string"),
        ('{"log.profiles.0": 1}', "the offset of log.profiles.0 is 1, not an offset string"),
        ('{"log.profiles.0": "1"', "not JSON"),
    ],
)
def test_a_malformed_offsets_file_is_one_warning_naming_it_and_the_store_is_read_again(
    tmp_path, caplog, content, problem
):
    config = _first_run_with_profiles(tmp_path, "a", "b")
    offsets_file = _store_offsets_file(tmp_path)
    offsets_file.write_text(content)
    _user(config, "log", "u1")
    with caplog.at_level("WARNING", logger="samza_dagster.container.side_inputs"):
        result = run_job(config)
    assert result.succeeded, result.summary_line()
    warnings = [r.getMessage() for r in caplog.records if r.name == "samza_dagster.container.side_inputs"]
    assert len(warnings) == 1, warnings
    assert f"side-input store 'profiles' of Partition 0: ignoring {offsets_file}: {problem}" in warnings[0], warnings
    assert "reading its side inputs again from the oldest offsets" in warnings[0]
    # read again from the oldest offset: both profiles, and the file is whole again
    assert result.summaries[0].metrics["side_inputs"]["bootstrapped"] == {"profiles": 2}
    assert _seen(config, "log")[-1]["profile"] == {"name": "b"}
    assert json.loads(offsets_file.read_text()) == {"log.profiles.0": "1"}
