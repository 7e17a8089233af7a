"""Systems polled on the run loop's thread (``poll_on_caller_thread``: the embedded log): no
poller thread, new data on an idle partition is still noticed while the chooser is busy, an
idle wait blocks instead of spinning, and a failing poll names its system."""

from __future__ import annotations

import threading
import time

import pytest

from samza_dagster.config import Config
from samza_dagster.system import OutgoingMessageEnvelope, StreamSpec, SystemStream, SystemStreamPartition
from samza_dagster.system.chooser import RoundRobinChooser, TieredPriorityChooser
from samza_dagster.system.consumers import SystemConsumers, SystemConsumersError
from samza_dagster.system.inmemory import InMemorySystemFactory
from samza_dagster.system.log import LogSystemFactory
from tests.forwarding import ForwardingConsumer
from tests.thread_cpu import ThreadCpu


@pytest.fixture
def log(tmp_path):
    config = Config({"systems.log.samza.factory": "log", "systems.log.log.path": str(tmp_path / "log")})
    factory = LogSystemFactory()
    admin = factory.get_admin("log", config)
    producer = factory.get_producer("log", config)
    producer.register("t")
    producer.start()

    created: set[str] = set()

    def produce(stream: str, partition: int, count: int) -> None:
        if stream not in created:
            admin.create_stream(StreamSpec(stream, stream, "log", 1))
            created.add(stream)
        for i in range(count):
            producer.send("t", OutgoingMessageEnvelope(SystemStream("log", stream), b"%d" % i, partition=partition))
        producer.flush("t")

    yield factory, config, produce
    producer.stop()


class ThreadRecordingConsumer(ForwardingConsumer):
    def __init__(self, inner) -> None:
        super().__init__(inner)
        self.poll_on_caller_thread = getattr(inner, "poll_on_caller_thread", False)
        self.threads: set[int] = set()

    def poll(self, ssps, timeout_s):
        self.threads.add(threading.get_ident())
        return self.inner.poll(ssps, timeout_s)


def test_the_log_is_polled_on_the_choosing_thread_and_in_memory_on_a_poller_thread(log):
    factory, config, produce = log
    produce("a", 0, 500)
    mem_config = Config({"systems.memx.samza.factory": "inmemory"})
    mem_factory = InMemorySystemFactory()
    mem_factory.get_admin("memx", mem_config).create_stream(StreamSpec("b", "b", "memx", 1))
    mem_producer = mem_factory.get_producer("memx", mem_config)
    mem_producer.register("t")
    for i in range(500):
        mem_producer.send("t", OutgoingMessageEnvelope(SystemStream("memx", "b"), i, partition=0))
    mem_producer.flush("t")
    log_consumer = ThreadRecordingConsumer(factory.get_consumer("log", config))
    mem_consumer = ThreadRecordingConsumer(mem_factory.get_consumer("memx", mem_config))
    assert log_consumer.poll_on_caller_thread is True and mem_consumer.poll_on_caller_thread is False
    sc = SystemConsumers(RoundRobinChooser(), {"log": log_consumer, "memx": mem_consumer})
    sc.register(SystemStreamPartition("log", "a", 0), "0")
    sc.register(SystemStreamPartition("memx", "b", 0), "0")
    sc.start()
    try:
        chosen, deadline = [], time.monotonic() + 20
        while len(chosen) < 1000:
            assert time.monotonic() < deadline, f"{len(chosen)} of 1000 chosen"
            envelope = sc.choose(0.1)
            if envelope is not None:
                chosen.append(envelope)
    finally:
        sc.stop()
        InMemorySystemFactory.reset("memx")
    assert log_consumer.threads == {threading.get_ident()}
    assert mem_consumer.threads and threading.get_ident() not in mem_consumer.threads
    assert [int(e.offset) for e in chosen if e.ssp.system == "log"] == list(range(500))
    assert [int(e.offset) for e in chosen if e.ssp.system == "memx"] == list(range(500))


def test_new_data_on_an_idle_partition_is_noticed_while_the_chooser_is_busy(log):
    """A flooded batch stream keeps the chooser busy throughout; a real-time message written
    mid-flood must still be polled and, with priority, chosen long before the flood ends. The
    first poll buffers the whole flood (one fetch, room for all of it), so the chooser never
    runs dry and only the periodic poll can find the real-time message."""
    factory, config, produce = log
    config = config.with_overrides({"systems.log.log.fetch.size": "100000"})
    produce("batch", 0, 60_000)
    produce("rt", 0, 0)
    batch, rt = SystemStreamPartition("log", "batch", 0), SystemStreamPartition("log", "rt", 0)
    chooser = TieredPriorityChooser(
        {SystemStream("log", "rt"): 1, SystemStream("log", "batch"): 0},
        {1: RoundRobinChooser(), 0: RoundRobinChooser()},
    )
    sc = SystemConsumers(chooser, {"log": factory.get_consumer("log", config)}, buffer_capacity_per_ssp=100_000)
    sc.register(batch, "0")
    sc.register(rt, "0")
    sc.start()
    try:
        batch_before = 0
        while batch_before < 1000:
            envelope = sc.choose(1.0)
            assert envelope is not None and envelope.ssp == batch
            batch_before += 1
        produce("rt", 0, 1)
        batch_after = 0
        while (envelope := sc.choose(1.0)) is not None and envelope.ssp == batch:
            batch_after += 1
    finally:
        sc.stop()
    assert envelope is not None and envelope.ssp == rt
    # Polled within ~1 ms of chooses, not after the flood's remaining 59,000 messages.
    assert batch_after < 30_000, batch_after


def test_an_idle_wait_on_the_log_blocks_instead_of_spinning(log):
    factory, config, produce = log
    produce("quiet", 0, 0)
    sc = SystemConsumers(RoundRobinChooser(), {"log": factory.get_consumer("log", config)})
    sc.register(SystemStreamPartition("log", "quiet", 0), "0")
    sc.start()
    try:
        # the log is polled on this thread: it is SystemConsumers' only one
        with ThreadCpu([threading.current_thread()]) as cpu:
            wall0 = time.monotonic()
            assert sc.choose(1.0) is None
            wall = time.monotonic() - wall0
        produce("quiet", 0, 1)
        assert sc.choose(5.0).offset == "0"
    finally:
        sc.stop()
    assert wall >= 0.95 and cpu.used < 0.5 * wall, (cpu.used, wall)


class FailingConsumer(ForwardingConsumer):
    poll_on_caller_thread = True

    def poll(self, ssps, timeout_s):
        raise OSError("disk gone")


def test_a_failing_poll_on_the_choosing_thread_names_the_system(log):
    factory, config, produce = log
    produce("a", 0, 1)
    sc = SystemConsumers(RoundRobinChooser(), {"log": FailingConsumer(factory.get_consumer("log", config))})
    sc.register(SystemStreamPartition("log", "a", 0), "0")
    sc.start()
    try:
        with pytest.raises(SystemConsumersError, match="consumer of system 'log' failed.*OSError: disk gone"):
            sc.choose(0.1)
    finally:
        sc.stop()
