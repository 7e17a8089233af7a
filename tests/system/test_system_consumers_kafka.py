"""Issue 3's chooser guarantees on Kafka, against Apache Kafka (support/kafka_broker.py): SystemConsumers +
DefaultChooser.from_config reading through the Kafka system, as tests/system/test_system_consumers.py
does on the log system — bootstrap (SAMZA-2's currency example, fresh and from a checkpoint),
priority QoS under a flooded batch stream (round-robin for contrast), and the restart guarantee;
plus the backpressure regression they exposed (a paused partition stalled in kafka-python).

Every stream is produced with the producer's default batching: the heads the chooser reads from
the admin are Kafka's own end offsets.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from samza_dagster.config import Config
from samza_dagster.system import (
    IncomingMessageEnvelope,
    OutgoingMessageEnvelope,
    StreamSpec,
    SystemStream,
    SystemStreamPartition,
)
from samza_dagster.system.chooser import DefaultChooser, MessageChooser, RoundRobinChooser
from samza_dagster.system.consumers import SystemConsumers
from samza_dagster.system.kafka import KafkaSystemFactory
from tests.forwarding import ForwardingConsumer
from tests.system.test_system_consumers import CODE_COUNTS, CheckingChooser, drain

pytestmark = pytest.mark.kafka

SYSTEM = "kafka"
FACTORY = KafkaSystemFactory()


# -- helpers ---------------------------------------------------------------------------------------


def create(config: Config, topic: str, partitions: int) -> SystemStream:
    admin = FACTORY.get_admin(SYSTEM, config)
    try:
        assert admin.create_stream(StreamSpec(topic, topic, SYSTEM, partitions)) is True
    finally:
        admin.close()
    return SystemStream(SYSTEM, topic)


def produce(config: Config, stream: SystemStream, counts: dict[int, int], *, start: int = 0) -> None:
    """``counts[p]`` messages to partition ``p`` through the Kafka system's own producer, flushed."""
    producer = FACTORY.get_producer(SYSTEM, config)
    producer.register("test")
    producer.start()
    try:
        for p, n in counts.items():
            for i in range(start, start + n):
                producer.send("test", OutgoingMessageEnvelope(stream, f"{p}-{i}".encode(), partition=p))
        producer.flush("test")
    finally:
        producer.stop()


def ssp(stream: SystemStream, partition: int) -> SystemStreamPartition:
    return SystemStreamPartition(stream.system, stream.stream, partition)


def consumers_for(config: Config, chooser: MessageChooser, **kwargs) -> SystemConsumers:
    return SystemConsumers(chooser, {SYSTEM: FACTORY.get_consumer(SYSTEM, config)}, **kwargs)


def default_chooser(config: Config) -> tuple[DefaultChooser, object]:
    """DefaultChooser.from_config with a real Kafka admin fetching the held streams' heads now."""
    admin = FACTORY.get_admin(SYSTEM, config)
    return DefaultChooser.from_config(config, None, {SYSTEM: admin}), admin


# -- backpressure: a partition left out of polls is read again ---------------------------------------


def test_a_partition_left_out_of_polls_is_read_again_when_asked_for(kafka_config, kafka_topic_prefix):
    """SystemConsumers leaves a partition whose buffer is full out of ``poll`` (the Kafka consumer
    pauses it) while it reads the others. kafka-python 3.0.12 parks the paused partition's fetched
    records and, once another partition's records were drained, never restored them nor fetched
    the partition again: a flooded input stalled for good (the workaround is
    ``_release_parked_records`` in system/kafka/consumer.py)."""
    big = create(kafka_config, f"{kafka_topic_prefix}-big", 1)
    small = create(kafka_config, f"{kafka_topic_prefix}-small", 1)
    produce(kafka_config, big, {0: 5000})
    consumer = FACTORY.get_consumer(
        SYSTEM, kafka_config.with_overrides({f"systems.{SYSTEM}.consumer.max.poll.records": "100"})
    )
    big_ssp, small_ssp = ssp(big, 0), ssp(small, 0)
    consumer.register(big_ssp, "0")
    consumer.register(small_ssp, "0")
    consumer.start()
    try:
        offsets: list[int] = []
        deadline = time.monotonic() + 10
        while not offsets:  # the rest of big's fetched records wait in kafka-python's fetcher
            assert time.monotonic() < deadline
            offsets += [int(e.offset) for e in consumer.poll([big_ssp, small_ssp], 0.2).get(big_ssp, [])]
        assert len(offsets) < 5000
        produce(kafka_config, small, {0: 1})
        while not consumer.poll([small_ssp], 0.2).get(small_ssp):  # big's buffer is "full"
            assert time.monotonic() < deadline, "the small partition was never read"
        while len(offsets) < 5000:  # big asked for again
            assert time.monotonic() < deadline, f"big stalled at offset {offsets[-1]} after being left out of polls"
            offsets += [int(e.offset) for e in consumer.poll([big_ssp, small_ssp], 0.2).get(big_ssp, [])]
    finally:
        consumer.stop()
    assert offsets == list(range(5000))


# -- bootstrap: SAMZA-2's currency example ---------------------------------------------------------


def codes_before_transactions(out: list[IncomingMessageEnvelope], expected_codes: int) -> None:
    """Exactly the ``expected_codes`` codes come first, then transactions (topic names carry the
    test's prefix, so streams are told apart by suffix)."""
    is_tx = [e.ssp.stream.endswith("-transactions") for e in out]
    assert True in is_tx, "no transaction was chosen at all"
    first_tx = is_tx.index(True)
    assert first_tx == expected_codes, (
        f"transaction chosen at position {first_tx}, before every one of the {expected_codes} currency codes"
    )
    assert not any(e.ssp.stream.endswith("-currency_codes") for e in out[expected_codes:])


def run_currency_job(config: Config, prefix: str, checkpoint: dict[int, int]) -> tuple[list, DefaultChooser, int]:
    """4-partition ``currency_codes`` bootstrap stream (partition 2 empty, CODE_COUNTS) and a
    4-partition ``transactions`` stream; reads the codes from ``checkpoint`` (default 0)."""
    codes = create(config, f"{prefix}-currency_codes", 4)
    tx = create(config, f"{prefix}-transactions", 4)
    # The bootstrap heads (Kafka's end offsets at start) decide when transactions may flow.
    produce(config, codes, {p: n for p, n in enumerate(CODE_COUNTS) if n})
    produce(config, tx, {p: 60 for p in range(4)})
    config = config.with_overrides(
        {
            "task.inputs": f"{codes},{tx}",
            f"systems.{SYSTEM}.streams.{codes.stream}.samza.bootstrap": "true",
            # 3 records a poll: transactions are often polled while codes are
            # not yet, so priority alone would let them through; only the
            # bootstrap rule (wait for the codes' heads) keeps them back.
            f"systems.{SYSTEM}.consumer.max.poll.records": "3",
        }
    )
    chooser, admin = default_chooser(config)
    try:
        sc = consumers_for(config, CheckingChooser(chooser), buffer_capacity_per_ssp=7, poll_timeout_s=0.05)
        for p in range(4):
            sc.register(ssp(codes, p), str(checkpoint.get(p, 0)))
            sc.register(ssp(tx, p), "0")
        remaining = sum(CODE_COUNTS[p] - checkpoint.get(p, 0) for p in range(4))
        sc.start()
        try:
            out = drain(sc, remaining + 240, timeout_s=30)
            assert sc.choose(0.2) is None  # nothing more than what was produced
        finally:
            sc.stop()
    finally:
        admin.close()
    return out, chooser, remaining


def test_currency_codes_bootstrap_before_any_transaction_on_kafka(kafka_config, kafka_topic_prefix):
    out, chooser, remaining = run_currency_job(kafka_config, kafka_topic_prefix, {})
    assert remaining == sum(CODE_COUNTS)
    codes_before_transactions(out, remaining)
    codes = [(e.ssp.partition, int(e.offset)) for e in out[:remaining]]
    assert sorted(codes) == [(p, i) for p, n in enumerate(CODE_COUNTS) for i in range(n)]
    bootstrap = chooser.metrics_snapshot()["bootstrap"]
    assert not bootstrap["bootstrapping"]
    (stream,) = bootstrap["streams"].values()
    assert stream["caught_up"] and stream["lagging_partitions"] == 0 and stream["time_to_head_s"] >= 0


def test_currency_codes_bootstrap_resumes_from_a_checkpoint_mid_stream_on_kafka(kafka_config, kafka_topic_prefix):
    checkpoint = {0: 30, 1: 10, 3: 33}  # partition 3 checkpointed at its head, partition 2 empty
    out, _, remaining = run_currency_job(kafka_config, kafka_topic_prefix, checkpoint)
    assert remaining == 10 + 15
    codes_before_transactions(out, remaining)
    by_partition = {
        p: [int(e.offset) for e in out if e.ssp.stream.endswith("currency_codes") and e.ssp.partition == p]
        for p in range(4)
    }
    assert by_partition == {0: list(range(30, 40)), 1: list(range(10, 25)), 2: [], 3: []}


# -- priority QoS: a flooded batch stream and a real-time stream ---------------------------------------

BATCH_MESSAGES = 50_000
BURSTS, BURST = 25, 20


@pytest.fixture(scope="module")
def flooded_batch(kafka_broker) -> Iterator[tuple[Config, SystemStream]]:
    """One batch topic flooded with 50k messages before any test starts, shared (read-only) by
    the priority and round-robin tests. Produced batched: its head matters to no chooser (it is
    the lowest priority, never held)."""
    config = Config(
        {
            f"systems.{SYSTEM}.samza.factory": "kafka",
            f"systems.{SYSTEM}.consumer.bootstrap.servers": kafka_broker.bootstrap_servers,
        }
    )
    batch = create(config, f"t-flooded-batch-{time.monotonic_ns()}", 1)
    produce(config, batch, {0: BATCH_MESSAGES})
    yield config, batch


#: Per-message work of the simulated task: slower than the broker can feed the batch stream, so
#: batch messages are always waiting (as in a real backlog) and the choice between the two streams
#: is the chooser's, not an accident of which buffer happens to be empty.
TASK_WORK_S = 50e-6


def process(envelope: IncomingMessageEnvelope) -> None:
    end = time.perf_counter() + TASK_WORK_S
    while time.perf_counter() < end:
        pass


class ObservedConsumer(ForwardingConsumer):
    """The real Kafka consumer, recording which real-time offsets each poll returned together."""

    def __init__(self, inner, realtime: SystemStreamPartition) -> None:
        super().__init__(inner)
        self.realtime = realtime
        self.groups: list[list[int]] = []

    def poll(self, ssps, timeout_s):
        polled = self.inner.poll(ssps, timeout_s)
        got = polled.get(self.realtime)
        if got:
            self.groups.append([int(e.offset) for e in got])
        return polled


def priority_run(
    config: Config,
    batch: SystemStream,
    realtime: SystemStream,
    make_chooser: Callable[[Config], tuple[MessageChooser, object]],
):
    """Reads the flooded batch stream and the real-time stream while a producer thread writes
    BURSTS bursts of BURST real-time messages (each flushed at once). Returns the chosen
    sequence of (is_realtime, offset, realtime_held) — realtime_held: the chooser held a
    real-time envelope when it chose this one — and the real-time offsets polled together."""
    config = config.with_overrides(
        {
            "task.inputs": f"{realtime},{batch}",
            f"systems.{SYSTEM}.streams.{realtime.stream}.samza.priority": "1",
            f"systems.{SYSTEM}.streams.{batch.stream}.samza.priority": "0",
            # Arrival latency, not ordering: kafka-python hands fetched
            # partitions out in fetch order, 500 records a poll, so real-time
            # records fetched behind ~1 MB of the batch partition wait ~60
            # polls; bound what one fetch takes of a partition. With the default
            # 500 ms fetch wait, real-time arrived in groups of up to 17 bursts (measured).
            f"systems.{SYSTEM}.consumer.max.partition.fetch.bytes": "65536",
            f"systems.{SYSTEM}.consumer.fetch.max.wait.ms": "50",
        }
    )
    chooser, admin = make_chooser(config)
    checking = CheckingChooser(chooser)
    rt_ssp, batch_ssp = ssp(realtime, 0), ssp(batch, 0)
    consumer = ObservedConsumer(FACTORY.get_consumer(SYSTEM, config), rt_ssp)
    sc = SystemConsumers(checking, {SYSTEM: consumer}, buffer_capacity_per_ssp=2000, poll_timeout_s=0.05)
    sc.register(batch_ssp, "0")
    sc.register(rt_ssp, "0")
    rt_producer = FACTORY.get_producer(SYSTEM, config)
    rt_producer.register("rt")
    rt_producer.start()
    failure: list[BaseException] = []

    def produce_realtime():
        try:
            for b in range(BURSTS):
                time.sleep(0.01)
                for i in range(BURST):
                    rt_producer.send("rt", OutgoingMessageEnvelope(realtime, f"rt-{b}-{i}".encode(), partition=0))
                rt_producer.flush("rt")
        except BaseException as exc:  # noqa: BLE001 - surfaced in the test's thread
            failure.append(exc)

    sequence: list[tuple[bool, int, bool]] = []
    sc.start()
    thread = threading.Thread(target=produce_realtime)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        rt_seen = 0
        while rt_seen < BURSTS * BURST:
            assert not failure, f"real-time producer failed: {failure}"
            assert time.monotonic() < deadline, f"only {rt_seen} real-time messages chosen in 30 s"
            envelope = sc.choose(0.05)
            if envelope is None:
                continue
            is_rt = envelope.ssp == rt_ssp
            rt_seen += is_rt
            process(envelope)
            # After choose returned, checking.outstanding still reflects the chooser's content at
            # the choice for every partition but the chosen one (only that one is refilled).
            sequence.append((is_rt, int(envelope.offset), not is_rt and rt_ssp in checking.outstanding))
    finally:
        thread.join()
        sc.stop()
        rt_producer.stop()
        if admin is not None:
            admin.close()
    return sequence, consumer.groups


def interrupted_groups(sequence, groups: list[list[int]]) -> int:
    """Poll groups of real-time messages with a batch message chosen between their first and
    last member (once a group was handed over, all of it was available)."""
    position = {offset: i for i, (is_rt, offset, _) in enumerate(sequence) if is_rt}
    batch_before = [0]
    for is_rt, _, _ in sequence:
        batch_before.append(batch_before[-1] + (not is_rt))
    bad = 0
    for group in groups:
        first, last = position[group[0]], position[group[-1]]
        bad += batch_before[last + 1] - batch_before[first] > 0
    return bad


def test_realtime_goes_before_every_available_batch_message_on_kafka(flooded_batch, kafka_topic_prefix):
    config, batch = flooded_batch
    realtime = create(config, f"{kafka_topic_prefix}-realtime", 1)
    sequence, groups = priority_run(config, batch, realtime, default_chooser)
    rt_offsets = [offset for is_rt, offset, _ in sequence if is_rt]
    assert rt_offsets == list(range(BURSTS * BURST))
    # Arrival = the real-time envelope is in the chooser (SystemConsumers hands every polled
    # envelope over at the next choose, and the next of a partition as soon as one is chosen):
    # from then on no batch message is chosen until no real-time envelope is left.
    held = sum(1 for _, _, rt_held in sequence if rt_held)
    assert held == 0, f"{held} batch messages were chosen while a real-time message was waiting"
    # and a group of real-time messages polled together is never split by batch messages
    assert interrupted_groups(sequence, groups) == 0
    assert sum(len(g) for g in groups if len(g) > 1) >= BURST, "bursts never arrived together: a weak test"
    first_rt = next(i for i, (is_rt, _, _) in enumerate(sequence) if is_rt)
    batch_between = sum(1 for is_rt, _, _ in sequence[first_rt:] if not is_rt)
    assert batch_between > 0, "the batch stream never ran between real-time bursts"


def test_round_robin_contrast_chooses_batch_while_realtime_waits_on_kafka(flooded_batch, kafka_topic_prefix):
    config, batch = flooded_batch
    realtime = create(config, f"{kafka_topic_prefix}-realtime", 1)
    sequence, groups = priority_run(config, batch, realtime, lambda _config: (RoundRobinChooser(), None))
    rt_total = BURSTS * BURST
    held = sum(1 for _, _, rt_held in sequence if rt_held)
    # Round-robin alternates with the flooded batch stream: about one batch choice per waiting
    # real-time message (fewer only when the batch buffer is momentarily empty).
    assert held >= 0.5 * rt_total, f"only {held} batch messages chosen while real-time waited"
    multi = [g for g in groups if len(g) > 1]
    assert interrupted_groups(sequence, multi) >= 0.5 * len(multi)


# -- restart guarantee ------------------------------------------------------------------------------


def test_restart_with_both_streams_behind_processes_the_realtime_backlog_first_on_kafka(
    kafka_config, kafka_topic_prefix
):
    """Real-time priority 1, batch 0. A first run processes part of both streams and checkpoints;
    more arrives on both while it is down; the restarted job (a new consumer and chooser, heads
    read from the broker at restart) chooses no batch message while the real-time stream still
    has messages that were there at the restart."""
    rt = create(kafka_config, f"{kafka_topic_prefix}-realtime", 4)
    batch = create(kafka_config, f"{kafka_topic_prefix}-batch", 2)
    # Real-time heads decide when batch may run after the restart.
    produce(kafka_config, rt, {p: 60 for p in range(4)})
    produce(kafka_config, batch, {p: 3000 for p in range(2)})
    config = kafka_config.with_overrides(
        {"task.inputs": f"{rt},{batch}", f"task.chooser.priorities.{rt}": "1", f"task.chooser.priorities.{batch}": "0"}
    )

    # First run: reads 240 real-time + 1000 others, then stops; checkpoint = next offset to read.
    chooser, admin = default_chooser(config)
    sc = consumers_for(config, chooser, buffer_capacity_per_ssp=100)
    for p in range(4):
        sc.register(ssp(rt, p), "0")
    for p in range(2):
        sc.register(ssp(batch, p), "0")
    sc.start()
    try:
        first = drain(sc, 240 + 1000, timeout_s=30)
    finally:
        sc.stop()
        admin.close()
    assert [e.ssp.stream for e in first[:240]] == [rt.stream] * 240
    checkpoint: dict[SystemStreamPartition, int] = {ssp(rt, p): 0 for p in range(4)}
    checkpoint.update({ssp(batch, p): 0 for p in range(2)})
    for e in first:
        checkpoint[e.ssp] = int(e.offset) + 1
    # Rewind real-time partitions 0 and 1 mid-way (as if the job had died before committing);
    # while down, more real-time arrives on 0..2 (partition 3 stays at its head) and batch grows.
    checkpoint[ssp(rt, 0)], checkpoint[ssp(rt, 1)] = 20, 59
    produce(kafka_config, rt, {0: 50, 1: 10, 2: 35}, start=60)
    produce(kafka_config, batch, {0: 500, 1: 500}, start=3000)
    heads = {0: 110, 1: 70, 2: 95, 3: 60}
    backlog = sum(heads[p] - checkpoint[ssp(rt, p)] for p in range(4))
    assert backlog == 90 + 11 + 35

    # Restart. Tiny fetches (3 records per poll) and buffers of 2 make the real-time buffers
    # run dry between polls all the time: only the hold-to-head rule keeps batch messages out.
    restart_config = config.with_overrides({f"systems.{SYSTEM}.consumer.max.poll.records": "3"})
    chooser, admin = default_chooser(restart_config)
    sc = consumers_for(restart_config, CheckingChooser(chooser), buffer_capacity_per_ssp=2, poll_timeout_s=0.01)
    for registered_ssp, offset in checkpoint.items():
        sc.register(registered_ssp, str(offset))
    sc.start()
    try:
        out = drain(sc, backlog + 1000, timeout_s=60)
    finally:
        sc.stop()
        admin.close()
    streams = [e.ssp.stream for e in out]
    assert streams[:backlog] == [rt.stream] * backlog, (
        f"batch message chosen at position {streams.index(batch.stream)} of a {backlog}-message real-time backlog"
    )
    assert {(e.ssp.partition, int(e.offset)) for e in out[:backlog]} == {
        (p, o) for p in range(4) for o in range(checkpoint[ssp(rt, p)], heads[p])
    }
    assert streams[backlog:] == [batch.stream] * 1000
    # both batch partitions are served (round-robin over what the client has fetched: which
    # partition's records librdkafka hands over first depends on its fetches, not the chooser)
    assert {e.ssp.partition for e in out[backlog:]} == {0, 1}
