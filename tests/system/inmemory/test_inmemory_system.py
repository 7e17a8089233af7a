"""What only the in-memory system does: carry Python objects, share streams process-wide by
system name, forget them on reset, stay consistent under concurrent producers. The shared
system contract runs against it in tests/system/log/test_log_system.py."""

from __future__ import annotations

import threading

import pytest

from samza_dagster.config import Config
from samza_dagster.system import (
    OutgoingMessageEnvelope,
    StreamNotFoundError,
    StreamSpec,
    SystemStream,
    SystemStreamPartition,
    system_factory,
)
from samza_dagster.system.inmemory import InMemorySystemFactory, reset
from support.waiting import wait_until

CONFIG = Config({"systems.mem.samza.factory": "inmemory", "systems.other.samza.factory": "inmemory"})


@pytest.fixture(autouse=True)
def clean_registry():
    reset()
    yield
    reset()


def test_factory_is_what_the_config_names():
    assert isinstance(system_factory(CONFIG, "mem"), InMemorySystemFactory)


def test_separately_made_admin_producer_and_consumer_share_streams_and_carry_objects():
    factory = InMemorySystemFactory()
    factory.get_admin("mem", CONFIG).create_stream(StreamSpec("s", "s", "mem", 1))
    producer = factory.get_producer("mem", CONFIG)
    producer.register("src")
    producer.start()
    payload = {"nested": [1, 2, {"x": object}]}
    producer.send("src", OutgoingMessageEnvelope(SystemStream("mem", "s"), payload, key=("tuple", 1)))
    ssp = SystemStreamPartition("mem", "s", 0)
    consumer = factory.get_consumer("mem", CONFIG)
    consumer.register(ssp, "0")
    consumer.start()
    [envelope] = consumer.poll([ssp], 1.0)[ssp]
    assert envelope.message is payload and envelope.key == ("tuple", 1)
    assert envelope.offset == "0"


def test_systems_are_isolated_by_name():
    factory = InMemorySystemFactory()
    factory.get_admin("mem", CONFIG).create_stream(StreamSpec("s", "s", "mem", 1))
    assert not factory.get_admin("other", CONFIG).stream_exists("s")


def test_reset_forgets_streams():
    factory = InMemorySystemFactory()
    factory.get_admin("mem", CONFIG).create_stream(StreamSpec("s", "s", "mem", 1))
    InMemorySystemFactory.reset("mem")
    with pytest.raises(StreamNotFoundError):
        factory.get_admin("mem", CONFIG).get_system_stream_metadata(["s"])


def test_concurrent_producers_keep_offsets_dense_and_lose_nothing():
    factory = InMemorySystemFactory()
    factory.get_admin("mem", CONFIG).create_stream(StreamSpec("s", "s", "mem", 2))
    stream = SystemStream("mem", "s")

    def produce(writer: int) -> None:
        producer = factory.get_producer("mem", CONFIG)
        producer.register("src")
        for i in range(5000):
            producer.send("src", OutgoingMessageEnvelope(stream, (writer, i), partition=i % 2))

    threads = [threading.Thread(target=produce, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ssps = [SystemStreamPartition("mem", "s", p) for p in range(2)]
    consumer = factory.get_consumer("mem", CONFIG)
    for ssp in ssps:
        consumer.register(ssp, "0")
    consumer.start()
    seen = {ssp: [] for ssp in ssps}
    while batch := consumer.poll(ssps, 0.01):
        for ssp, envelopes in batch.items():
            seen[ssp].extend(envelopes)
    for ssp in ssps:
        assert [e.offset for e in seen[ssp]] == [str(i) for i in range(10_000)]
        per_writer: dict[int, list[int]] = {}
        for e in seen[ssp]:
            per_writer.setdefault(e.message[0], []).append(e.message[1])
        assert all(values == sorted(values) and len(values) == 2500 for values in per_writer.values())


def test_polling_an_unregistered_partition_is_an_error_naming_it():
    factory = InMemorySystemFactory()
    factory.get_admin("mem", CONFIG).create_stream(StreamSpec("s", "s", "mem", 1))
    consumer = factory.get_consumer("mem", CONFIG)
    consumer.start()
    with pytest.raises(ValueError, match=r"SystemStreamPartition \[mem, s, 0\]"):
        consumer.poll([SystemStreamPartition("mem", "s", 0)], 0.01)


def test_stop_wakes_a_blocked_poll():
    factory = InMemorySystemFactory()
    factory.get_admin("mem", CONFIG).create_stream(StreamSpec("s", "s", "mem", 1))
    ssp = SystemStreamPartition("mem", "s", 0)
    consumer = factory.get_consumer("mem", CONFIG)
    consumer.register(ssp, "0")
    consumer.start()
    # a poll that waited out its timeout (10 minutes) instead would fail the deadline below
    box = {}
    poller = threading.Thread(target=lambda: box.setdefault("polled", consumer.poll([ssp], 600.0)), daemon=True)
    poller.start()
    timer = threading.Timer(0.1, consumer.stop)
    timer.start()
    wait_until(lambda: "polled" in box, what="the stopped consumer's poll to return")
    assert box["polled"] == {}
