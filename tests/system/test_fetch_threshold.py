"""The container-wide buffer bound (Samza's ``systems.<s>.samza.fetch.threshold`` and
``fetch.threshold.bytes``): divided among a system's partitions, so what SystemConsumers holds
does not grow with the partition count; on a real log stream and, for the poller-thread path,
the in-memory system; the keys' validation."""

from __future__ import annotations

import random

import pytest

from samza_dagster.config import Config, ConfigError
from samza_dagster.config.system_config import SystemConfig
from samza_dagster.system import (
    IncomingMessageEnvelope,
    OutgoingMessageEnvelope,
    StreamSpec,
    SystemStream,
    SystemStreamPartition,
)
from samza_dagster.system.chooser import RoundRobinChooser
from samza_dagster.system.consumers import (
    ENVELOPE_OVERHEAD_BYTES,
    MIN_BUFFER_PER_SSP,
    FetchThreshold,
    SystemConsumers,
    _SspState,
)
from samza_dagster.system.inmemory import InMemorySystemFactory
from samza_dagster.system.inmemory import reset as reset_inmemory
from samza_dagster.system.log import LogSystemFactory
from support.waiting import wait_until

PARTITIONS = 64
PER_PARTITION = 120


def _fill(factory, config: Config, system: str, value: bytes) -> list[SystemStreamPartition]:
    factory.get_admin(system, config).create_stream(StreamSpec("s", "s", system, PARTITIONS))
    producer = factory.get_producer(system, config)
    producer.register("t")
    producer.start()
    for i in range(PARTITIONS * PER_PARTITION):
        producer.send("t", OutgoingMessageEnvelope(SystemStream(system, "s"), value, partition=i % PARTITIONS))
    producer.flush("t")
    producer.stop()
    return [SystemStreamPartition(system, "s", p) for p in range(PARTITIONS)]


def _consumers(factory, config: Config, system: str, ssps, threshold: FetchThreshold | None) -> SystemConsumers:
    consumers = SystemConsumers(
        RoundRobinChooser(),
        {system: factory.get_consumer(system, config)},
        fetch_thresholds=None if threshold is None else {system: threshold},
    )
    for ssp in ssps:
        consumers.register(ssp, "0")
    consumers.start()
    return consumers


def _drain(consumers: SystemConsumers, total: int) -> int:
    """Choose every envelope; the most envelopes buffered at any point (the chooser's one per
    partition not counted)."""
    most = 0
    for _ in range(total):
        assert consumers.choose(5.0) is not None
        most = max(most, sum(consumers.buffer_sizes().values()))
    return most


@pytest.fixture
def log_system(tmp_path):
    config = Config({"systems.log.samza.factory": "log", "systems.log.log.path": str(tmp_path)})
    return LogSystemFactory(), config


def test_the_messages_budget_is_divided_among_the_partitions(log_system):
    factory, config = log_system
    ssps = _fill(factory, config, "log", b"v")
    bounded = _consumers(factory, config, "log", ssps, FetchThreshold(messages=PARTITIONS * 40))
    try:
        assert _drain(bounded, PARTITIONS * PER_PARTITION) <= PARTITIONS * 40
    finally:
        bounded.stop()
    unbounded = _consumers(factory, config, "log", ssps, None)  # the log's 500 per partition
    try:
        assert _drain(unbounded, PARTITIONS * PER_PARTITION) > PARTITIONS * 40  # so the bound did something
    finally:
        unbounded.stop()


def test_the_bytes_budget_follows_the_message_size_with_a_floor(log_system):
    factory, config = log_system
    ssps = _fill(factory, config, "log", b"x" * 1024)
    # room for ~8 envelopes of 1 KiB (+ overhead) per partition: the floor of 16 wins
    budget = PARTITIONS * 8 * 1224
    consumers = _consumers(factory, config, "log", ssps, FetchThreshold(bytes=budget))
    try:
        most = _drain(consumers, PARTITIONS * PER_PARTITION)
        assert most <= PARTITIONS * MIN_BUFFER_PER_SSP
    finally:
        consumers.stop()


@pytest.mark.parametrize("count", [1, 31, 250, 1000, 5000])
def test_the_mean_size_a_partitions_capacity_follows_is_that_of_the_batch(count):
    """The capacity comes from the batch's mean envelope size, estimated from a sample spread
    over it: within a tenth of the exact mean's capacity for sizes that vary from envelope to
    envelope, and exact when every envelope is the same size."""
    rng = random.Random(count)
    ssp = SystemStreamPartition("log", "s", 0)
    sizes = [rng.randint(10, 4000) for _ in range(count)]
    varied = [IncomingMessageEnvelope(ssp, str(i), None, b"", size) for i, size in enumerate(sizes)]
    share = 1000 * (ENVELOPE_OVERHEAD_BYTES + 2000)  # about 1,000 envelopes of the mean size: no bound reached

    def capacity(envelopes, mean: int) -> tuple[int, int]:
        state = _SspState(ssp, lambda: None, 10_000)
        state.bytes_share = share
        state.fit_bytes(envelopes)
        return state.capacity, max(MIN_BUFFER_PER_SSP, min(10_000, share // (ENVELOPE_OVERHEAD_BYTES + mean)))

    got, exact = capacity(varied, sum(sizes) // count)
    assert abs(got - exact) <= exact / 10, (got, exact)
    same = [IncomingMessageEnvelope(ssp, str(i), None, b"", 1000) for i in range(count)]
    assert capacity(same, 1000)[0] == capacity(same, 1000)[1]


def test_a_poller_thread_system_is_bounded_too():
    reset_inmemory()
    config = Config({"systems.mem.samza.factory": "inmemory"})
    factory = InMemorySystemFactory()
    ssps = _fill(factory, config, "mem", b"v")
    consumers = _consumers(factory, config, "mem", ssps, FetchThreshold(messages=PARTITIONS * 20))
    try:
        wait_until(lambda: sum(consumers.buffer_sizes().values()) > 0, timeout_s=10, what="the poller's first batch")
        most = _drain(consumers, PARTITIONS * PER_PARTITION)
        # the in-memory consumer decides its batch size, so a poll may overshoot by one batch each
        assert most <= PARTITIONS * 20 * 2 + PARTITIONS * 100
        assert max(consumers.buffer_sizes().values()) == 0
    finally:
        consumers.stop()


def test_fetch_threshold_keys():
    systems = SystemConfig(Config({}))
    assert systems.fetch_threshold("log") == (50_000, 64 * 1024 * 1024)
    off = SystemConfig(
        Config({"systems.log.samza.fetch.threshold": "-1", "systems.log.samza.fetch.threshold.bytes": "-1"})
    )
    assert off.fetch_threshold("log") == (None, None)
    with pytest.raises(ConfigError, match=r"systems\.log\.samza\.fetch\.threshold\.bytes"):
        SystemConfig(Config({"systems.log.samza.fetch.threshold.bytes": "0"})).fetch_threshold("log")
    with pytest.raises(ConfigError, match=r"systems\.log\.samza\.fetch\.threshold'"):
        SystemConfig(Config({"systems.log.samza.fetch.threshold": "lots"})).fetch_threshold("log")
