"""Transactions on the embedded log (samza_dagster/system/log/transactions.py), on real SQLite
files: what a ``read_committed`` and a ``read_uncommitted`` reader see of open, committed and
aborted transactions; a new instance of a transactional producer fencing the old one and settling
what it left (rolled forward when its commit point was written, removed when not); offsets never
given out twice; the isolation key's errors."""

from __future__ import annotations

import pytest

from samza_dagster.config import Config, ConfigError
from samza_dagster.system import OutgoingMessageEnvelope, StreamSpec, SystemStream
from samza_dagster.system.log import LogSystemFactory, transactions
from samza_dagster.system.log.transactions import ProducerFencedError
from support.log_reading import read_partition

SYSTEM, OUT, STATE = "log", "out", "state"


@pytest.fixture
def config(tmp_path) -> Config:
    config = Config({f"systems.{SYSTEM}.log.path": str(tmp_path / "log"), f"systems.{SYSTEM}.log.linger.ms": "0"})
    admin = LogSystemFactory().get_admin(SYSTEM, config)
    admin.create_stream(StreamSpec(OUT, OUT, SYSTEM, 2))
    admin.create_stream(StreamSpec(STATE, STATE, SYSTEM, 1, {"cleanup.policy": "compact"}))
    admin.stop()
    return config


def _producer(config: Config, transactional_id: str | None = "c0"):
    producer = LogSystemFactory().get_producer(SYSTEM, config)
    producer.register("t")
    producer.start()
    if transactional_id is not None:
        producer.init_transactions(transactional_id, STATE)
    return producer


def _send(producer, values: list[str], partition: int = 0, stream: str = OUT) -> None:
    for value in values:
        producer.send("t", OutgoingMessageEnvelope(SystemStream(SYSTEM, stream), value.encode(), partition=partition))
    producer.flush("t")


def _values(config: Config, committed: bool, partition: int = 0, stream: str = OUT) -> list[str]:
    if committed:
        config = config.with_overrides({f"systems.{SYSTEM}.consumer.isolation.level": "read_committed"})
    return [v for _o, _k, v in read_partition(config, SYSTEM, stream, partition, "0")]


def _upcoming(config: Config, partition: int = 0) -> int:
    admin = LogSystemFactory().get_admin(SYSTEM, config)
    try:
        return int(admin.get_system_stream_metadata([OUT])[OUT].partitions[partition].upcoming_offset)
    finally:
        admin.stop()


def test_read_committed_sees_a_transaction_only_once_committed(config):
    plain, txn = _producer(config, None), _producer(config)
    _send(plain, ["p0"])
    _send(txn, ["t0", "t1"])
    _send(plain, ["p1"])  # after the open transaction: a read_committed reader waits before it
    assert _values(config, committed=False) == ["p0", "t0", "t1", "p1"]
    assert _values(config, committed=True) == ["p0"]
    txn.commit_transaction()
    assert _values(config, committed=True) == ["p0", "t0", "t1", "p1"]
    txn.stop()
    plain.stop()


def test_an_aborted_transaction_is_removed_and_its_offsets_never_reused(config):
    txn = _producer(config)
    _send(txn, ["a0", "a1"], partition=1)
    assert _upcoming(config, 1) == 2
    txn.abort_transaction()
    assert _values(config, committed=False, partition=1) == []
    assert _upcoming(config, 1) == 2  # the emptied partition goes on where it was
    _send(txn, ["b0"], partition=1)
    txn.commit_transaction()
    assert read_partition(config, SYSTEM, OUT, 1, "0") == [(2, None, "b0")]
    txn.stop()


def test_checkpoint_messages_are_written_by_the_commit_point(config):
    txn = _producer(config)
    _send(txn, ["o0"])
    txn.send("t", OutgoingMessageEnvelope(SystemStream(SYSTEM, STATE), b"cp1", b"task"))
    txn.flush("t")  # a flush writes outputs as open messages, but holds the checkpoint back
    assert _values(config, committed=False, stream=STATE) == []
    txn.commit_transaction()
    assert _values(config, committed=True, stream=STATE) == ["cp1"]
    assert _values(config, committed=True) == ["o0"]
    txn.stop()


def test_a_new_instance_removes_what_the_old_left_open_and_fences_it(config):
    old = _producer(config)
    _send(old, ["c0"])
    old.commit_transaction()
    _send(old, ["open0", "open1"])  # the old instance "crashes" here, or lives on as a zombie
    new = _producer(config)
    assert _values(config, committed=False) == ["c0"]
    # the zombie can neither write (to a stream it knew, or a new one) nor commit
    with pytest.raises(ProducerFencedError, match="'c0'"):
        _send(old, ["zombie"])
    with pytest.raises(ProducerFencedError):
        _send(old, ["zombie"], stream=STATE)  # held for the commit point: fenced there
        old.commit_transaction()
    _send(new, ["n0"])
    new.commit_transaction()
    assert _values(config, committed=True) == ["c0", "n0"]
    assert _upcoming(config) == 4  # the two aborted offsets stay used
    new.stop()


def test_a_commit_point_written_without_its_markers_is_rolled_forward(config, monkeypatch):
    old = _producer(config)
    _send(old, ["x0"], partition=0)
    _send(old, ["y0"], partition=1)

    def crash(*_args):
        raise KeyboardInterrupt("killed between the commit point and the markers")

    monkeypatch.setattr(transactions, "write_markers", crash)
    with pytest.raises(KeyboardInterrupt):
        old.commit_transaction()
    monkeypatch.undo()
    assert _values(config, committed=True, partition=0) == []  # committed, but not readable yet
    new = _producer(config)
    assert _values(config, committed=True, partition=0) == ["x0"]
    assert _values(config, committed=True, partition=1) == ["y0"]
    new.stop()


def test_stopping_with_an_open_transaction_aborts_it(config):
    txn = _producer(config)
    _send(txn, ["never"])
    txn.stop()
    assert _values(config, committed=False) == []


def test_compaction_keeps_a_committed_value_an_open_transaction_would_supersede(config):
    admin = LogSystemFactory().get_admin(SYSTEM, config)
    admin.create_stream(
        StreamSpec("table", "table", SYSTEM, 1, {"cleanup.policy": "compact", "min.compaction.lag.ms": "0"})
    )
    txn = _producer(config)
    txn.send("t", OutgoingMessageEnvelope(SystemStream(SYSTEM, "table"), b"v1", b"k", partition=0))
    txn.commit_transaction()
    txn.send("t", OutgoingMessageEnvelope(SystemStream(SYSTEM, "table"), b"v2", b"k", partition=0))
    txn.flush("t")
    admin.clean_stream("table")
    txn.abort_transaction()
    assert _values(config, committed=True, stream="table") == ["v1"]
    admin.stop()
    txn.stop()


def test_isolation_level_is_checked_and_defaults_follow_the_guarantee():
    from samza_dagster.system.log.config import LogSystemConfig

    with pytest.raises(ConfigError, match="systems.log.consumer.isolation.level"):
        LogSystemConfig.from_config("log", Config({"systems.log.consumer.isolation.level": "dirty"}))
    assert not LogSystemConfig.from_config("log", Config({})).read_committed
    assert LogSystemConfig.from_config("log", Config({"job.processing.guarantee": "exactly-once"})).read_committed
    assert not LogSystemConfig.from_config(
        "log",
        Config(
            {
                "job.processing.guarantee": "exactly-once",
                "systems.log.consumer.isolation.level": "read_uncommitted",
            }
        ),
    ).read_committed


def test_a_long_lived_read_committed_consumer_follows_commits_and_aborts(config):
    from samza_dagster.system import SystemStreamPartition

    reader = LogSystemFactory().get_consumer(
        SYSTEM, config.with_overrides({f"systems.{SYSTEM}.consumer.isolation.level": "read_committed"})
    )
    ssp = SystemStreamPartition(SYSTEM, OUT, 0)
    reader.register(ssp, "0")
    reader.start()

    def poll() -> list[str]:
        return [e.message.decode() for e in reader.poll([ssp], 0).get(ssp, [])]

    plain, txn = _producer(config, None), _producer(config)
    _send(plain, ["p0"])
    assert poll() == ["p0"]
    _send(txn, ["t0"])
    _send(plain, ["p1"])
    assert poll() == []  # p1 waits behind the open t0
    txn.commit_transaction()
    assert poll() == ["t0", "p1"]
    _send(txn, ["aborted"])
    _send(plain, ["p2"])
    assert poll() == []
    txn.abort_transaction()
    assert poll() == ["p2"]
    reader.stop()
    txn.stop()
    plain.stop()
