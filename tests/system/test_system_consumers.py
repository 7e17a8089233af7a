"""SystemConsumers on real systems (the embedded log, the in-memory system): buffering,
backpressure, one outstanding envelope per partition, end-of-stream, errors, idle CPU, and the
chooser guarantees (bootstrap, priority, restart, time alignment) end to end."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from samza_dagster.config import Config
from samza_dagster.system import (
    IncomingMessageEnvelope,
    OutgoingMessageEnvelope,
    StreamSpec,
    SystemStream,
    SystemStreamPartition,
)
from samza_dagster.system.chooser import (
    DefaultChooser,
    MessageChooser,
    RoundRobinChooser,
    TimeAlignedChooser,
)
from samza_dagster.system.consumers import SystemConsumers, SystemConsumersError
from samza_dagster.system.inmemory import InMemorySystemFactory
from samza_dagster.system.log import LogSystemFactory
from support.waiting import wait_until
from tests.forwarding import ForwardingChooser, ForwardingConsumer
from tests.thread_cpu import ThreadCpu

# -- helpers ---------------------------------------------------------------------------------------


class System:
    """One system (log or in-memory) with helpers to create streams and produce."""

    def __init__(self, name: str, factory, config: Config) -> None:
        self.name, self.factory, self.config = name, factory, config
        self.admin = factory.get_admin(name, config)
        self.producer = factory.get_producer(name, config)
        self.producer.register("test")
        self.producer.start()

    def create(self, stream: str, partitions: int) -> SystemStream:
        self.admin.create_stream(StreamSpec(stream, stream, self.name, partitions))
        return SystemStream(self.name, stream)

    def produce(self, stream: str, partition: int, count: int, start: int = 0, event_time=None) -> None:
        ss = SystemStream(self.name, stream)
        for i in range(start, start + count):
            t = event_time(i) if event_time else None
            self.producer.send(
                "test",
                OutgoingMessageEnvelope(ss, f"{stream}-{partition}-{i}".encode(), partition=partition, event_time=t),
            )
        self.producer.flush("test")

    def consumer(self):
        return self.factory.get_consumer(self.name, self.config)

    def metadata(self, *streams: SystemStream):
        found = self.admin.get_system_stream_metadata([s.stream for s in streams])
        return {s: found[s.stream] for s in streams}

    def close(self) -> None:
        self.producer.stop()


@pytest.fixture
def log_system(tmp_path):
    config = Config(
        {
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(tmp_path / "log"),
            "systems.log.log.fetch.size": "500",
        }
    )
    system = System("log", LogSystemFactory(), config)
    yield system
    system.close()


@pytest.fixture
def mem_system():
    name = f"mem{uuid.uuid4().hex[:8]}"
    config = Config({f"systems.{name}.samza.factory": "inmemory"})
    system = System(name, InMemorySystemFactory(), config)
    yield system
    InMemorySystemFactory.reset(name)


def ssps_of(ss: SystemStream, partitions: int) -> list[SystemStreamPartition]:
    return [SystemStreamPartition(ss.system, ss.stream, p) for p in range(partitions)]


class CheckingChooser(ForwardingChooser):
    """Wraps a real chooser and checks SystemConsumers' side of the contract: never more than one
    outstanding envelope per partition, offsets in order within a partition."""

    def __init__(self, wrapped: MessageChooser) -> None:
        super().__init__(wrapped)
        self.outstanding: set = set()
        self.last: dict = {}
        self.max_outstanding = 0
        self.threads: set = set()

    def update(self, envelope):
        self.threads.add(threading.get_ident())
        assert envelope.ssp not in self.outstanding, f"second outstanding envelope for {envelope.ssp}"
        self.outstanding.add(envelope.ssp)
        self.max_outstanding = max(self.max_outstanding, len(self.outstanding))
        if not envelope.is_end_of_stream:
            assert int(envelope.offset) > self.last.get(envelope.ssp, -1)
            self.last[envelope.ssp] = int(envelope.offset)
        self.inner.update(envelope)

    def choose(self):
        self.threads.add(threading.get_ident())
        envelope = self.inner.choose()
        if envelope is not None:
            self.outstanding.discard(envelope.ssp)
        return envelope


def drain(consumers: SystemConsumers, count: int, timeout_s: float = 20.0) -> list[IncomingMessageEnvelope]:
    out = []
    deadline = time.monotonic() + timeout_s
    while len(out) < count:
        assert time.monotonic() < deadline, f"only {len(out)} of {count} envelopes chosen in {timeout_s}s"
        envelope = consumers.choose(0.1)
        if envelope is not None:
            out.append(envelope)
    return out


# -- mechanics -------------------------------------------------------------------------------------


def test_every_message_is_chosen_once_in_partition_order_one_outstanding_per_partition(log_system):
    ss = log_system.create("events", 3)
    for p in range(3):
        log_system.produce("events", p, 700)
    chooser = CheckingChooser(RoundRobinChooser())
    sc = SystemConsumers(chooser, {"log": log_system.consumer()}, buffer_capacity_per_ssp=50)
    for ssp in ssps_of(ss, 3):
        sc.register(ssp, "0")
    sc.start()
    try:
        out = drain(sc, 2100)
        assert sc.choose(0.05) is None
    finally:
        sc.stop()
    assert {(e.ssp.partition, e.offset) for e in out} == {(p, str(i)) for p in range(3) for i in range(700)}
    assert chooser.threads == {threading.get_ident()}  # the chooser is only touched by the run loop
    assert sc.chosen_counts() == {ssp: 700 for ssp in ssps_of(ss, 3)}
    snap = sc.metrics_snapshot()
    assert snap["chosen"][str(ssps_of(ss, 3)[0])] == 700 and snap["buffered_total"] == 0
    assert sc.idle


class SizeRecordingConsumer(ForwardingConsumer):
    """A real consumer that records, at each poll, how many envelopes SystemConsumers already
    buffered for each partition it was asked to poll."""

    def __init__(self, inner) -> None:
        super().__init__(inner)
        self.sc: SystemConsumers | None = None
        self.buffered_at_poll: list[int] = []

    def poll(self, ssps, timeout_s):
        ssps = list(ssps)
        assert self.sc is not None
        self.buffered_at_poll += [self.sc.buffered(ssp) for ssp in ssps]
        return self.inner.poll(ssps, timeout_s)


def test_a_full_buffer_is_not_polled(mem_system):
    fast = mem_system.create("fast", 1)
    mem_system.produce("fast", 0, 20_000)
    consumer = SizeRecordingConsumer(mem_system.consumer())
    sc = SystemConsumers(
        RoundRobinChooser(), {mem_system.name: consumer}, buffer_capacity_per_ssp=100, poll_timeout_s=0.01
    )
    consumer.sc = sc
    (ssp,) = ssps_of(fast, 1)
    sc.register(ssp, "0")
    sc.start()
    try:
        peak = 0
        for _ in range(30):
            # the poller fills the buffer (it stops at the capacity), the run loop takes one
            wait_until(lambda: sc.buffered(ssp) >= 100, 30, "the poller to fill the buffer")
            peak = max(peak, sc.buffered(ssp))
            assert sc.choose(30.0) is not None
        # never polled while full; capacity plus at most one polled batch (the in-memory fetch size is 1000)
        assert max(consumer.buffered_at_poll) < 100
        assert peak <= 100 + 1000
        # and it keeps being refilled as the run loop drains it
        out = drain(sc, 5000)
        assert [int(e.offset) for e in out] == list(range(30, 5030))
    finally:
        sc.stop()


def test_end_of_stream_flows_through_the_chooser_and_stops_polling(tmp_path):
    config = Config(
        {
            "systems.log.log.path": str(tmp_path / "log"),
            "streams.b.samza.system": "log",
            "streams.b.samza.bounded": "true",
        }
    )
    system = System("log", LogSystemFactory(), config)
    ss = system.create("b", 2)
    system.produce("b", 0, 3)
    sc = SystemConsumers(RoundRobinChooser(), {"log": system.consumer()})
    for ssp in ssps_of(ss, 2):
        sc.register(ssp, "0")
    sc.start()
    try:
        out = drain(sc, 5)
        assert [e.is_end_of_stream for e in out].count(True) == 2
        assert all(sc.end_of_stream_chosen(ssp) for ssp in ssps_of(ss, 2))
        for thread in sc._threads:  # every partition ended: the poller is done
            thread.join(timeout=2)
            assert not thread.is_alive()
        system.produce("b", 0, 5, start=3)
        assert sc.choose(0.2) is None
    finally:
        sc.stop()
        system.close()


class FailingConsumer(ForwardingConsumer):
    """A real in-memory consumer whose system breaks after a few polls."""

    def __init__(self, inner, fail_after: int) -> None:
        super().__init__(inner)
        self.fail_after, self.polls = fail_after, 0

    def poll(self, ssps, timeout_s):
        self.polls += 1
        if self.polls > self.fail_after:
            raise ConnectionError("broker went away")
        return self.inner.poll(ssps, timeout_s)


def test_poller_exception_is_raised_from_choose_naming_the_system(mem_system):
    ss = mem_system.create("events", 1)
    sc = SystemConsumers(
        RoundRobinChooser(), {mem_system.name: FailingConsumer(mem_system.consumer(), 2)}, poll_timeout_s=0.01
    )
    sc.register(ssps_of(ss, 1)[0], "0")
    sc.start()
    try:
        with pytest.raises(SystemConsumersError, match=f"{mem_system.name}.*ConnectionError.*broker went away") as info:
            sc.choose(60.0)  # nothing ever arrives: it returns when the poller's error does
        assert info.value.system == mem_system.name
        assert isinstance(info.value.__cause__, ConnectionError)
    finally:
        sc.stop()


def test_register_for_unknown_system_names_it(mem_system):
    sc = SystemConsumers(RoundRobinChooser(), {mem_system.name: mem_system.consumer()})
    with pytest.raises(ValueError, match="no consumer for system 'kafka'"):
        sc.register(SystemStreamPartition("kafka", "t", 0), "0")


@pytest.mark.parametrize("which", ["mem", "log"])
def test_an_idle_job_does_not_spin(which, mem_system, log_system):
    system = mem_system if which == "mem" else log_system
    ss = system.create("quiet", 4)
    before = set(threading.enumerate())
    sc = SystemConsumers(RoundRobinChooser(), {system.name: system.consumer()})
    for ssp in ssps_of(ss, 4):
        sc.register(ssp, "0")
    sc.start()
    # the CPU of this thread (it calls choose) and of the threads the consumers started — not the
    # whole process's: a thread another test left behind must not count against SystemConsumers
    ours = [threading.current_thread(), *(t for t in threading.enumerate() if t not in before)]
    try:
        sc.choose(0.2)
        longest = 0.0  # this thread's CPU in one choose: a single long one is a pause, many short ones a spin
        with ThreadCpu(ours) as cpu:
            idle_until = time.monotonic() + 1.0
            while time.monotonic() < idle_until:
                started = time.thread_time()
                assert sc.choose(0.1) is None
                longest = max(longest, time.thread_time() - started)
        assert cpu.used < 0.15, (
            f"idle SystemConsumers used {cpu.used:.3f}s CPU in 1s (threads {cpu.names()}; "
            f"the most in one choose(0.1): {longest:.3f}s)"
        )
        # and a blocked choose returns the message that arrives while it waits
        threading.Timer(0.1, system.produce, args=("quiet", 2, 1)).start()
        envelope = sc.choose(30.0)
        assert envelope is not None and envelope.ssp.partition == 2
    finally:
        sc.stop()


# -- bootstrap through SystemConsumers ----------------------------------------------------------------

CODE_COUNTS = (40, 25, 0, 33)  # partition 2 is empty


def currency_job(system: System, offsets: dict[int, int] | None = None, codes_at_head: bool = False, capacity: int = 7):
    codes = system.create("currency_codes", 4)
    tx = system.create("transactions", 4)
    for p, n in enumerate(CODE_COUNTS):
        if n:
            system.produce("currency_codes", p, n)
        system.produce("transactions", p, 60)
    config = Config(
        {
            "task.inputs": f"{system.name}.currency_codes,{system.name}.transactions",
            f"systems.{system.name}.streams.currency_codes.samza.bootstrap": "true",
        }
    )
    chooser = DefaultChooser.from_config(config, system.metadata(codes, tx), {system.name: system.admin})
    sc = SystemConsumers(
        CheckingChooser(chooser),
        {system.name: system.consumer()},
        buffer_capacity_per_ssp=capacity,
        poll_timeout_s=0.01,
    )
    registered = {}
    for p in range(4):
        start = (offsets or {}).get(p, 0)
        if codes_at_head:
            start = CODE_COUNTS[p]
        registered[p] = start
        sc.register(SystemStreamPartition(system.name, "currency_codes", p), str(start))
        sc.register(SystemStreamPartition(system.name, "transactions", p), "0")
    return sc, chooser, registered


def codes_before_transactions(out, expected_codes: int) -> None:
    streams = [e.ssp.stream for e in out]
    first_tx = streams.index("transactions")
    assert streams[:first_tx].count("currency_codes") == expected_codes
    assert first_tx == expected_codes, "a transaction was chosen before every existing currency code"


def test_currency_codes_bootstrap_before_any_transaction_on_the_log(log_system):
    sc, chooser, _ = currency_job(log_system)
    sc.start()
    try:
        out = drain(sc, sum(CODE_COUNTS) + 240)
    finally:
        sc.stop()
    codes_before_transactions(out, sum(CODE_COUNTS))
    bootstrap = chooser.metrics_snapshot()["bootstrap"]["streams"]["log.currency_codes"]
    assert bootstrap["caught_up"] and bootstrap["time_to_head_s"] >= 0 and bootstrap["lagging_partitions"] == 0


def test_currency_codes_bootstrap_resumes_from_a_checkpoint_mid_stream(log_system):
    offsets = {0: 30, 1: 10, 3: 33}  # partition 3 checkpointed at its head
    sc, chooser, registered = currency_job(log_system, offsets)
    sc.start()
    remaining = sum(CODE_COUNTS[p] - registered[p] for p in range(4))
    assert remaining == 10 + 15
    try:
        out = drain(sc, remaining + 240)
    finally:
        sc.stop()
    codes_before_transactions(out, remaining)
    assert [int(e.offset) for e in out if e.ssp.stream == "currency_codes" and e.ssp.partition == 1] == list(
        range(10, 25)
    )


def test_currency_codes_already_at_head_hold_nothing_back(log_system):
    sc, chooser, _ = currency_job(log_system, codes_at_head=True)
    sc.start()
    try:
        first = sc.choose(5.0)
        assert first is not None and first.ssp.stream == "transactions"
        assert not chooser.bootstrapper.is_bootstrapping
        # codes arriving later are ordinary (top-priority) traffic
        log_system.produce("currency_codes", 0, 2, start=40)
        out = drain(sc, 241)
    finally:
        sc.stop()
    assert sum(1 for e in out if e.ssp.stream == "currency_codes") == 2


def test_currency_codes_bootstrap_on_the_in_memory_system(mem_system):
    sc, chooser, _ = currency_job(mem_system, capacity=3)
    sc.start()
    try:
        out = drain(sc, sum(CODE_COUNTS) + 240)
    finally:
        sc.stop()
    codes_before_transactions(out, sum(CODE_COUNTS))


# -- priorities ---------------------------------------------------------------------------------------


def priority_run(system: System, chooser: MessageChooser, bursts: int = 25, burst: int = 20):
    """A batch stream flooded with 200k messages; a producer thread writes bursts of real-time
    messages throughout (each burst committed at once). Returns the chosen stream sequence."""
    system.create("batch", 1)
    rt = system.create("realtime", 1)
    system.produce("batch", 0, 200_000)
    sc = SystemConsumers(chooser, {system.name: system.consumer()}, buffer_capacity_per_ssp=2000, poll_timeout_s=0.01)
    sc.register(SystemStreamPartition(system.name, "batch", 0), "0")
    sc.register(SystemStreamPartition(system.name, "realtime", 0), "0")
    rt_producer = system.factory.get_producer(system.name, system.config)
    rt_producer.register("rt")
    rt_producer.start()

    def produce_realtime():
        for b in range(bursts):
            time.sleep(0.01)
            for i in range(burst):
                rt_producer.send("rt", OutgoingMessageEnvelope(rt, f"rt-{b}-{i}".encode(), partition=0))
            rt_producer.flush("rt")

    sc.start()
    thread = threading.Thread(target=produce_realtime)
    thread.start()
    sequence = []
    try:
        deadline = time.monotonic() + 60
        rt_seen = 0
        while rt_seen < bursts * burst:
            assert time.monotonic() < deadline
            envelope = sc.choose(0.05)
            if envelope is None:
                continue
            is_rt = envelope.ssp.stream == "realtime"
            rt_seen += is_rt
            sequence.append((is_rt, int(envelope.offset)))
    finally:
        thread.join()
        sc.stop()
        rt_producer.stop()
    return sequence


def rt_runs(sequence) -> list[list[int]]:
    """Runs of consecutive real-time offsets in the chosen sequence."""
    runs: list[list[int]] = []
    previous_rt = False
    for is_rt, offset in sequence:
        if is_rt:
            if previous_rt:
                runs[-1].append(offset)
            else:
                runs.append([offset])
        previous_rt = is_rt
    return runs


def test_realtime_is_never_starved_by_a_flooded_batch_stream(log_system):
    config = Config(
        {
            "task.inputs": "log.realtime,log.batch",
            "systems.log.streams.realtime.samza.priority": "1",
            "systems.log.streams.batch.samza.priority": "0",
        }
    )
    chooser = DefaultChooser.from_config(
        config, {SystemStream("log", "realtime"): _empty(1), SystemStream("log", "batch"): _empty(1)}
    )
    sequence = priority_run(log_system, chooser)
    # Every burst was committed at once and polled at once: once its first message was available,
    # no batch message was chosen until the whole burst had been.
    runs = rt_runs(sequence)
    for run in runs:
        assert len(run) % 20 == 0, f"a real-time burst was interrupted by batch messages: {run}"
    assert sum(1 for is_rt, _ in sequence if not is_rt) > 0  # batch did run in between


def test_round_robin_contrast_interleaves_batch_into_realtime_bursts(log_system):
    sequence = priority_run(log_system, RoundRobinChooser())
    runs = rt_runs(sequence)
    # Alternation with the flooded batch stream: most real-time messages sit between batch ones
    # (a run can still occur when the batch buffer is momentarily empty between two polls).
    singles = sum(1 for run in runs if len(run) == 1)
    assert singles >= 0.5 * 25 * 20, f"only {singles} real-time messages were interleaved"


def _empty(partitions: int):
    from samza_dagster.system import SystemStreamMetadata, SystemStreamPartitionMetadata

    return SystemStreamMetadata("x", {p: SystemStreamPartitionMetadata("0", None, "0") for p in range(partitions)})


def test_restart_with_both_streams_behind_processes_realtime_backlog_first(log_system):
    """The restart guarantee of Samza's MessageChooser design (SAMZA-2): real-time priority 1, batch 0, both behind at restart."""
    log_system.create("realtime", 4)
    log_system.create("batch", 2)
    for p in range(4):
        log_system.produce("realtime", p, 300)
    for p in range(2):
        log_system.produce("batch", p, 3000)
    checkpoint = {0: 100, 1: 0, 2: 299, 3: 300}  # partition 3 is at head
    config = Config(
        {
            "task.inputs": "log.realtime,log.batch",
            "task.chooser.priorities.log.realtime": "1",
            "task.chooser.priorities.log.batch": "0",
        }
    )
    chooser = DefaultChooser.from_config(config, None, {"log": log_system.admin})
    # Small buffers and fetches make the real-time buffers run dry between polls all the time:
    # only the head rule keeps batch messages out.
    consumer = LogSystemFactory().get_consumer(
        "log", log_system.config.with_overrides({"systems.log.log.fetch.size": "3"})
    )
    sc = SystemConsumers(chooser, {"log": consumer}, buffer_capacity_per_ssp=2, poll_timeout_s=0.01)
    for p in range(4):
        sc.register(SystemStreamPartition("log", "realtime", p), str(checkpoint[p]))
    for p in range(2):
        sc.register(SystemStreamPartition("log", "batch", p), "1000")
    sc.start()
    backlog = sum(300 - checkpoint[p] for p in range(4))
    try:
        # new real-time traffic after the restart is ordinary traffic
        out = drain(sc, backlog + 500)
    finally:
        sc.stop()
    streams = [e.ssp.stream for e in out]
    assert streams[:backlog] == ["realtime"] * backlog
    assert "batch" in streams[backlog:]


# -- time alignment --------------------------------------------------------------------------------


def test_time_aligned_streams_are_chosen_in_event_time_order_within_the_skew(mem_system):
    mem_system.create("views", 1)
    mem_system.create("clicks", 1)
    mem_system.produce("views", 0, 3000, event_time=lambda i: 1_000_000 + 10 * i)
    mem_system.produce("clicks", 0, 1500, event_time=lambda i: 1_000_000 + 20 * i + 5)
    skew = 50
    sc = SystemConsumers(
        TimeAlignedChooser(max_skew_ms=skew, idle_timeout_ms=500),
        {mem_system.name: mem_system.consumer()},
        buffer_capacity_per_ssp=100,
    )
    sc.register(SystemStreamPartition(mem_system.name, "views", 0), "0")
    sc.register(SystemStreamPartition(mem_system.name, "clicks", 0), "0")
    sc.start()
    try:
        out = drain(sc, 4500)
    finally:
        sc.stop()
    high = 0
    for envelope in out:
        assert envelope.event_time >= high - skew, "chosen out of event-time order by more than the skew"
        high = max(high, envelope.event_time)
    # both streams progress together: never more than the skew apart in the first half
    streams = [e.ssp.stream for e in out[:2000]]
    assert 500 < streams.count("clicks") < 1000
