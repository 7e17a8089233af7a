"""The system contract, run against the embedded log and the in-memory system, plus the
log system's own behaviour: durability across processes, dense offsets with concurrent
writers, byte-only payloads."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Iterable

import pytest

from samza_dagster.config import Config
from samza_dagster.system import (
    IncomingMessageEnvelope,
    OutgoingMessageEnvelope,
    StreamExistsError,
    StreamNotFoundError,
    StreamSpec,
    SystemStream,
    SystemStreamPartition,
    system_factory,
)
from samza_dagster.system.inmemory import reset as reset_inmemory

SYSTEM = "sys"
SYSTEM_KINDS = ["log", "inmemory"]


class Harness:
    """Makes admins, consumers and producers of one system from config, as the container does."""

    def __init__(self, kind: str, root: str) -> None:
        self.kind = kind
        self.config = Config({f"systems.{SYSTEM}.samza.factory": kind, f"systems.{SYSTEM}.log.path": root})
        self.factory = system_factory(self.config, SYSTEM)

    def configured(self, **overrides: str) -> Config:
        return self.config.with_overrides(overrides)

    def admin(self):
        return self.factory.get_admin(SYSTEM, self.config)

    def consumer(self, config: Config | None = None):
        return self.factory.get_consumer(SYSTEM, config or self.config)

    def producer(self, config: Config | None = None):
        producer = self.factory.get_producer(SYSTEM, config or self.config)
        producer.register("test")
        producer.start()
        return producer

    def create(self, stream: str, partitions: int) -> bool:
        return self.admin().create_stream(StreamSpec(stream, stream, SYSTEM, partitions))

    def send_all(self, envelopes: Iterable[OutgoingMessageEnvelope]) -> None:
        producer = self.producer()
        for envelope in envelopes:
            producer.send("test", envelope)
        producer.flush("test")
        producer.stop()

    def start_consumer(self, ssps_offsets: dict[SystemStreamPartition, str], config: Config | None = None):
        consumer = self.consumer(config)
        for ssp, offset in ssps_offsets.items():
            consumer.register(ssp, offset)
        consumer.start()
        return consumer


def ssps_of(stream: str, partitions: int) -> list[SystemStreamPartition]:
    return [SystemStreamPartition(SYSTEM, stream, p) for p in range(partitions)]


def drain(consumer, ssps, idle_timeout_s: float = 0.05) -> dict[SystemStreamPartition, list[IncomingMessageEnvelope]]:
    """Poll until a poll comes back empty; every envelope seen, per partition, in order."""
    seen: dict[SystemStreamPartition, list[IncomingMessageEnvelope]] = defaultdict(list)
    while True:
        batch = consumer.poll(ssps, idle_timeout_s)
        if not batch:
            return seen
        for ssp, envelopes in batch.items():
            seen[ssp].extend(envelopes)


@pytest.fixture(params=SYSTEM_KINDS)
def harness(request, tmp_path):
    reset_inmemory(SYSTEM)
    yield Harness(request.param, str(tmp_path / "log"))
    reset_inmemory(SYSTEM)


# -- admin -------------------------------------------------------------------------------------


def test_create_stream_is_idempotent_for_same_count_and_rejects_another(harness):
    assert harness.create("orders", 3) is True
    assert harness.create("orders", 3) is False
    with pytest.raises(StreamExistsError) as err:
        harness.create("orders", 5)
    assert "orders" in str(err.value) and "3" in str(err.value) and "5" in str(err.value)


def test_metadata_of_empty_stream_has_no_newest_offset(harness):
    harness.create("empty", 2)
    meta = harness.admin().get_system_stream_metadata(["empty"])["empty"]
    assert meta.stream_name == "empty"
    assert sorted(meta.partitions) == [0, 1]
    for pm in meta.partitions.values():
        assert (pm.oldest_offset, pm.newest_offset, pm.upcoming_offset) == ("0", None, "0")


def test_metadata_of_missing_stream_names_it_and_the_system(harness):
    harness.create("present", 1)
    with pytest.raises(StreamNotFoundError) as err:
        harness.admin().get_system_stream_metadata(["present", "absent"])
    assert "absent" in str(err.value) and SYSTEM in str(err.value)


def test_list_streams_and_stream_exists(harness):
    harness.create("b", 1)
    harness.create("a", 2)
    admin = harness.admin()
    assert admin.list_streams() == ["a", "b"]
    assert admin.stream_exists("a") and not admin.stream_exists("c")


def test_offsets_compare_as_integers_and_next_offset_is_plus_one(harness):
    admin = harness.admin()
    assert admin.offset_comparator("9", "10") < 0
    assert admin.offset_comparator("10", "9") > 0
    assert admin.offset_comparator("7", "7") == 0
    ssp = SystemStreamPartition(SYSTEM, "s", 0)
    assert admin.get_offsets_after({ssp: "41"}) == {ssp: "42"}


# -- produce and consume -----------------------------------------------------------------------


def test_keyed_messages_read_back_exactly_once_in_partition_order_with_matching_metadata(harness):
    partitions, count = 4, 100_000
    harness.create("big", partitions)
    stream = SystemStream(SYSTEM, "big")
    harness.send_all(
        OutgoingMessageEnvelope(stream, b"v%d" % i, key=b"k%d" % (i % 977)) for i in range(count)
    )
    ssps = ssps_of("big", partitions)
    consumer = harness.start_consumer({ssp: "0" for ssp in ssps})
    seen = drain(consumer, ssps)
    consumer.stop()

    total = 0
    expected_per_key: dict[bytes, int] = {}
    for ssp in ssps:
        envelopes = seen.get(ssp, [])
        assert [e.offset for e in envelopes] == [str(i) for i in range(len(envelopes))]
        last_index_per_key: dict[bytes, int] = {}
        for e in envelopes:
            index = int(e.message[1:])
            assert index % 977 == int(e.key[1:])
            # per-key (hence per-partition) order is the send order
            assert last_index_per_key.get(e.key, -1) < index
            last_index_per_key[e.key] = index
            assert e.size == len(e.message)
            assert e.event_time is not None
        for key in last_index_per_key:
            assert key not in expected_per_key, f"key {key!r} appeared in two partitions"
            expected_per_key[key] = ssp.partition
        total += len(envelopes)
    assert total == count

    meta = harness.admin().get_system_stream_metadata(["big"])["big"].partitions
    for ssp in ssps:
        n = len(seen.get(ssp, []))
        assert meta[ssp.partition].oldest_offset == "0"
        assert meta[ssp.partition].upcoming_offset == str(n)
        assert meta[ssp.partition].newest_offset == (str(n - 1) if n else None)


class _Cluster:
    """The three methods kafka-python's DefaultPartitioner asks of cluster metadata."""

    def __init__(self, topic: str, partitions: int) -> None:
        self._topic, self._partitions = topic, set(range(partitions))

    def topics(self):
        return {self._topic}

    def partitions_for_topic(self, topic):
        return self._partitions

    def available_partitions_for_topic(self, topic):
        return self._partitions


def test_keyed_messages_land_where_kafkas_default_partitioner_puts_them(harness):
    from kafka.partitioner import DefaultPartitioner

    partitions = 7
    harness.create("keyed", partitions)
    keys = [b"user-%d" % i for i in range(300)] + [b"", "unicode-\u00e9".encode()]
    harness.send_all(OutgoingMessageEnvelope(SystemStream(SYSTEM, "keyed"), b"x", key=k) for k in keys)
    ssps = ssps_of("keyed", partitions)
    seen = drain(harness.start_consumer({ssp: "0" for ssp in ssps}), ssps)
    cluster = _Cluster("keyed", partitions)
    kafka = DefaultPartitioner()
    landed = {e.key: ssp.partition for ssp, envelopes in seen.items() for e in envelopes}
    assert len(landed) == len(keys)
    for key in keys:
        assert landed[key] == kafka.partition("keyed", None, key, None, b"x", cluster), key


def test_partition_key_wins_over_key_and_explicit_partition_wins_over_both(harness):
    from samza_dagster.system.partitioner import partition_for_key

    harness.create("routed", 5)
    stream = SystemStream(SYSTEM, "routed")
    by_partition_key = partition_for_key(b"pk", 5)
    harness.send_all(
        [
            OutgoingMessageEnvelope(stream, b"a", key=b"k", partition_key=b"pk"),
            OutgoingMessageEnvelope(stream, b"b", key=b"k", partition_key="pk"),  # str keys hash as UTF-8
            OutgoingMessageEnvelope(stream, b"c", key=b"k", partition_key=b"pk", partition=(by_partition_key + 1) % 5),
        ]
    )
    ssps = ssps_of("routed", 5)
    seen = drain(harness.start_consumer({ssp: "0" for ssp in ssps}), ssps)
    where = {e.message: ssp.partition for ssp, envelopes in seen.items() for e in envelopes}
    assert where == {b"a": by_partition_key, b"b": by_partition_key, b"c": (by_partition_key + 1) % 5}


def test_unkeyed_messages_spread_round_robin(harness):
    harness.create("spread", 3)
    harness.send_all(OutgoingMessageEnvelope(SystemStream(SYSTEM, "spread"), b"m%d" % i) for i in range(9))
    meta = harness.admin().get_system_stream_metadata(["spread"])["spread"].partitions
    assert [meta[p].upcoming_offset for p in range(3)] == ["3", "3", "3"]


def test_explicit_partition_out_of_range_is_rejected_naming_the_stream(harness):
    harness.create("small", 2)
    producer = harness.producer()
    with pytest.raises(ValueError) as err:
        producer.send("test", OutgoingMessageEnvelope(SystemStream(SYSTEM, "small"), b"x", partition=2))
        producer.flush("test")
    assert "small" in str(err.value) and "2" in str(err.value)


def test_event_time_is_kept_and_defaults_to_now(harness):
    harness.create("timed", 1)
    before = int(time.time() * 1000)
    stream = SystemStream(SYSTEM, "timed")
    harness.send_all([OutgoingMessageEnvelope(stream, b"a", event_time=1234), OutgoingMessageEnvelope(stream, b"b")])
    after = int(time.time() * 1000)
    ssp = SystemStreamPartition(SYSTEM, "timed", 0)
    envelopes = drain(harness.start_consumer({ssp: "0"}), [ssp])[ssp]
    assert envelopes[0].event_time == 1234
    assert before <= envelopes[1].event_time <= after


def test_consumer_starts_at_the_registered_offset(harness):
    harness.create("resume", 1)
    harness.send_all(OutgoingMessageEnvelope(SystemStream(SYSTEM, "resume"), b"%d" % i, partition=0) for i in range(10))
    ssp = SystemStreamPartition(SYSTEM, "resume", 0)
    envelopes = drain(harness.start_consumer({ssp: "7"}), [ssp])[ssp]
    assert [(e.offset, e.message) for e in envelopes] == [("7", b"7"), ("8", b"8"), ("9", b"9")]


def test_poll_returns_at_most_fetch_size_envelopes_per_partition(harness):
    harness.create("fetch", 1)
    harness.send_all(OutgoingMessageEnvelope(SystemStream(SYSTEM, "fetch"), b"x", partition=0) for _ in range(25))
    ssp = SystemStreamPartition(SYSTEM, "fetch", 0)
    key = f"systems.{SYSTEM}.{'log' if harness.kind == 'log' else 'inmemory'}.fetch.size"
    consumer = harness.start_consumer({ssp: "0"}, harness.configured(**{key: "10"}))
    sizes = [len(consumer.poll([ssp], 0.05).get(ssp, [])) for _ in range(4)]
    assert sizes == [10, 10, 5, 0]


def test_producing_to_a_missing_stream_names_it(harness):
    producer = harness.producer()
    with pytest.raises(StreamNotFoundError) as err:
        producer.send("test", OutgoingMessageEnvelope(SystemStream(SYSTEM, "nowhere"), b"x"))
        producer.flush("test")
    assert "nowhere" in str(err.value)


def test_consuming_a_missing_stream_names_it(harness):
    consumer = harness.consumer()
    consumer.register(SystemStreamPartition(SYSTEM, "nowhere", 0), "0")
    with pytest.raises(StreamNotFoundError) as err:
        consumer.start()
        consumer.poll([SystemStreamPartition(SYSTEM, "nowhere", 0)], 0.01)
    assert "nowhere" in str(err.value)


# -- blocking poll ------------------------------------------------------------------------------


def test_idle_poll_blocks_about_the_timeout(harness):
    harness.create("idle", 1)
    ssp = SystemStreamPartition(SYSTEM, "idle", 0)
    consumer = harness.start_consumer({ssp: "0"})
    started = time.monotonic()
    assert consumer.poll([ssp], 0.3) == {}
    elapsed = time.monotonic() - started
    assert 0.28 <= elapsed < 0.6


def test_poll_returns_early_when_data_arrives(harness):
    harness.create("wake", 1)
    ssp = SystemStreamPartition(SYSTEM, "wake", 0)
    consumer = harness.start_consumer({ssp: "0"})

    def produce_later() -> None:
        time.sleep(0.2)
        harness.send_all([OutgoingMessageEnvelope(SystemStream(SYSTEM, "wake"), b"hello", partition=0)])

    writer = threading.Thread(target=produce_later)
    writer.start()
    started = time.monotonic()
    batch = consumer.poll([ssp], 5.0)
    elapsed = time.monotonic() - started
    writer.join()
    assert [e.message for e in batch[ssp]] == [b"hello"]
    assert 0.15 <= elapsed < 1.0


# -- bounded streams ----------------------------------------------------------------------------


def test_bounded_stream_ends_once_after_the_messages_present_at_start(harness):
    harness.create("bounded", 2)
    stream = SystemStream(SYSTEM, "bounded")
    harness.send_all(OutgoingMessageEnvelope(stream, b"%d" % i, partition=0) for i in range(3))
    config = harness.configured(**{f"systems.{SYSTEM}.streams.bounded.samza.bounded": "true"})
    p0, p1 = ssps_of("bounded", 2)
    consumer = harness.start_consumer({p0: "0", p1: "0"}, config)
    # written after start: beyond the end the stream had when the job started
    harness.send_all([OutgoingMessageEnvelope(stream, b"late", partition=0)])

    first = consumer.poll([p0, p1], 1.0)
    assert [e.message for e in first[p0]] == [b"0", b"1", b"2"]
    assert [e.is_end_of_stream for e in first[p1]] == [True]  # the empty partition ends at once
    second = consumer.poll([p0, p1], 1.0)
    assert list(second) == [p0] and [e.is_end_of_stream for e in second[p0]] == [True]
    assert consumer.poll([p0, p1], 0.05) == {}


def test_bounded_stream_registered_mid_way_ends_at_the_start_time_end(harness):
    harness.create("bounded2", 1)
    stream = SystemStream(SYSTEM, "bounded2")
    harness.send_all(OutgoingMessageEnvelope(stream, b"%d" % i) for i in range(5))
    config = harness.configured(**{"streams.b2.samza.system": SYSTEM, "streams.b2.samza.physical.name": "bounded2",
                                   "streams.b2.samza.bounded": "true"})
    ssp = SystemStreamPartition(SYSTEM, "bounded2", 0)
    envelopes = drain(harness.start_consumer({ssp: "3"}, config), [ssp])[ssp]
    assert [e.offset for e in envelopes[:-1]] == ["3", "4"]
    assert envelopes[-1].is_end_of_stream and sum(e.is_end_of_stream for e in envelopes) == 1


def test_unbounded_stream_never_ends(harness):
    harness.create("endless", 1)
    ssp = SystemStreamPartition(SYSTEM, "endless", 0)
    consumer = harness.start_consumer({ssp: "0"})
    assert consumer.poll([ssp], 0.05) == {}
    assert consumer.poll([ssp], 0.05) == {}
