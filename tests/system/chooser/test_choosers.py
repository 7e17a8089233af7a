"""Unit tests of the MessageChooser family, with envelopes built by hand."""

from __future__ import annotations

import logging
import random

import pytest

from samza_dagster.config import Config, ConfigError
from samza_dagster.system import (
    IncomingMessageEnvelope,
    SystemStream,
    SystemStreamMetadata,
    SystemStreamPartition,
    SystemStreamPartitionMetadata,
)
from samza_dagster.system.chooser import (
    BatchingChooser,
    BootstrappingChooser,
    DefaultChooser,
    MessageChooser,
    MessageChooserFactory,
    RoundRobinChooser,
    TieredPriorityChooser,
    TimeAlignedChooser,
)
from samza_dagster.system.chooser.bootstrapping import BootstrappingChooser as _BC  # noqa: F401
from support.waiting import wait_until

RT = SystemStream("s", "realtime")
BATCH = SystemStream("s", "batch")
CODES = SystemStream("s", "currency_codes")
TX = SystemStream("s", "transactions")


def ssp(stream: SystemStream, partition: int = 0) -> SystemStreamPartition:
    return SystemStreamPartition(stream.system, stream.stream, partition)


def env(stream_or_ssp, offset: int | str = 0, event_time: int | None = None, partition: int = 0):
    p = stream_or_ssp if isinstance(stream_or_ssp, SystemStreamPartition) else ssp(stream_or_ssp, partition)
    return IncomingMessageEnvelope(p, str(offset), None, f"{p.stream}-{p.partition}-{offset}", 0, event_time)


class Harness:
    """Plays SystemConsumers' part: per-SSP queues, one outstanding envelope per SSP, the next
    one handed over right after a choose. Asserts the chooser never returns an envelope it was
    not given, and that order within an SSP is preserved."""

    def __init__(self, chooser: MessageChooser, queues: dict[SystemStreamPartition, list[IncomingMessageEnvelope]]):
        self.chooser = chooser
        self.queues = {k: list(v) for k, v in queues.items()}
        self.outstanding: dict[SystemStreamPartition, IncomingMessageEnvelope] = {}

    def start(self, offsets: dict[SystemStreamPartition, str] | None = None) -> None:
        for p, q in self.queues.items():
            self.chooser.register(p, (offsets or {}).get(p) or (q[0].offset if q else "0"))
        self.chooser.start()
        for p in self.queues:
            self._feed(p)

    def _feed(self, p: SystemStreamPartition) -> None:
        q = self.queues[p]
        if q and p not in self.outstanding:
            e = q.pop(0)
            self.outstanding[p] = e
            self.chooser.update(e)

    def add(self, e: IncomingMessageEnvelope) -> None:
        self.queues.setdefault(e.ssp, []).append(e)
        self._feed(e.ssp)

    def choose(self) -> IncomingMessageEnvelope | None:
        e = self.chooser.choose()
        if e is not None:
            assert self.outstanding.pop(e.ssp) is e, "chooser returned an envelope it did not hold"
            self._feed(e.ssp)
        return e

    def drain(self) -> list[IncomingMessageEnvelope]:
        out = []
        while (e := self.choose()) is not None:
            out.append(e)
        return out


def streams_of(envelopes) -> list[str]:
    return [e.ssp.stream for e in envelopes]


def assert_in_partition_order(envelopes) -> None:
    last: dict[SystemStreamPartition, int] = {}
    for e in envelopes:
        if e.is_end_of_stream:
            continue
        assert int(e.offset) > last.get(e.ssp, -1), f"{e} out of order within its partition"
        last[e.ssp] = int(e.offset)


# -- RoundRobin ----------------------------------------------------------------------------------


def test_round_robin_alternates_fairly_between_partitions():
    a, b, c = ssp(RT, 0), ssp(RT, 1), ssp(BATCH, 0)
    h = Harness(
        RoundRobinChooser(),
        {a: [env(a, i) for i in range(5)], b: [env(b, i) for i in range(5)], c: [env(c, i) for i in range(2)]},
    )
    h.start()
    out = h.drain()
    assert [(e.ssp.partition, e.ssp.stream) for e in out[:6]] == [(0, "realtime"), (1, "realtime"), (0, "batch")] * 2
    assert len(out) == 12
    assert_in_partition_order(out)


def test_round_robin_returns_none_when_empty():
    assert RoundRobinChooser().choose() is None


# -- TieredPriority ------------------------------------------------------------------------------


def test_tiered_priority_always_prefers_higher_tier():
    chooser = TieredPriorityChooser({RT: 1, BATCH: 0}, {1: RoundRobinChooser(), 0: RoundRobinChooser()})
    h = Harness(chooser, {ssp(BATCH): [env(BATCH, i) for i in range(3)], ssp(RT): [env(RT, i) for i in range(3)]})
    h.start()
    assert streams_of(h.drain()) == ["realtime"] * 3 + ["batch"] * 3


def test_tiered_priority_new_high_priority_envelope_preempts_lower_tier():
    chooser = TieredPriorityChooser({RT: 1, BATCH: 0}, {1: RoundRobinChooser(), 0: RoundRobinChooser()})
    h = Harness(chooser, {ssp(BATCH): [env(BATCH, i) for i in range(5)], ssp(RT): []})
    h.start()
    assert h.choose().ssp.stream == "batch"
    h.add(env(RT, 0))
    assert h.choose().ssp.stream == "realtime"
    assert h.choose().ssp.stream == "batch"


def test_tiered_priority_stream_without_priority_goes_to_default_or_raises():
    other = SystemStream("s", "other")
    default = RoundRobinChooser()
    chooser = TieredPriorityChooser({RT: 5}, {5: RoundRobinChooser()}, default=default)
    chooser.update(env(other))
    chooser.update(env(RT))
    assert chooser.choose().ssp.stream == "realtime"
    assert chooser.choose().ssp.stream == "other"
    strict = TieredPriorityChooser({RT: 5}, {5: RoundRobinChooser()})
    with pytest.raises(ValueError, match=r"s\.other.*no priority"):
        strict.update(env(other))


def test_tiered_priority_rejects_priority_without_chooser():
    with pytest.raises(ValueError, match="no chooser for priority 3.*s.realtime"):
        TieredPriorityChooser({RT: 3}, {1: RoundRobinChooser()})


# -- Batching ------------------------------------------------------------------------------------


@pytest.mark.parametrize("batch_size", [1, 2, 3, 5])
def test_batching_sticks_to_a_partition_exactly_up_to_batch_size(batch_size):
    a, b = ssp(RT, 0), ssp(RT, 1)
    n = batch_size * 4
    h = Harness(
        BatchingChooser(RoundRobinChooser(), batch_size),
        {a: [env(a, i) for i in range(n)], b: [env(b, i) for i in range(n)]},
    )
    h.start()
    out = h.drain()
    runs = []
    for e in out:
        if runs and runs[-1][0] == e.ssp:
            runs[-1][1] += 1
        else:
            runs.append([e.ssp, 1])
    # Every run (while both partitions have data) is exactly batch_size long.
    assert [count for _, count in runs] == [batch_size] * 8, runs
    assert len(out) == 2 * n
    assert_in_partition_order(out)


def test_batching_ends_batch_early_when_preferred_partition_has_nothing():
    a, b = ssp(RT, 0), ssp(RT, 1)
    h = Harness(BatchingChooser(RoundRobinChooser(), 10), {a: [env(a, 0)], b: [env(b, i) for i in range(3)]})
    h.start()
    out = h.drain()
    assert [e.ssp.partition for e in out] == [0, 1, 1, 1]


def test_batching_rejects_bad_batch_size():
    with pytest.raises(ValueError, match="batch_size"):
        BatchingChooser(RoundRobinChooser(), 0)


# -- TimeAligned ---------------------------------------------------------------------------------


def test_time_aligned_chooses_smallest_event_time_first():
    views, clicks = SystemStream("s", "views"), SystemStream("s", "clicks")
    rng = random.Random(7)
    vt = sorted(rng.sample(range(10_000), 200))
    ct = sorted(rng.sample(range(10_000), 200))
    h = Harness(
        TimeAlignedChooser(),
        {
            ssp(views): [env(views, i, t) for i, t in enumerate(vt)],
            ssp(clicks): [env(clicks, i, t) for i, t in enumerate(ct)],
        },
    )
    h.start()
    out = h.drain()
    times = [e.event_time for e in out]
    assert times == sorted(times)
    assert len(out) == 400
    assert_in_partition_order(out)


def test_time_aligned_skew_allows_bounded_disorder_only():
    views, clicks = SystemStream("s", "views"), SystemStream("s", "clicks")
    vt = list(range(0, 2000, 10))  # 0, 10, 20, ...
    ct = list(range(5, 2000, 10))  # 5, 15, 25, ...
    h = Harness(
        TimeAlignedChooser(max_skew_ms=30),
        {
            ssp(views): [env(views, i, t) for i, t in enumerate(vt)],
            ssp(clicks): [env(clicks, i, t) for i, t in enumerate(ct)],
        },
    )
    h.start()
    out = h.drain()
    high = -1
    for e in out:
        assert e.event_time >= high - 30
        high = max(high, e.event_time)
    # ...and the skew is used: runs longer than one envelope happen.
    assert any(a.ssp == b.ssp for a, b in zip(out, out[1:], strict=False))


def test_time_aligned_catches_up_a_stream_far_behind_first():
    old, new = SystemStream("s", "replay"), SystemStream("s", "live")
    h = Harness(
        TimeAlignedChooser(),
        {ssp(old): [env(old, i, 1000 + i) for i in range(50)], ssp(new): [env(new, i, 10**9 + i) for i in range(50)]},
    )
    h.start()
    assert streams_of(h.drain()) == ["replay"] * 50 + ["live"] * 50


def test_time_aligned_late_envelope_of_idle_stream_goes_first():
    a, b = SystemStream("s", "a"), SystemStream("s", "b")
    h = Harness(TimeAlignedChooser(), {ssp(a): [env(a, i, 100 + i) for i in range(10)], ssp(b): []})
    h.start()
    assert h.choose().event_time == 100  # b idle: not waited for
    h.add(env(b, 0, 50))
    assert h.choose().ssp.stream == "b"


def test_time_aligned_envelopes_without_event_time_take_stream_time():
    a, b = SystemStream("s", "a"), SystemStream("s", "b")
    h = Harness(
        TimeAlignedChooser(),
        {ssp(a): [env(a, i, 100 * (i + 1)) for i in range(5)], ssp(b): [env(b, i, None) for i in range(5)]},
    )
    h.start()
    out = h.drain()
    assert len(out) == 10 and sorted(streams_of(out)) == ["a"] * 5 + ["b"] * 5
    # b never starves: it is interleaved, not pushed behind all of a.
    assert streams_of(out)[:4].count("b") >= 1


def test_time_aligned_with_wrapped_alternates_untimed_and_timed():
    a, b = SystemStream("s", "a"), SystemStream("s", "b")
    h = Harness(
        TimeAlignedChooser(RoundRobinChooser()),
        {ssp(a): [env(a, i, i) for i in range(4)], ssp(b): [env(b, i, None) for i in range(4)]},
    )
    h.start()
    out = streams_of(h.drain())
    assert sorted(out) == ["a"] * 4 + ["b"] * 4
    assert all(x != y for x, y in zip(out, out[1:], strict=False))


# -- Bootstrapping -------------------------------------------------------------------------------


def meta(*lengths: int) -> SystemStreamMetadata:
    parts = {}
    for p, n in enumerate(lengths):
        parts[p] = SystemStreamPartitionMetadata("0", str(n - 1) if n else None, str(n))
    return SystemStreamMetadata("x", parts)


def currency_setup(lengths=(5, 3, 0, 4), tx_per_partition=5):
    """SAMZA-2's example: currency_codes (4 partitions) bootstraps before transactions."""
    tiers = {1: RoundRobinChooser(), 0: RoundRobinChooser()}
    inner = TieredPriorityChooser({CODES: 1, TX: 0}, tiers)
    chooser = BootstrappingChooser(inner, {CODES: meta(*lengths)})
    queues = {}
    for p, n in enumerate(lengths):
        queues[ssp(CODES, p)] = [env(CODES, i, partition=p) for i in range(n)]
        queues[ssp(TX, p)] = [env(TX, i, partition=p) for i in range(tx_per_partition)]
    return chooser, queues


def test_bootstrap_chooses_no_transaction_before_every_existing_currency_code():
    chooser, queues = currency_setup()
    h = Harness(chooser, queues)
    h.start()
    out = h.drain()
    codes = [e for e in out if e.ssp.stream == "currency_codes"]
    assert len(codes) == 12
    first_tx = streams_of(out).index("transactions")
    assert first_tx == 12
    assert not chooser.is_bootstrapping


def test_bootstrap_waits_while_a_lagging_stream_has_no_envelope_in_the_chooser():
    # Partition 1 of the codes is lagging but its envelopes arrive late (not polled yet).
    chooser, queues = currency_setup(lengths=(1, 2))
    late = queues[ssp(CODES, 1)]
    queues[ssp(CODES, 1)] = []
    h = Harness(chooser, queues)
    h.start()
    assert h.choose().ssp == ssp(CODES, 0)  # the caught-up partition's last message
    assert h.choose() is None  # partition 1 lags and has nothing in the chooser
    h.add(late[0])
    assert h.choose().ssp == ssp(CODES, 1)
    assert h.choose() is None
    h.add(late[1])
    assert h.choose().ssp == ssp(CODES, 1)
    assert h.choose().ssp.stream == "transactions"


def test_bootstrap_from_a_checkpoint_in_the_middle_of_the_stream():
    chooser, queues = currency_setup(lengths=(6, 6))
    queues[ssp(CODES, 0)] = queues[ssp(CODES, 0)][3:]  # resume at offset 3
    h = Harness(chooser, queues)
    h.start({ssp(CODES, 0): "3"})
    out = h.drain()
    assert streams_of(out)[:9] == ["currency_codes"] * 9
    assert chooser.metrics_snapshot()["streams"]["s.currency_codes"]["caught_up"]


def test_bootstrap_already_at_head_does_not_hold_anything():
    chooser, queues = currency_setup(lengths=(3, 3))
    queues[ssp(CODES, 0)] = []
    queues[ssp(CODES, 1)] = []
    h = Harness(chooser, queues)
    h.start({ssp(CODES, 0): "3", ssp(CODES, 1): "3"})
    assert not chooser.is_bootstrapping
    assert len(h.drain()) == 10


def test_bootstrap_unregistered_and_empty_partitions_never_lag():
    tiers = {1: RoundRobinChooser(), 0: RoundRobinChooser()}
    chooser = BootstrappingChooser(TieredPriorityChooser({CODES: 1, TX: 0}, tiers), {CODES: meta(0, 5)})
    chooser.register(ssp(CODES, 0), "0")  # empty; partition 1 belongs to another task
    chooser.register(ssp(TX, 0), "0")
    chooser.start()
    assert not chooser.is_bootstrapping
    chooser.update(env(TX, 0))
    assert chooser.choose().ssp.stream == "transactions"


def test_bootstrap_end_of_stream_envelope_counts_as_caught_up():
    tiers = {1: RoundRobinChooser(), 0: RoundRobinChooser()}
    chooser = BootstrappingChooser(TieredPriorityChooser({CODES: 1, TX: 0}, tiers), {CODES: meta(10)})
    chooser.register(ssp(CODES, 0), "0")
    chooser.register(ssp(TX, 0), "0")
    chooser.start()
    chooser.update(env(TX, 0))
    assert chooser.choose() is None
    chooser.update(IncomingMessageEnvelope.end_of_stream(ssp(CODES, 0)))
    assert chooser.choose().is_end_of_stream
    assert chooser.choose().ssp.stream == "transactions"


def test_bootstrap_metrics_and_single_info_log(caplog):
    chooser, queues = currency_setup(lengths=(4, 4))
    h = Harness(chooser, queues)
    with caplog.at_level(logging.INFO, logger="samza_dagster.system.chooser.bootstrapping"):
        h.start()
        h.choose()
        snap = chooser.metrics_snapshot()["streams"]["s.currency_codes"]
        assert snap["lagging_partitions"] == 2 and snap["messages_behind"] == 7 and snap["time_to_head_s"] is None
        h.drain()
    snap = chooser.metrics_snapshot()["streams"]["s.currency_codes"]
    assert snap["caught_up"] and snap["time_to_head_s"] is not None and snap["messages_behind"] == 0
    caught = [r for r in caplog.records if "caught up" in r.getMessage()]
    assert len(caught) == 1 and "s.currency_codes" in caught[0].getMessage()


def test_bootstrap_compares_offsets_with_the_system_admin():
    class Admin:
        calls = 0

        def offset_comparator(self, a: str, b: str) -> int:
            Admin.calls += 1
            x, y = int(a, 16), int(b, 16)
            return (x > y) - (x < y)

    parts = {0: SystemStreamPartitionMetadata("0", "a", "b")}  # hex offsets: newest 10
    tiers = {1: RoundRobinChooser(), 0: RoundRobinChooser()}
    chooser = BootstrappingChooser(
        TieredPriorityChooser({CODES: 1, TX: 0}, tiers), {CODES: SystemStreamMetadata("c", parts)}, {"s": Admin()}
    )
    h = Harness(chooser, {ssp(CODES): [env(CODES, format(i, "x")) for i in range(11)], ssp(TX): [env(TX, 0)]})
    h.start()
    out = streams_of(h.drain())
    assert out == ["currency_codes"] * 11 + ["transactions"] and Admin.calls > 0


# -- DefaultChooser.from_config ------------------------------------------------------------------


def base_config(**extra) -> Config:
    return Config({"job.name": "j", "task.inputs": "s.realtime,s.batch", **extra})


def test_default_chooser_is_round_robin_when_nothing_is_configured():
    chooser = DefaultChooser.from_config(base_config(), {})
    assert isinstance(chooser.inner, RoundRobinChooser)
    assert chooser.bootstrapper is None


def test_default_chooser_priorities_from_stream_and_legacy_keys():
    cfg = base_config(**{"systems.s.streams.realtime.samza.priority": "1", "task.chooser.priorities.s.batch": "0"})
    chooser = DefaultChooser.from_config(cfg, {RT: meta(0), BATCH: meta(0)})
    assert chooser.priorities == {RT: 1, BATCH: 0}
    assert isinstance(chooser.inner, BootstrappingChooser)  # realtime is held to its head
    assert chooser.held_to_head == frozenset({RT})
    h = Harness(chooser, {ssp(BATCH): [env(BATCH, i) for i in range(3)], ssp(RT): [env(RT, i) for i in range(3)]})
    h.start()
    assert streams_of(h.drain()) == ["realtime"] * 3 + ["batch"] * 3


def test_default_chooser_stream_id_priority_and_legacy_priorities():
    cfg = Config(
        {
            "task.inputs": "s.realtime,s.batch",
            "streams.rt.samza.system": "s",
            "streams.rt.samza.physical.name": "realtime",
            "streams.rt.samza.priority": "7",
            "task.chooser.priorities.s.batch": "3",
        }
    )
    chooser = DefaultChooser.from_config(cfg, {RT: meta(0), BATCH: meta(0)})
    assert chooser.priorities == {RT: 7, BATCH: 3}


def test_default_chooser_bootstrap_stream_gets_top_priority_and_bootstraps():
    cfg = Config(
        {
            "task.inputs": "s.currency_codes,s.transactions,s.realtime",
            "systems.s.streams.currency_codes.samza.bootstrap": "true",
            "systems.s.streams.realtime.samza.priority": "5",
        }
    )
    chooser = DefaultChooser.from_config(cfg, {CODES: meta(2), TX: meta(2), RT: meta(2)})
    assert chooser.priorities == {CODES: 6, TX: 0, RT: 5}
    h = Harness(
        chooser,
        {
            ssp(TX): [env(TX, i) for i in range(2)],
            ssp(RT): [env(RT, i) for i in range(2)],
            ssp(CODES): [env(CODES, i) for i in range(2)],
        },
    )
    h.start()
    assert streams_of(h.drain()) == ["currency_codes"] * 2 + ["realtime"] * 2 + ["transactions"] * 2


def test_default_chooser_batches_within_a_tier():
    cfg = base_config(**{"task.consumer.batch.size": "3"})
    a, b = ssp(RT, 0), ssp(BATCH, 0)
    chooser = DefaultChooser.from_config(cfg, {})
    h = Harness(chooser, {a: [env(a, i) for i in range(6)], b: [env(b, i) for i in range(6)]})
    h.start()
    assert streams_of(h.drain()) == (["realtime"] * 3 + ["batch"] * 3) * 2


def test_default_chooser_batches_a_bootstrap_stream_unless_the_batch_size_is_set():
    """A deliberate difference from Samza: with task.consumer.batch.size unset, the bootstrap
    stream's tier batches (two partitions of it alternate in runs, not message by message);
    the other tiers do not. Setting the key to 1 restores Samza's one-at-a-time everywhere."""
    base = {
        "task.inputs": "s.currency_codes,s.transactions",
        "systems.s.streams.currency_codes.samza.bootstrap": "true",
    }
    c0, c1 = ssp(CODES, 0), ssp(CODES, 1)

    def order(cfg: Config) -> list[int]:
        chooser = DefaultChooser.from_config(cfg, {CODES: meta(300, 300), TX: meta(0)})
        h = Harness(chooser, {c0: [env(c0, i) for i in range(300)], c1: [env(c1, i) for i in range(300)]})
        h.start()
        return [e.ssp.partition for e in h.drain()], chooser

    default_order, default = order(Config(base))
    assert default.batch_sizes == {1: 250, 0: 1}
    assert default_order[:250] == [default_order[0]] * 250  # a run of one partition
    samza_order, samza = order(Config({**base, "task.consumer.batch.size": "1"}))
    assert samza.batch_sizes == {1: 1, 0: 1}
    assert samza_order[:4] in ([0, 1, 0, 1], [1, 0, 1, 0])  # round-robin, message by message


def test_default_chooser_fetches_missing_metadata_in_one_call_per_system():
    calls = []

    class Admin:
        def get_system_stream_metadata(self, names):
            calls.append(sorted(names))
            return {n: meta(3, 3) for n in names}

        def offset_comparator(self, a, b):
            return (int(a) > int(b)) - (int(a) < int(b))

    cfg = Config(
        {
            "task.inputs": "s.currency_codes,s.transactions,s.realtime",
            "systems.s.streams.currency_codes.samza.bootstrap": "true",
            "systems.s.streams.realtime.samza.priority": "2",
        }
    )
    DefaultChooser.from_config(cfg, None, {"s": Admin()})
    assert calls == [["currency_codes", "realtime"]]


def test_default_chooser_missing_metadata_without_admin_names_the_stream():
    cfg = Config(
        {"task.inputs": "s.currency_codes,s.transactions", "systems.s.streams.currency_codes.samza.bootstrap": "true"}
    )
    with pytest.raises(ValueError, match=r"s\.currency_codes"):
        DefaultChooser.from_config(cfg, {})


@pytest.mark.parametrize("key", ["systems.s.streams.nope.samza.bootstrap", "streams.nope.samza.bootstrap"])
def test_bootstrap_flag_on_a_stream_that_is_not_an_input_names_the_key(key):
    cfg = base_config(**{key: "true", "streams.nope.samza.system": "s"})
    with pytest.raises(ConfigError, match=r"nope.*not an input") as info:
        DefaultChooser.from_config(cfg, {})
    assert info.value.key == key


def test_bad_priority_names_the_key():
    cfg = base_config(**{"systems.s.streams.batch.samza.priority": "high"})
    with pytest.raises(ConfigError) as info:
        DefaultChooser.from_config(cfg, {})
    assert info.value.key == "systems.s.streams.batch.samza.priority"


def test_bad_batch_size_names_the_key():
    with pytest.raises(ConfigError) as info:
        DefaultChooser.from_config(base_config(**{"task.consumer.batch.size": "x"}), {})
    assert info.value.key == "task.consumer.batch.size"


# -- task.chooser.class --------------------------------------------------------------------------


class RecordingFactory(MessageChooserFactory):
    made: list = []

    def get_chooser(self, config, metrics=None):
        chooser = RoundRobinChooser()
        RecordingFactory.made.append(chooser)
        return chooser


class NotAFactory:
    pass


class ReturnsJunkFactory(MessageChooserFactory):
    def get_chooser(self, config, metrics=None):
        return object()


def test_chooser_class_factory_is_used_for_the_default_tier():
    RecordingFactory.made.clear()
    chooser = DefaultChooser.from_config(base_config(**{"task.chooser.class": f"{__name__}:RecordingFactory"}), {})
    assert chooser.inner is RecordingFactory.made[0]


@pytest.mark.parametrize(
    "value, match",
    [
        ("no_such_module_xyz:Factory", "cannot import"),
        (f"{__name__}:Missing", "has no attribute"),
        (f"{__name__}:NotAFactory", "not a MessageChooserFactory"),
        (f"{__name__}:ReturnsJunkFactory", "not a MessageChooser"),
    ],
)
def test_chooser_class_errors_name_the_key(value, match):
    with pytest.raises(ConfigError, match=match) as info:
        DefaultChooser.from_config(base_config(**{"task.chooser.class": value}), {})
    assert info.value.key == "task.chooser.class"


def test_builtin_factories_load_from_config():
    cfg = base_config(
        **{
            "task.chooser.class": "samza_dagster.system.chooser:TimeAlignedChooserFactory",
            "task.chooser.max.skew.ms": "5",
        }
    )
    chooser = DefaultChooser.from_config(cfg, {})
    assert isinstance(chooser.inner, TimeAlignedChooser)


# -- property: every chooser keeps in-partition order and loses nothing ---------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: RoundRobinChooser(),
        lambda: BatchingChooser(RoundRobinChooser(), 4),
        lambda: TieredPriorityChooser(
            {RT: 2, BATCH: 1}, {2: RoundRobinChooser(), 1: RoundRobinChooser()}, default=RoundRobinChooser()
        ),
        lambda: TimeAlignedChooser(max_skew_ms=3),
        lambda: BootstrappingChooser(
            TieredPriorityChooser({RT: 2}, {2: RoundRobinChooser()}, RoundRobinChooser()), {RT: meta(30, 30)}
        ),
    ],
)
def test_choosers_keep_partition_order_and_lose_nothing(make):
    rng = random.Random(3)
    streams = [RT, BATCH, SystemStream("s", "other")]
    queues = {ssp(s, p): [env(ssp(s, p), i, rng.randrange(100)) for i in range(30)] for s in streams for p in (0, 1)}
    h = Harness(make(), queues)
    h.start()
    out = []
    while True:
        # interleave chooses with nothing new, as a run loop does
        e = h.choose()
        if e is None:
            break
        out.append(e)
    assert len(out) == 180
    assert_in_partition_order(out)


def test_time_aligned_waits_briefly_for_an_absent_partition_then_treats_it_as_idle():
    a, b = SystemStream("s", "a"), SystemStream("s", "b")
    chooser = TimeAlignedChooser(max_skew_ms=10, idle_timeout_ms=50)
    h = Harness(chooser, {ssp(a): [env(a, i, 100 + 100 * i) for i in range(5)], ssp(b): [env(b, 0, 120)]})
    h.start()
    assert h.choose().event_time == 100
    assert h.choose().event_time == 120  # b's only envelope; b is now absent, last seen at 120
    assert h.choose() is None  # a's next is at 200 > 120 + 10: b may deliver older
    h.add(env(b, 1, 150))  # ...and it does
    assert h.choose().event_time == 150
    assert h.choose() is None
    # b stays quiet: once the idle timeout has passed the chooser stops waiting for it
    first = wait_until(h.choose, what="b to be treated as idle", timeout_s=10, poll_s=0.005)
    assert [first.event_time] + [e.event_time for e in h.drain()] == [200, 300, 400, 500]


def test_time_aligned_does_not_wait_for_an_absent_partition_within_the_skew():
    a, b = SystemStream("s", "a"), SystemStream("s", "b")
    chooser = TimeAlignedChooser(max_skew_ms=100, idle_timeout_ms=10_000)
    h = Harness(chooser, {ssp(a): [env(a, i, 100 + 10 * i) for i in range(5)], ssp(b): [env(b, 0, 100)]})
    h.start()
    assert len(h.drain()) == 6
