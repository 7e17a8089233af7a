"""Configuration that must not change for a stateful job (Samza design: set only once), checked
at every launch against what the coordinator stream recorded: input partition counts, the
grouper, a store's changelog. Refused with the key and both values; --force-reset accepts it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from samza_dagster.config import Config
from samza_dagster.coordinator.model.partition_counts import FORCE_RESET_KEY, InputPartitionCountChangedError
from samza_dagster.coordinator.stream.reader_writer import CoordinatorStreamReader
from samza_dagster.coordinator.stream.submission import SetOnceConfigChangeError
from samza_dagster.runtime import run_job
from samza_dagster.system.log.storage import stream_file
from tests import REPO
from tests.apps.harness import create_stream, produce, read_checkpoints

BIN = Path(sys.executable).parent / "samza-dagster"


def _config(tmp_path: Path, **extra: str) -> Config:
    return Config(
        {
            "job.name": "wc",
            "job.factory.class": "thread",
            "job.default.system": "log",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(tmp_path / "log"),
            "task.class": "tests.apps.tasks:WordCountTask",
            "task.inputs": "log.words",
            "systems.log.streams.words.samza.bounded": "true",
            "systems.log.samza.msg.serde": "string",
            "stores.counts.factory": "inmemory",
            "stores.counts.changelog": "log.wc-counts-changelog",
            "stores.counts.key.serde": "string",
            "stores.counts.msg.serde": "integer",
            **extra,
        }
    )


def _words(config: Config, partitions: int, words: list[str]) -> None:
    produce(config, "log", "words", [(i % partitions, None, w.encode()) for i, w in enumerate(words)])


def _recreate_words(config: Config, partitions: int) -> None:
    """What a repartitioned topic is to the job: the same stream, another partition count."""
    os.unlink(stream_file(config.get_str("systems.log.log.path"), "words"))
    create_stream(config, "log", "words", partitions)


def _recorded_partitions(config: Config) -> dict[str, int]:
    with CoordinatorStreamReader(config) as reader:
        state, _ = reader.read_state()
    return state.input_partitions


def test_a_stateful_job_records_its_input_partition_counts(tmp_path):
    config = _config(tmp_path)
    create_stream(config, "log", "words", 2)
    _words(config, 2, ["a", "b", "a"])
    assert run_job(config).succeeded
    assert _recorded_partitions(config) == {"log.words": 2}


def test_a_changed_input_partition_count_is_refused_naming_stream_and_both_counts(tmp_path):
    config = _config(tmp_path)
    create_stream(config, "log", "words", 2)
    _words(config, 2, ["a", "b"])
    assert run_job(config).succeeded
    checkpoints = read_checkpoints(config)

    _recreate_words(config, 3)
    _words(config, 3, ["c", "d", "e"])
    with pytest.raises(InputPartitionCountChangedError) as err:
        run_job(config)
    message = str(err.value)
    assert "log.words" in message and "has 3 partitions" in message and "recorded 2" in message
    assert "--force-reset" in message
    assert err.value.key == "streams.log.words.partitions"
    # nothing ran: no checkpoint moved, the recorded count stands
    assert read_checkpoints(config) == checkpoints
    assert _recorded_partitions(config) == {"log.words": 2}


def test_force_reset_accepts_the_count_and_then_the_changelog_must_fit(tmp_path):
    """The reset forgets the task → changelog assignment and records the new count; the old
    changelog stream (2 partitions for now 3 tasks) is refused next, naming both counts, until
    the user deletes it — the state really starts over."""
    config = _config(tmp_path)
    create_stream(config, "log", "words", 2)
    _words(config, 2, ["a", "b"])
    assert run_job(config).succeeded
    _recreate_words(config, 3)
    _words(config, 3, ["c", "d", "e"])

    reset = config.with_overrides({FORCE_RESET_KEY: "true"})
    result = run_job(reset)
    assert not result.succeeded
    assert "has 2 partitions, but the job has 3 tasks" in result.error
    assert _recorded_partitions(config) == {"log.words": 3}

    os.unlink(stream_file(config.get_str("systems.log.log.path"), "wc-counts-changelog"))
    assert run_job(config).succeeded
    # the reset key is for one launch: it never reaches the coordinator stream
    with CoordinatorStreamReader(config) as reader:
        state, _ = reader.read_state()
    assert FORCE_RESET_KEY not in state.config


def test_a_stateless_job_may_change_its_partition_count(tmp_path):
    stateless = {k: v for k, v in _config(tmp_path).items() if not k.startswith("stores.")}
    config = Config({**stateless, "task.class": "tests.apps.tasks:NoOpTask"})
    create_stream(config, "log", "words", 2)
    assert run_job(config).succeeded
    _recreate_words(config, 3)
    assert run_job(config).succeeded
    assert _recorded_partitions(config) == {}


def test_a_changed_grouper_is_refused_at_launch_naming_both_values(tmp_path):
    config = _config(tmp_path)
    create_stream(config, "log", "words", 2)
    assert run_job(config).succeeded
    changed = config.with_overrides({"job.systemstreampartition.grouper.factory": "group-by-system-stream-partition"})
    with pytest.raises(SetOnceConfigChangeError) as err:
        run_job(changed)
    assert err.value.key == "job.systemstreampartition.grouper.factory"
    assert err.value.old == "group-by-partition" and err.value.new == "group-by-system-stream-partition"


def test_cli_run_refuses_then_force_reset_accepts(tmp_path):
    log_path = tmp_path / "log"
    props = tmp_path / "job.properties"
    props.write_text("\n".join(f"{k}={v}" for k, v in _config(tmp_path).items()) + "\n")
    config = _config(tmp_path)
    create_stream(config, "log", "words", 2)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("SAMZA_LOG_PATH", None)

    def cli(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(BIN), *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)

    assert cli("run", "--config-path", str(props)).returncode == 0
    _recreate_words(config, 3)
    refused = cli("run", "--config-path", str(props))
    assert refused.returncode == 2, refused.stderr
    assert "log.words" in refused.stderr and "Traceback" not in refused.stderr
    os.unlink(stream_file(str(log_path), "wc-counts-changelog"))
    accepted = cli("run", "--config-path", str(props), "--force-reset")
    assert accepted.returncode == 0, accepted.stderr
    assert _recorded_partitions(config) == {"log.words": 3}
