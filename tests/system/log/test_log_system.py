"""The system contract, run against the embedded log and the in-memory system, plus the
log system's own behaviour: durability across processes, dense offsets with concurrent
writers, byte-only payloads."""

from __future__ import annotations

import os
import threading
import time
from collections import defaultdict
from collections.abc import Iterable

import pytest

from samza_dagster.config import Config, ConfigError
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
from support.log_reading import file_rows
from support.waiting import wait_until

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
    harness.send_all(OutgoingMessageEnvelope(stream, b"v%d" % i, key=b"k%d" % (i % 977)) for i in range(count))
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
    assert time.monotonic() - started >= 0.28  # it blocked for its timeout instead of spinning


def test_poll_returns_early_when_data_arrives(harness):
    harness.create("wake", 1)
    ssp = SystemStreamPartition(SYSTEM, "wake", 0)
    consumer = harness.start_consumer({ssp: "0"})

    def produce_later() -> None:
        time.sleep(0.2)
        harness.send_all([OutgoingMessageEnvelope(SystemStream(SYSTEM, "wake"), b"hello", partition=0)])

    # a poll that waited out its timeout (10 minutes) instead would fail the deadline below
    box = {}
    poller = threading.Thread(target=lambda: box.setdefault("batch", consumer.poll([ssp], 600.0)), daemon=True)
    poller.start()
    writer = threading.Thread(target=produce_later)
    writer.start()
    wait_until(lambda: "batch" in box, what="the poll to return with the new message")
    writer.join()
    assert [e.message for e in box["batch"][ssp]] == [b"hello"]


def test_a_caught_up_partition_is_not_read_again_until_another_connection_commits(log):
    """A poll of partitions read to their end asks each stream file's ``PRAGMA data_version``, not
    the file's rows: reading again only once another connection (here another producer) committed;
    a partition whose read was cut at the fetch size is read on at once."""
    log.create("tail", 2)
    ssps = ssps_of("tail", 2)
    stream = SystemStream(SYSTEM, "tail")
    log.send_all(OutgoingMessageEnvelope(stream, b"%d" % i, partition=0) for i in range(15))
    consumer = log.start_consumer(
        dict.fromkeys(ssps, "0"), log.configured(**{f"systems.{SYSTEM}.log.fetch.size": "10"})
    )
    reads: list[list[int]] = []
    conn = consumer._conn("tail")
    read_many = conn.log_format.read_many

    def counting(conn_, requests, limit, state=None):
        reads.append([partition for partition, _, _ in requests])
        return read_many(conn_, requests, limit, state)

    conn.log_format.read_many = counting  # this connection's layout object only
    assert [len(v) for v in consumer.poll(ssps, 0).values()] == [10]  # partition 0 cut at the fetch size
    assert [len(v) for v in consumer.poll(ssps, 0).values()] == [5]  # so it is read on; 1 is caught up
    assert reads == [[0, 1], [0]]
    for _ in range(3):
        assert consumer.poll(ssps, 0) == {}
    assert consumer.poll(ssps, 0.05) == {}  # a waiting poll asks the version, not the rows
    assert reads == [[0, 1], [0]]
    log.send_all([OutgoingMessageEnvelope(stream, b"new", partition=1)])
    batch = consumer.poll(ssps, 0)
    assert [e.message for e in batch[ssps[1]]] == [b"new"] and ssps[0] not in batch
    assert reads[2:] == [[0, 1]]  # both are read again after the commit, once
    assert consumer.poll(ssps, 0) == {} and len(reads) == 3
    consumer.stop()


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
    config = harness.configured(
        **{
            "streams.b2.samza.system": SYSTEM,
            "streams.b2.samza.physical.name": "bounded2",
            "streams.b2.samza.bounded": "true",
        }
    )
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


# -- the log system only -------------------------------------------------------------------------


@pytest.fixture
def log(tmp_path) -> Harness:
    return Harness("log", str(tmp_path / "log"))


def test_non_bytes_payloads_are_rejected_naming_the_stream(log):
    log.create("typed", 1)
    producer = log.producer()
    stream = SystemStream(SYSTEM, "typed")
    with pytest.raises(TypeError, match=r"message of a message to stream 'typed'.*dict"):
        producer.send("test", OutgoingMessageEnvelope(stream, {"not": "bytes"}))
    with pytest.raises(TypeError, match=r"key of a message to stream 'typed'.*str"):
        producer.send("test", OutgoingMessageEnvelope(stream, b"ok", key="text"))
    producer.flush("test")
    assert log.admin().get_system_stream_metadata(["typed"])["typed"].partitions[0].newest_offset is None


def test_null_values_round_trip_as_tombstones(log):
    log.create("tomb", 1)
    log.send_all([OutgoingMessageEnvelope(SystemStream(SYSTEM, "tomb"), None, key=b"gone")])
    ssp = SystemStreamPartition(SYSTEM, "tomb", 0)
    [envelope] = drain(log.start_consumer({ssp: "0"}), [ssp])[ssp]
    assert (envelope.key, envelope.message, envelope.size) == (b"gone", None, 0)


def test_producer_writes_a_batch_when_the_buffer_reaches_batch_size(log):
    log.create("batched", 1)
    # linger off: only the batch size (or a flush) writes here
    producer = log.producer(
        log.configured(**{f"systems.{SYSTEM}.log.batch.size": "50", f"systems.{SYSTEM}.log.linger.ms": "0"})
    )
    stream = SystemStream(SYSTEM, "batched")
    admin = log.admin()

    def upcoming() -> str:
        return admin.get_system_stream_metadata(["batched"])["batched"].partitions[0].upcoming_offset

    for _ in range(49):
        producer.send("test", OutgoingMessageEnvelope(stream, b"x"))
    assert upcoming() == "0"  # still buffered
    producer.send("test", OutgoingMessageEnvelope(stream, b"x"))
    assert upcoming() == "50"
    producer.send("test", OutgoingMessageEnvelope(stream, b"x"))
    producer.flush("test")
    assert upcoming() == "51"


def test_sent_messages_become_readable_within_the_linger_without_a_flush(log):
    """Like Kafka's linger.ms: output is visible while the producer is idle, not only at the
    container's commit (which flushes)."""
    log.create("lingered", 2)
    producer = log.producer(log.configured(**{f"systems.{SYSTEM}.log.linger.ms": "20"}))
    stream = SystemStream(SYSTEM, "lingered")
    ssps = ssps_of("lingered", 2)
    consumer = log.start_consumer({ssp: "0" for ssp in ssps})
    seen: list[bytes] = []
    try:
        for round_ in range(3):  # the thread writes, goes idle, and is woken by the next send
            producer.send("test", OutgoingMessageEnvelope(stream, b"a%d" % round_, partition=0))
            producer.send("test", OutgoingMessageEnvelope(stream, b"b%d" % round_, partition=1))
            deadline = time.monotonic() + 30
            while len(seen) < 2 * (round_ + 1):
                assert time.monotonic() < deadline, f"round {round_}: only {seen} became readable without a flush"
                seen += [e.message for batch in consumer.poll(ssps, 0.1).values() for e in batch]
    finally:
        consumer.stop()
        producer.stop()
    assert sorted(seen) == sorted([b"a0", b"b0", b"a1", b"b1", b"a2", b"b2"])


def test_linger_zero_writes_only_at_batch_size_or_flush(log):
    log.create("unlingered", 1)
    producer = log.producer(log.configured(**{f"systems.{SYSTEM}.log.linger.ms": "0"}))
    producer.send("test", OutgoingMessageEnvelope(SystemStream(SYSTEM, "unlingered"), b"x"))
    time.sleep(0.2)  # a lingering producer would have written it by now (5 ms by default)
    admin = log.admin()
    assert admin.get_system_stream_metadata(["unlingered"])["unlingered"].partitions[0].upcoming_offset == "0"
    producer.flush("test")
    assert admin.get_system_stream_metadata(["unlingered"])["unlingered"].partitions[0].upcoming_offset == "1"
    producer.stop()


@pytest.mark.parametrize("value", ["-1", "soon"])
def test_linger_setting_is_validated_naming_the_key(log, value):
    with pytest.raises(ConfigError, match=rf"systems\.{SYSTEM}\.log\.linger\.ms"):
        log.producer(log.configured(**{f"systems.{SYSTEM}.log.linger.ms": value}))


def test_each_stream_is_one_sqlite_file_in_wal_mode_under_the_configured_root(log, tmp_path):
    import sqlite3

    assert log.create("a/b c", 2)  # not file-name safe: encoded, and listed back by its name
    log.send_all([OutgoingMessageEnvelope(SystemStream(SYSTEM, "a/b c"), b"x", key=b"k")])
    files = sorted(p.name for p in (tmp_path / "log").iterdir() if p.name.endswith(".db"))
    assert files == ["a%2Fb%20c.db"]
    assert log.admin().list_streams() == ["a/b c"]
    conn = sqlite3.connect(tmp_path / "log" / files[0])
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT value FROM meta WHERE name = 'partition_count'").fetchone()[0] == "2"
    conn.close()
    assert sum(len(file_rows(tmp_path / "log" / files[0], p)) for p in range(2)) == 1


def test_default_root_is_dot_samza_log_in_the_working_directory(tmp_path, monkeypatch):
    from samza_dagster.system.log import LogSystemFactory

    monkeypatch.chdir(tmp_path)
    admin = LogSystemFactory().get_admin("plain", Config({}))
    admin.create_stream(StreamSpec("s", "s", "plain", 1))
    assert (tmp_path / ".samza-log" / "s.db").exists()


def test_synchronous_setting_is_validated_naming_the_key(log):
    from samza_dagster.config import ConfigError

    with pytest.raises(ConfigError, match=rf"systems\.{SYSTEM}\.log\.synchronous"):
        log.producer(log.configured(**{f"systems.{SYSTEM}.log.synchronous": "sometimes"}))


@pytest.mark.parametrize("setting,level", [(None, 2), ("full", 2), ("NORMAL", 1), ("off", 0)])
def test_synchronous_setting_applies_to_the_writers_connection_and_defaults_to_full(log, setting, level):
    log.create("sync", 1)
    config = log.configured(**{f"systems.{SYSTEM}.log.synchronous": setting}) if setting else log.config
    producer = log.producer(config)
    producer.send("test", OutgoingMessageEnvelope(SystemStream(SYSTEM, "sync"), b"durable"))
    producer.flush("test")
    assert producer._writers["sync"].conn.execute("PRAGMA synchronous").fetchone()[0] == level
    ssp = SystemStreamPartition(SYSTEM, "sync", 0)
    assert [e.message for e in drain(log.start_consumer({ssp: "0"}, config), [ssp])[ssp]] == [b"durable"]


def test_poll_may_run_on_another_thread_than_start(log):
    log.create("threads", 1)
    log.send_all([OutgoingMessageEnvelope(SystemStream(SYSTEM, "threads"), b"x")])
    ssp = SystemStreamPartition(SYSTEM, "threads", 0)
    consumer = log.start_consumer({ssp: "0"})
    out: list = []
    poller = threading.Thread(target=lambda: out.append(consumer.poll([ssp], 1.0)))
    poller.start()
    poller.join()
    assert [e.message for e in out[0][ssp]] == [b"x"]


# -- several processes on one root --------------------------------------------------------------

BATCH = 500
BATCHES = 40


def _read_while_written(root: str, ready, observed, progress) -> None:
    """Reader process: report the count seen after every poll, until all batches arrived;
    ``progress`` shows the writer how far it has read."""
    harness = Harness("log", root)
    ssp = SystemStreamPartition(SYSTEM, "shared", 0)
    consumer = harness.start_consumer({ssp: "0"}, harness.configured(**{f"systems.{SYSTEM}.log.fetch.size": "1000000"}))
    admin = harness.admin()
    ready.set()
    seen, counts, offsets_ok = 0, [], True
    deadline = time.monotonic() + 180
    while seen < BATCH * BATCHES and time.monotonic() < deadline:
        batch = consumer.poll([ssp], 1.0)
        for e in batch.get(ssp, []):
            offsets_ok &= e.offset == str(seen) and e.message == b"%d" % seen
            seen += 1
        if batch:
            counts.append(seen)
        counts.append(int(admin.get_system_stream_metadata(["shared"])["shared"].partitions[0].upcoming_offset))
        progress.value = seen
    observed.put((counts, offsets_ok))


def test_reader_in_another_process_sees_whole_batches_only(log, tmp_path):
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    log.create("shared", 1)
    ready, observed, progress = ctx.Event(), ctx.Queue(), ctx.Value("q", 0)
    reader = ctx.Process(target=_read_while_written, args=(str(tmp_path / "log"), ready, observed, progress))
    reader.start()
    assert ready.wait(60), "reader process did not start"
    # linger off: only the batch size writes, so whole batches are what the reader may see
    producer = log.producer(
        log.configured(**{f"systems.{SYSTEM}.log.batch.size": str(BATCH), f"systems.{SYSTEM}.log.linger.ms": "0"})
    )
    stream = SystemStream(SYSTEM, "shared")
    # the reader must see the stream mid-way: after the first batch and after half of them the
    # writer waits until it has (whatever either process's speed); in between they race
    rendezvous = {BATCH, BATCH * (BATCHES // 2)}
    for i in range(BATCH * BATCHES):
        producer.send("test", OutgoingMessageEnvelope(stream, b"%d" % i, partition=0))
        if i + 1 in rendezvous:
            wait_until(lambda n=i + 1: progress.value >= n, what=f"the reader to read {i + 1} messages")
        elif i % BATCH == BATCH - 1:
            time.sleep(0.01)  # let the reader look between commits
    producer.flush("test")
    counts, offsets_ok = observed.get(timeout=60)
    reader.join(30)
    assert offsets_ok
    assert counts[-1] == BATCH * BATCHES
    assert all(c % BATCH == 0 for c in counts), sorted(set(c % BATCH for c in counts))
    assert {BATCH, BATCH * (BATCHES // 2), BATCH * BATCHES} <= set(counts), sorted(set(counts))


def _write_partition(root: str, writer: int, count: int, barrier) -> None:
    harness = Harness("log", root)
    producer = harness.producer(harness.configured(**{f"systems.{SYSTEM}.log.batch.size": "100"}))
    stream = SystemStream(SYSTEM, "two")
    for i in range(count):
        if i % 50 == 0:
            # in rounds of one batch (100 rows) each: both processes write each round at the
            # same time and neither runs ahead, whatever the machine's scheduling
            producer.flush("test")
            barrier.wait(60)
        value = b"%d:%d" % (writer, i)
        producer.send("test", OutgoingMessageEnvelope(stream, value, partition=writer))  # its own partition
        producer.send("test", OutgoingMessageEnvelope(stream, value, partition=2))  # a partition both write
    producer.flush("test")


def test_two_writer_processes_keep_per_partition_order_and_dense_offsets(log, tmp_path):
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    count = 5000
    log.create("two", 3)
    barrier = ctx.Barrier(2)
    writers = [ctx.Process(target=_write_partition, args=(str(tmp_path / "log"), w, count, barrier)) for w in range(2)]
    for w in writers:
        w.start()
    for w in writers:
        w.join(120)
        assert w.exitcode == 0
    ssps = ssps_of("two", 3)
    seen = drain(log.start_consumer({ssp: "0" for ssp in ssps}), ssps)
    for writer in range(2):
        assert [e.message for e in seen[ssps[writer]]] == [b"%d:%d" % (writer, i) for i in range(count)]
        assert [e.offset for e in seen[ssps[writer]]] == [str(i) for i in range(count)]
    shared = seen[ssps[2]]
    assert [e.offset for e in shared] == [str(i) for i in range(2 * count)]
    for writer in range(2):
        mine = [e.message for e in shared if e.message.startswith(b"%d:" % writer)]
        assert mine == [b"%d:%d" % (writer, i) for i in range(count)]
    switches = sum(1 for a, b in zip(shared, shared[1:], strict=False) if a.message[:1] != b.message[:1])
    # every round's rows follow the round before, and each round holds both writers' rows
    assert switches >= count // 50 - 1, f"the writers hardly interleaved ({switches} switches)"


def _flush_then_hang(root: str, flushed) -> None:
    harness = Harness("log", root)
    # linger off: the last message must stay unwritten until the kill (it is never flushed)
    producer = harness.producer(harness.configured(**{f"systems.{SYSTEM}.log.linger.ms": "0"}))
    stream = SystemStream(SYSTEM, "killed")
    for i in range(1500):
        producer.send("test", OutgoingMessageEnvelope(stream, b"%d" % i))
    producer.flush("test")
    producer.send("test", OutgoingMessageEnvelope(stream, b"never flushed"))
    flushed.set()
    time.sleep(60)


def test_flushed_messages_survive_a_killed_writer_and_unflushed_ones_never_half_appear(log, tmp_path):
    import multiprocessing
    import signal

    ctx = multiprocessing.get_context("spawn")
    log.create("killed", 1)
    flushed = ctx.Event()
    writer = ctx.Process(target=_flush_then_hang, args=(str(tmp_path / "log"), flushed))
    writer.start()
    assert flushed.wait(60)
    os.kill(writer.pid, signal.SIGKILL)
    writer.join(10)
    ssp = SystemStreamPartition(SYSTEM, "killed", 0)
    envelopes = drain(log.start_consumer({ssp: "0"}), [ssp])[ssp]
    assert [e.message for e in envelopes] == [b"%d" % i for i in range(1500)]


def test_racing_creators_agree_exactly_one_created_the_stream(log):
    barrier = threading.Barrier(6)
    outcomes: list[object] = []

    def create(partitions: int) -> None:
        admin = log.admin()
        barrier.wait()
        try:
            outcomes.append(admin.create_stream(StreamSpec("race", "race", SYSTEM, partitions)))
        except StreamExistsError as exc:
            outcomes.append(exc)

    threads = [threading.Thread(target=create, args=(4,)) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(map(repr, outcomes)) == sorted(["True"] + ["False"] * 5)
    assert log.admin().partition_count("race") == 4
    assert [p for p in os.listdir(log.admin().root) if p.endswith(".creating")] == []  # temp files removed


def test_one_producer_shared_by_sending_threads_loses_nothing_and_keeps_each_threads_order(log):
    log.create("threaded", 2)
    producer = log.producer(log.configured(**{f"systems.{SYSTEM}.log.batch.size": "100"}))
    stream = SystemStream(SYSTEM, "threaded")

    def send(thread: int) -> None:
        for i in range(5000):
            producer.send("test", OutgoingMessageEnvelope(stream, b"%d:%d" % (thread, i), partition=i % 2))

    threads = [threading.Thread(target=send, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    producer.flush("test")
    ssps = ssps_of("threaded", 2)
    seen = drain(log.start_consumer({ssp: "0" for ssp in ssps}), ssps)
    for ssp in ssps:
        assert [e.offset for e in seen[ssp]] == [str(i) for i in range(10_000)]
        for thread in range(4):
            mine = [int(e.message.split(b":")[1]) for e in seen[ssp] if e.message.startswith(b"%d:" % thread)]
            assert mine == list(range(ssp.partition, 5000, 2))
