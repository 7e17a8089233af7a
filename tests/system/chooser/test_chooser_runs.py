"""Runs: a batching chooser hands the run loop several envelopes of one partition per decision
(SystemConsumers.choose_run), and nothing else changes — the same envelopes in the same order as
one update/choose at a time, the same bootstrap bookkeeping, the same checkpoints."""

from __future__ import annotations

import time
from collections import deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from samza_dagster.config import Config
from samza_dagster.container import ContainerStatus, SamzaContainer
from samza_dagster.system import (
    IncomingMessageEnvelope,
    SystemStream,
    SystemStreamMetadata,
    SystemStreamPartition,
    SystemStreamPartitionMetadata,
)
from samza_dagster.system.chooser import BatchingChooser, DefaultChooser, RoundRobinChooser
from samza_dagster.system.chooser.base import supports_runs
from samza_dagster.system.consumers import SystemConsumers
from samza_dagster.system.inmemory import InMemorySystemFactory
from tests.apps.harness import create_stream, job_model, produce, read_checkpoints
from tests.forwarding import ForwardingConsumer

# -- chooser level: runs and one-at-a-time agree ---------------------------------------------------

STREAMS = ("boot", "rt", "bulk")


@st.composite
def setups(draw):
    """Streams with partitions and message counts, which are bootstrap, priorities, a batch
    size and, per bootstrap partition, how far its start-time head is into its messages."""
    partitions = {s: draw(st.integers(1, 3)) for s in STREAMS}
    counts = {(s, p): draw(st.integers(0, 12)) for s in STREAMS for p in range(partitions[s])}
    bootstrap = draw(st.sets(st.sampled_from(STREAMS)))
    priorities = {s: draw(st.one_of(st.none(), st.integers(0, 2))) for s in STREAMS}
    batch_size = draw(st.integers(1, 6))
    heads = {sp: draw(st.integers(0, n - 1)) if n else None for sp, n in counts.items()}
    return partitions, counts, bootstrap, priorities, batch_size, heads


def _chooser(partitions, counts, bootstrap, priorities, batch_size, heads) -> DefaultChooser:
    entries = {"task.inputs": ",".join(f"s.{s}" for s in STREAMS), "task.consumer.batch.size": str(batch_size)}
    for s in bootstrap:
        entries[f"systems.s.streams.{s}.samza.bootstrap"] = "true"
    for s, p in priorities.items():
        if p is not None:
            entries[f"systems.s.streams.{s}.samza.priority"] = str(p)
    metadata = {}
    for s in STREAMS:
        parts = {}
        for p in range(partitions[s]):
            head = heads[(s, p)]
            parts[p] = SystemStreamPartitionMetadata(
                "0", None if head is None else str(head), "0" if head is None else str(head + 1)
            )
        metadata[SystemStream("s", s)] = SystemStreamMetadata(s, parts)
    chooser = DefaultChooser.from_config(Config(entries), metadata)
    for s in STREAMS:
        for p in range(partitions[s]):
            chooser.register(SystemStreamPartition("s", s, p), "0")
    chooser.start()
    return chooser


def _buffers(partitions, counts) -> dict[SystemStreamPartition, deque]:
    return {
        SystemStreamPartition("s", s, p): deque(
            IncomingMessageEnvelope(SystemStreamPartition("s", s, p), str(i), None, i) for i in range(counts[(s, p)])
        )
        for s in STREAMS
        for p in range(partitions[s])
    }


def _one_at_a_time(chooser, buffers) -> list[tuple[SystemStreamPartition, str]]:
    for buffer in buffers.values():
        if buffer:
            chooser.update(buffer.popleft())
    out = []
    while (env := chooser.choose()) is not None:
        out.append((env.ssp, env.offset))
        if buffers[env.ssp]:
            chooser.update(buffers[env.ssp].popleft())
    return out


def _in_runs(chooser, buffers) -> tuple[list[tuple[SystemStreamPartition, str]], int]:
    for buffer in buffers.values():
        if buffer:
            chooser.update(buffer.popleft())
    out, longest = [], 0
    runs = supports_runs(chooser)  # batch size 1: none
    while (env := chooser.choose()) is not None:
        buffer = buffers[env.ssp]
        run = [env]
        count = chooser.run_length(env, len(buffer)) if runs and buffer else 0
        if count:
            run += [buffer.popleft() for _ in range(count)]
            chooser.take_run(run[-1], count)
        longest = max(longest, len(run))
        out += [(e.ssp, e.offset) for e in run]
        if buffer:
            chooser.update(buffer.popleft())
    return out, longest


@settings(max_examples=300, deadline=None)
@given(setups())
def test_runs_choose_exactly_what_one_envelope_at_a_time_chooses(setup):
    partitions, counts = setup[0], setup[1]
    single = _chooser(*setup)
    batched = _chooser(*setup)
    expected = _one_at_a_time(single, _buffers(partitions, counts))
    got, _ = _in_runs(batched, _buffers(partitions, counts))
    assert got == expected
    assert batched.bootstrapper is None or (
        batched.bootstrapper.lagging_partitions() == single.bootstrapper.lagging_partitions()
        and batched.bootstrapper.is_bootstrapping == single.bootstrapper.is_bootstrapping
    )


def test_a_batching_default_chooser_gives_runs_of_its_batch_size_and_a_plain_one_none():
    setup = (
        {"boot": 2, "rt": 1, "bulk": 2},
        {("boot", 0): 9, ("boot", 1): 9, ("rt", 0): 9, ("bulk", 0): 9, ("bulk", 1): 9},
        {"boot"},
        {"boot": None, "rt": 1, "bulk": 0},
        4,
        {("boot", 0): 8, ("boot", 1): 8, ("rt", 0): 8, ("bulk", 0): 8, ("bulk", 1): 8},
    )
    chooser = _chooser(*setup)
    out, longest = _in_runs(chooser, _buffers(setup[0], setup[1]))
    assert longest == 4 and len(out) == 45
    # the bootstrap stream first (to its head), then real time, then the bulk stream
    assert [ssp.stream for ssp, _ in out] == ["boot"] * 18 + ["rt"] * 9 + ["bulk"] * 18
    assert not chooser.bootstrapper.is_bootstrapping
    assert not supports_runs(_chooser(*setup[:4], 1, setup[5]))  # batch size 1: no runs
    assert not supports_runs(RoundRobinChooser())


def test_batching_runs_stop_at_the_batch_size_and_at_what_is_available():
    ssp = SystemStreamPartition("s", "a", 0)
    chooser = BatchingChooser(RoundRobinChooser(), 5)
    chooser.update(IncomingMessageEnvelope(ssp, "0", None, 0))
    first = chooser.choose()
    assert chooser.run_length(first, 2) == 2  # only two are available
    assert chooser.run_length(first, 100) == 4  # the batch holds 5, one is chosen
    chooser.take_run(IncomingMessageEnvelope(ssp, "4", None, 4), 4)
    assert chooser.batches_completed == 1
    chooser.update(IncomingMessageEnvelope(ssp, "5", None, 5))
    assert chooser.choose().offset == "5"  # a new batch starts on the next pick


# -- SystemConsumers: runs on a real system ----------------------------------------------------------


@pytest.fixture
def mem():
    name = "runs"
    config = Config(
        {
            f"systems.{name}.samza.factory": "inmemory",
            "task.inputs": f"{name}.a,{name}.idle",
            "task.consumer.batch.size": "50",
        }
    )
    factory = InMemorySystemFactory()
    yield name, factory, config
    InMemorySystemFactory.reset(name)


def _fill(name, config, stream, partitions, per_partition):
    create_stream(config, name, stream, partitions)
    produce(config, name, stream, [(p, None, i) for i in range(per_partition) for p in range(partitions)])


def test_choose_run_hands_over_every_message_once_in_partition_order_in_runs_of_one_partition(mem):
    name, factory, config = mem
    _fill(name, config, "a", 3, 700)
    _fill(name, config, "idle", 1, 0)
    sc = SystemConsumers(
        DefaultChooser.from_config(config), {name: factory.get_consumer(name, config)}, buffer_capacity_per_ssp=100
    )
    ssps = [SystemStreamPartition(name, "a", p) for p in range(3)] + [SystemStreamPartition(name, "idle", 0)]
    for ssp in ssps:
        sc.register(ssp, "0")
    sc.start()
    runs = []
    try:
        assert sc.supports_runs
        deadline = time.monotonic() + 30
        while sum(map(len, runs)) < 2100:
            assert time.monotonic() < deadline, f"only {sum(map(len, runs))} of 2100 chosen"
            run = sc.choose_run(0.1)
            if run:
                runs.append(run)
        assert sc.choose_run(0.05) is None
    finally:
        sc.stop()
    assert all(len({e.ssp for e in run}) == 1 and len(run) <= 50 for run in runs)
    assert max(map(len, runs)) == 50
    per_partition = {}
    for run in runs:
        for e in run:
            per_partition.setdefault(e.ssp.partition, []).append(int(e.offset))
    assert per_partition == {p: list(range(700)) for p in range(3)}
    assert sc.chosen_counts()[ssps[0]] == 700 and sc.idle


def test_without_a_batching_chooser_choose_run_hands_over_one_envelope_at_a_time(mem):
    name, factory, config = mem
    _fill(name, config, "a", 1, 300)
    sc = SystemConsumers(RoundRobinChooser(), {name: factory.get_consumer(name, config)})
    sc.register(SystemStreamPartition(name, "a", 0), "0")
    sc.start()
    try:
        assert not sc.supports_runs
        runs = [sc.choose_run(5.0) for _ in range(300)]
    finally:
        sc.stop()
    assert [[int(e.offset) for e in run] for run in runs] == [[i] for i in range(300)]


class RecordingPolls(ForwardingConsumer):
    def __init__(self, inner) -> None:
        super().__init__(inner)
        self.polls: list[tuple[frozenset, float]] = []

    def poll(self, ssps, timeout_s):
        ssps = list(ssps)
        self.polls.append((frozenset(s.stream for s in ssps), timeout_s))
        return self.inner.poll(ssps, timeout_s)


def test_a_full_partition_does_not_leave_the_poller_waiting_on_an_idle_one(mem):
    """With a 2 s poll timeout, a poller that waited the whole timeout on the idle stream each
    time the busy partition's buffer was full would need ~20 s for these 1,000 messages."""
    name, factory, config = mem
    _fill(name, config, "a", 1, 1000)
    _fill(name, config, "idle", 1, 0)
    consumer = RecordingPolls(factory.get_consumer(name, config))
    sc = SystemConsumers(RoundRobinChooser(), {name: consumer}, buffer_capacity_per_ssp=100, poll_timeout_s=2.0)
    for stream in ("a", "idle"):
        sc.register(SystemStreamPartition(name, stream, 0), "0")
    sc.start()
    try:
        # the check is on the timeouts polled with (below); the deadline only ends a stuck run
        chosen, deadline = 0, time.monotonic() + 60
        while chosen < 1000:
            assert time.monotonic() < deadline, f"only {chosen} of 1000 chosen in 60 s: the poller is stuck"
            if sc.choose(0.1) is not None:
                chosen += 1
    finally:
        sc.stop()
    idle_only = [timeout for streams, timeout in consumer.polls if streams == {"idle"}]
    assert idle_only and max(idle_only) <= 0.001
    assert any(streams == {"a", "idle"} and timeout == 2.0 for streams, timeout in consumer.polls)


# -- the container: checkpoints with runs -------------------------------------------------------------


def test_a_shutdown_in_the_middle_of_a_run_checkpoints_only_what_was_processed(tmp_path):
    config = Config(
        {
            "job.name": "runs",
            "job.default.system": "log",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(tmp_path / "log"),
            "task.inputs": "log.input",
            "systems.log.streams.input.samza.bounded": "true",
            "task.consumer.batch.size": "50",
            "task.class": "tests.apps.tasks:ShutdownAfterTask",
            "test.shutdown.after": "70",
        }
    )
    create_stream(config, "log", "input", 1)
    produce(config, "log", "input", [(0, None, b"m%d" % i) for i in range(200)])
    summary = SamzaContainer("0", job_model(config)).run()
    assert summary.status is ContainerStatus.SHUTDOWN
    assert summary.messages_per_stream == {"log.input": 70}  # the 70th was mid-run (batch of 50)
    assert read_checkpoints(config)["Partition 0"].offsets[("log", "input", 0)] == "69"
    # the rest of that run was not lost: a restart reads from offset 70 to the end
    restarted = SamzaContainer("0", job_model(config.with_overrides({"test.shutdown.after": "1000"}))).run()
    assert restarted.status is ContainerStatus.COMPLETED
    assert restarted.messages_per_stream == {"log.input": 130}
