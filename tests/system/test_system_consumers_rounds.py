"""Rounds (chooser/base.py, system/consumers.py): with a plain round-robin chooser,
``SystemConsumers.choose_rounds`` hands over many picks at once, in exactly the order the
one-at-a-time ``choose`` calls return them, and leaves the chooser and the buffers as those calls
would leave them."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from samza_dagster.config import Config
from samza_dagster.model import IncomingMessageEnvelope, SystemStreamPartition
from samza_dagster.system.chooser import DefaultChooser, RoundRobinChooser
from samza_dagster.system.consumers import SystemConsumers


class PreloadedConsumer:
    """Polled on the caller's thread; hands over everything of a partition at its first poll, its
    end of stream included — so nothing arrives later and the one-at-a-time order is fixed."""

    poll_on_caller_thread = True

    def __init__(self, lengths: dict[int, int]) -> None:
        self.lengths = lengths
        self.polled: set[SystemStreamPartition] = set()

    def register(self, ssp, offset):
        pass

    def start(self):
        pass

    def stop(self):
        pass

    def poll(self, ssps, timeout_s):
        result = {}
        for ssp in ssps:
            if ssp in self.polled:
                continue
            self.polled.add(ssp)
            n = self.lengths[ssp.partition]
            result[ssp] = [IncomingMessageEnvelope(ssp, str(i), None, b"x", 1) for i in range(n)] + [
                IncomingMessageEnvelope.end_of_stream(ssp)
            ]
        return result


def _consumers(lengths: dict[int, int], chooser=None) -> SystemConsumers:
    sc = SystemConsumers(
        chooser if chooser is not None else RoundRobinChooser(),
        {"s": PreloadedConsumer(lengths)},
        buffer_capacity_per_ssp=10_000,
    )
    for p in lengths:
        sc.register(SystemStreamPartition("s", "in", p), "0")
    sc.start()
    return sc


def _one_at_a_time(lengths: dict[int, int]) -> list[tuple[int, str]]:
    sc = _consumers(lengths)
    picks = []
    while (envelope := sc.choose(0.0)) is not None:
        picks.append((envelope.ssp.partition, envelope.offset))
    sc.stop()
    return picks


@settings(max_examples=150, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 40), min_size=1, max_size=7),
    sizes=st.lists(st.integers(1, 60), min_size=1, max_size=30),
)
def test_rounds_pick_exactly_what_one_at_a_time_choosing_picks(lengths, sizes):
    by_partition = dict(enumerate(lengths))
    expected = _one_at_a_time(by_partition)
    sc = _consumers(by_partition)
    picks: list[tuple[int, str]] = []
    call = 0
    while True:
        # steer how many the next call aims for (twice the last list's size: the rate is high)
        sc._round_size = max(1, sizes[call % len(sizes)] // 2)
        sc._rounds_at = time.monotonic()
        call += 1
        batch = sc.choose_rounds(0.0)
        if batch is None:
            break
        width = sc.round_width
        assert 1 <= width <= len(batch)
        if len(batch) > 1:
            assert not any(e.is_end_of_stream for e in batch), "an end of stream inside rounds"
            assert len({e.ssp for e in batch[:width]}) == width
            assert all(batch[i].ssp == batch[i - width].ssp for i in range(width, len(batch)))
        picks.extend((e.ssp.partition, e.offset) for e in batch)
    assert picks == expected
    assert sum(sc.chosen_counts().values()) == len(expected)
    assert all(sc.end_of_stream_chosen(ssp) for ssp in sc.chosen_counts())
    assert sc.idle
    sc.stop()


def test_rounds_take_about_a_millisecond_of_envelopes_at_the_rate_of_the_last_ones():
    sc = _consumers({p: 3000 for p in range(4)})
    sizes = []
    for _ in range(12):  # handed over as fast as possible: doubles each time, up to the cap
        sizes.append(len(sc.choose_rounds(0.0) or []))
    assert sizes[-1] > 1000 and all(b <= 2 * max(a, 1) for a, b in zip(sizes, sizes[1:], strict=False))
    time.sleep(0.01)  # a slow task: 10 ms for the last list
    slow = len(sc.choose_rounds(0.0) or [])
    assert slow <= max(1, sizes[-1] // 10)
    sc.stop()


def test_only_a_plain_round_robin_chooser_offers_rounds():
    class Shuffling(RoundRobinChooser):
        def choose(self):
            return super().choose()

    assert RoundRobinChooser().fifo is not None and Shuffling().fifo is None
    assert _consumers({0: 1}).supports_rounds
    assert not _consumers({0: 1}, chooser=Shuffling()).supports_rounds
    # the default chooser of a job with no priorities, bootstrap streams or batching is one
    config = Config({"task.inputs": "s.in"})
    assert DefaultChooser.from_config(config).fifo is not None
    batching = Config({"task.inputs": "s.in", "task.consumer.batch.size": "10"})
    assert DefaultChooser.from_config(batching).fifo is None
