"""SystemConsumers: per-partition buffers between the system consumers and the chooser.

As in Samza: every system has one poller thread that calls
``consumer.poll`` for the partitions whose buffer has room, and appends what it gets to
per-partition bounded buffers. The chooser holds at most one envelope per partition: when a
partition's envelope is chosen, the chooser is immediately updated with that partition's next
buffered envelope, so a partition with buffered data always has its next envelope in the chooser
(which the bootstrapping rule relies on).

Polling on the run loop's thread. A consumer whose ``poll`` with timeout 0 is a cheap local read
that never waits on a network (``poll_on_caller_thread = True``: the embedded log) gets no poller
thread: SystemConsumers polls it from ``choose`` itself — when the chooser has nothing, and at
least every ``_INLINE_POLL_INTERVAL_S`` while it has — as Samza's SystemConsumers polls on the
run loop's thread. Measured (B1, B5 in docs/benchmarks.md): a poller thread reading SQLite
competes with the run loop for the GIL on every row step, and that costs more than it overlaps.

Threads and locks. The chooser is touched only by the thread calling ``choose`` (the run loop):
poller threads never call it. A poller hands data over with deque appends (atomic in CPython)
and one ``arrivals`` entry per partition per polled batch, then takes the condition's lock once
per batch to wake a waiting ``choose``. ``choose`` takes no lock when it has something to return;
it waits on the condition (no spinning) only when the chooser has nothing.

Backpressure. A partition whose buffer holds its capacity of envelopes is not polled until the
run loop drains it below half, so a fast stream cannot exhaust memory, and a slow or idle stream
only costs its own poll timeout. (One poll may overshoot the capacity by one batch: the consumer
decides its batch size; a consumer with ``limit_fetch`` is told the room a top-up at low water
has, so it does not.) A
partition whose end-of-stream envelope has been polled is never polled again; the end-of-stream
envelope itself flows through the chooser like any other.

The capacity bounds the container, not each partition, as Samza does
(``systems.<s>.samza.fetch.threshold`` and ``fetch.threshold.bytes``: :class:`FetchThreshold`):
each system's budget is divided evenly among its partitions, so a container reading 1,024
partitions holds what one reading 4 does. A partition's capacity is

    max(floor, min(per-partition capacity, messages budget / partitions,
                   bytes budget / partitions / mean envelope size))

where the per-partition capacity is ``buffer_capacity_per_ssp`` (default 2,000 for a system with
a poller thread, 500 for one polled on the run loop's thread), the floor (``MIN_BUFFER_PER_SSP``)
keeps every partition readable in batches however many there are — past budget / floor
partitions the floor wins and the budget is exceeded — and the mean envelope size (payload plus
``ENVELOPE_OVERHEAD_BYTES``) is re-measured from every polled batch, on the polling side, so the
run loop pays nothing per envelope for it. Until the first batches show the size, a consumer with
``limit_fetch`` reads at most the floor per partition, then as many as the bytes share has room for.

Runs. When the chooser offers runs (a batching chooser, ``task.consumer.batch.size`` > 1; see
chooser/base.py), :meth:`SystemConsumers.choose_run` hands the run loop the chosen envelope plus
the next buffered envelopes of its partition that the chooser would pick anyway, with one
chooser decision for all of them instead of an ``update``/``choose`` pair each.

Rounds. When the chooser is a plain round-robin one, its picks are the order of its updates (a
FIFO it exposes: chooser/base.py), so :meth:`SystemConsumers.choose_rounds` hands the run loop
many picks at once — the FIFO's envelopes, then each partition's next buffered ones, round after
round — with a few C-level list operations instead of a ``choose`` call, a chooser call and a
buffer update per envelope (B1's no-op job spent a fifth of its run loop's time there: issue 54's
section of docs/benchmarks.md). How many: about a millisecond's worth at the rate the run loop has
been taking them, and at most twice as many as last time, so a run-loop-thread system is still
topped up and looked at for new partitions about every millisecond, as the one-at-a-time path
does, and a slow task gets one envelope at a time (a wide FIFO aims longer: _ROUNDS_TARGET_S).
Rounds never hold an end-of-stream envelope: a partition's last envelope stays in the FIFO.

Errors. An exception in a poller thread is kept and re-raised from ``choose`` in the caller's
thread as :class:`SystemConsumersError` naming the system (with the original as its cause); one
from a poll on the run loop's thread is raised the same way at once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from itertools import chain, islice, repeat
from operator import attrgetter, call
from typing import Any

from samza_dagster.errors import SamzaError
from samza_dagster.model import END_OF_STREAM_OFFSET, IncomingMessageEnvelope, SystemStreamPartition
from samza_dagster.system.chooser.base import MessageChooser, check_chooser, supports_runs
from samza_dagster.system.errors import ConsumerSetupError, SystemClientError
from samza_dagster.system.protocols import LimitsFetch, ReportsMetrics, SystemConsumer

log = logging.getLogger(__name__)

#: The longest poll while some partition of the system waits, full, for the run loop to drain it.
_POLL_TIMEOUT_WHILE_FULL_S = 0.001
#: How often partitions of a system polled on the run loop's thread are polled while the chooser
#: still has envelopes (new data on an idle partition waits at most about this long).
_INLINE_POLL_INTERVAL_S = 0.001
#: ``choose`` calls between two looks at the clock for that poll: the clock is not read per envelope.
_CHOOSES_PER_CLOCK_CHECK = 16
#: What one ``choose_rounds`` aims to hand over: about this long's worth of envelopes at the rate
#: the run loop took the previous ones (the inline poll's interval, so polls keep their cadence) —
#: longer for a wide FIFO, up to _ROUNDS_TARGET_MAX_S: whole rounds cost a few Python steps per
#: partition per call (the partitions' states, the run loop's bindings and offsets), and at 1,024
#: partitions a millisecond's worth was ~3 rounds, that cost a fifth of the engine's time (B13:
#: 1.52 CPU s at 1 ms, 1.26 at 4 ms)
_ROUNDS_TARGET_S = _INLINE_POLL_INTERVAL_S
_ROUNDS_TARGET_PER_PARTITION_S = 0.000004
_ROUNDS_TARGET_MAX_S = 0.004
#: The most envelopes one ``choose_rounds`` hands over (at least _ROUNDS_MIN_WHOLE whole rounds).
_ROUNDS_MAX = 4096
_ROUNDS_MIN_WHOLE = 8
#: Longest sleep between polls of run-loop-thread systems while nothing at all is available.
_INLINE_IDLE_BACKOFF_MAX_S = 0.05
#: Default envelopes buffered per partition. A poller thread's buffer absorbs the time it takes
#: to win the GIL back and the network's jitter. A partition polled on the run loop's thread is
#: topped up within a millisecond, so its buffer only needs to cover that, and a small one keeps
#: an envelope in the CPU's cache between the poll that builds it and the process call that
#: reads it (B1's gain with 500: docs/benchmarks.md, "Measurements behind defaults in the code").
_THREADED_BUFFER_CAPACITY = 2000
_INLINE_BUFFER_CAPACITY = 500


_SIZE = attrgetter("size")
#: about how many envelopes of a polled batch estimate its mean size (:meth:`_SspState.fit_bytes`:
#: every ``len // FIT_SAMPLE``-th, so between this many and twice as many; all of a smaller batch)
FIT_SAMPLE = 32

#: Least envelopes a partition may buffer whatever the budget divided among partitions leaves it.
MIN_BUFFER_PER_SSP = 16
#: What an envelope costs in memory beyond its key and message bytes (the envelope, its offset
#: string, the bytes objects' headers), for the bytes budget.
ENVELOPE_OVERHEAD_BYTES = 200


@dataclass(frozen=True, slots=True)
class FetchThreshold:
    """One system's budget of buffered envelopes for the whole container (Samza's
    ``systems.<s>.samza.fetch.threshold`` and ``systems.<s>.samza.fetch.threshold.bytes``);
    None: unbounded by that measure."""

    messages: int | None = None
    bytes: int | None = None

    def __post_init__(self) -> None:
        for name in ("messages", "bytes"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConsumerSetupError(f"fetch threshold {name} must be at least 1, got {value}")


def _polls_on_caller_thread(consumer: object) -> bool:
    return getattr(consumer, "poll_on_caller_thread", False) is True


class SystemConsumersError(SamzaError, RuntimeError):
    """A system consumer failed while polling (on its poller thread or the run loop's); names the system."""

    def __init__(self, system: str, cause: BaseException) -> None:
        super().__init__(f"consumer of system {system!r} failed while polling: {type(cause).__name__}: {cause}")
        self.system = system


class _SspState:
    """Everything SystemConsumers keeps per partition: one dict hit per chosen envelope."""

    __slots__ = (
        "ssp",
        "buffer",
        "outstanding",
        "chosen",
        "eos_polled",
        "eos_chosen",
        "room",
        "capacity",
        "low_water",
        "max_capacity",
        "bytes_share",
    )

    def __init__(self, ssp: SystemStreamPartition, room: Callable[[], Any], capacity: int) -> None:
        self.ssp = ssp
        self.buffer: deque[IncomingMessageEnvelope] = deque()
        #: True while the chooser holds an envelope of this partition (run-loop thread only).
        self.outstanding = False
        self.chosen = 0
        self.eos_polled = False
        self.eos_chosen = False
        #: called when the run loop drains the buffer to ``low_water``: wakes the system's
        #: poller thread, or marks the partition for the next top-up poll on the run loop's thread
        self.room = room
        #: the capacity by count (per partition, and the messages budget's share); the bytes
        #: budget's share (None: none) lowers ``capacity`` below it as envelope sizes are seen
        self.max_capacity = capacity
        self.bytes_share: int | None = None
        self.capacity = capacity
        self.low_water = capacity // 2

    def bound(self, capacity: int) -> None:
        self.capacity = capacity
        self.low_water = capacity // 2

    def fit_bytes(self, envelopes: list[IncomingMessageEnvelope]) -> None:
        """Lower (or raise back) the capacity so that this partition's buffer holds about its
        share of the bytes budget, at the mean size of the batch just polled — estimated from
        about :data:`FIT_SAMPLE` envelopes spread evenly over it (summing every size cost B5 ~2 %
        of its time, 24 ns an envelope; the budget is approximate anyway)."""
        assert self.bytes_share is not None
        step = len(envelopes) // FIT_SAMPLE
        sample = envelopes[::step] if step > 1 else envelopes
        size = ENVELOPE_OVERHEAD_BYTES + sum(map(_SIZE, sample)) // len(sample)  # summed in C
        capacity = max(MIN_BUFFER_PER_SSP, min(self.max_capacity, self.bytes_share // size))
        if capacity != self.capacity:
            self.bound(capacity)


class SystemConsumers:
    """The buffers between a container's system consumers and its chooser (module docstring):
    ``register`` each input partition with its first offset, ``start``, then ``choose(timeout)``
    (or ``choose_run``) from the run loop's thread only; ``stop`` ends the pollers. A poller's
    failure is raised from ``choose`` as :class:`SystemConsumersError`, naming the system."""

    def __init__(
        self,
        chooser: MessageChooser,
        consumers: Mapping[str, SystemConsumer],
        *,
        buffer_capacity_per_ssp: int | None = None,
        poll_timeout_s: float = 0.05,
        metrics: dict[str, Any] | None = None,
        fetch_thresholds: Mapping[str, FetchThreshold] | None = None,
    ) -> None:
        check_chooser(chooser, "SystemConsumers' chooser")
        if buffer_capacity_per_ssp is not None and buffer_capacity_per_ssp < 1:
            raise ConsumerSetupError(f"buffer_capacity_per_ssp must be at least 1, got {buffer_capacity_per_ssp}")
        if poll_timeout_s <= 0:
            raise ConsumerSetupError(f"poll_timeout_s must be positive, got {poll_timeout_s}")
        self._chooser = chooser
        self._chooser_update = chooser.update
        self._chooser_choose = chooser.choose
        self._run_length = chooser.run_length if supports_runs(chooser) else None
        self._take_run = chooser.take_run if supports_runs(chooser) else None
        fifo = getattr(chooser, "fifo", None)
        #: the chooser's picks in order, when it offers rounds (chooser/base.py)
        self._fifo: deque[IncomingMessageEnvelope] | None = fifo if isinstance(fifo, deque) else None
        #: how many the last ``choose_rounds`` handed over, and when it returned
        self._round_size = 1
        self._rounds_at = 0.0
        #: picks to make before the next look for whole rounds, after one found none (``_rounds``)
        self._rounds_credit = 0
        #: the period of the last ``choose_rounds``' list: its envelope ``i`` is of the same
        #: partition as envelope ``i - round_width`` (its first ``round_width`` are distinct)
        self.round_width = 1
        self._consumers = dict(consumers)
        self._capacity = buffer_capacity_per_ssp
        self._thresholds = dict(fetch_thresholds or {})
        #: system → [its consumer's limit_fetch, the limit set] where a bytes budget moves it
        self._fetch_limits: dict[str, list[Any]] = {}
        self._poll_timeout_s = poll_timeout_s
        self._states: dict[SystemStreamPartition, _SspState] = {}
        self._room = {system: threading.Event() for system in self._consumers}
        #: Per system polled on the run loop's thread: its partitions drained to their low water
        #: (or not yet read), in an insertion-ordered dict used as a set. A top-up poll reads
        #: those, never scanning every partition.
        self._refill: dict[str, dict[_SspState, None]] = {system: {} for system in self._consumers}
        #: Partitions that got data in a polled batch, for the run loop to pick up.
        self._arrivals: deque[SystemStreamPartition] = deque()
        self._cond = threading.Condition(threading.Lock())
        self._error: tuple[str, BaseException] | None = None
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        #: Systems polled on the run loop's thread: system → (consumer, its partitions' states).
        self._inline: dict[str, tuple[SystemConsumer, list[_SspState]]] = {}
        self._next_inline_poll = 0.0
        #: a top-up poll of every partition at its low water ran since the last pick (``_pick``)
        self._topped = False
        self._countdown = _CHOOSES_PER_CLOCK_CHECK
        self._started = False
        self._stopped = False
        #: time the run loop waited in choose for a pick (seconds) and how often: Samza's block-ns
        self.block_s = 0.0
        self.blocks = 0
        if metrics is not None:
            metrics["system-consumers"] = self.metrics_snapshot

    # -- lifecycle -----------------------------------------------------------------------------
    def register(self, ssp: SystemStreamPartition, offset: str) -> None:
        """Register ``ssp`` (read from ``offset``, the first message to read) with its system's
        consumer and with the chooser."""
        if self._started:
            raise SystemClientError(f"cannot register {ssp} after SystemConsumers started")
        consumer = self._consumers.get(ssp.system)
        if consumer is None:
            known = ", ".join(sorted(self._consumers)) or "none"
            raise ConsumerSetupError(f"no consumer for system {ssp.system!r} of {ssp} (consumers: {known})")
        if ssp in self._states:
            raise ConsumerSetupError(f"{ssp} is registered twice")
        consumer.register(ssp, offset)
        self._chooser.register(ssp, offset)
        capacity = self._capacity
        if capacity is None:
            capacity = _INLINE_BUFFER_CAPACITY if _polls_on_caller_thread(consumer) else _THREADED_BUFFER_CAPACITY
        if _polls_on_caller_thread(consumer):
            refill = self._refill[ssp.system]
            st = _SspState(ssp, lambda: None, capacity)
            st.room = partial(refill.__setitem__, st, None)
            refill[st] = None
        else:
            st = _SspState(ssp, self._room[ssp.system].set, capacity)
        self._states[ssp] = st

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        for consumer in self._consumers.values():
            consumer.start()
        self._chooser.start()
        for system, consumer in self._consumers.items():
            states = [st for st in self._states.values() if st.ssp.system == system]
            if not states:
                continue
            self._divide(system, consumer, states)
            if _polls_on_caller_thread(consumer):
                self._inline[system] = (consumer, states)
                continue
            thread = threading.Thread(
                target=self._poll_loop, args=(system, consumer, states), name=f"samza-poller-{system}", daemon=True
            )
            self._threads.append(thread)
            thread.start()

    def _divide(self, system: str, consumer: SystemConsumer, states: list[_SspState]) -> None:
        """Divide the system's fetch threshold among its partitions (see the module docstring)."""
        threshold = self._thresholds.get(system)
        if threshold is None:
            return
        n = len(states)
        for st in states:
            capacity = st.capacity
            if threshold.messages is not None:
                capacity = max(MIN_BUFFER_PER_SSP, min(capacity, threshold.messages // n))
            st.max_capacity = capacity
            st.bound(capacity)
            if threshold.bytes is not None:
                st.bytes_share = threshold.bytes // n
        if isinstance(consumer, LimitsFetch):  # a top-up at low water then fills a buffer to its capacity, not past it
            room = min(st.capacity - st.low_water for st in states)
            if threshold.bytes is not None:
                # sizes are unknown until the first batches: read few, then as many as fit
                room = min(room, MIN_BUFFER_PER_SSP)
            consumer.limit_fetch(room)
            self._fetch_limits[system] = [consumer.limit_fetch, room]

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._stopping.set()
        for event in self._room.values():
            event.set()
        for thread in self._threads:
            thread.join(timeout=max(5.0, self._poll_timeout_s * 10))
            if thread.is_alive():
                log.warning("poller thread %s did not stop in time", thread.name)
        for consumer in self._consumers.values():
            consumer.stop()
        self._chooser.stop()
        with self._cond:
            self._cond.notify_all()

    # -- the run loop's side ---------------------------------------------------------------------
    def choose(self, timeout_s: float = 0.0) -> IncomingMessageEnvelope | None:
        """The chooser's pick, waiting up to ``timeout_s`` when it has none."""
        # Fast path: nothing arrived, no error, no poll due, the chooser has a pick.
        self._countdown -= 1
        if self._arrivals or self._error is not None or self._countdown <= 0:
            envelope = None
        else:
            envelope = self._chooser_choose()
        if envelope is None:
            envelope = self._pick(timeout_s)
            if envelope is None:
                return None
        # Give the chooser the partition's next envelope. Inlined (not shared with choose_run):
        # this runs once per envelope and a call costs as much as its body.
        st = self._states[envelope.ssp]
        st.chosen += 1
        buffer = st.buffer
        if buffer:
            self._chooser_update(buffer.popleft())
            if len(buffer) == st.low_water:
                st.room()  # the poller may be waiting for room
        else:
            st.outstanding = False
            if envelope.offset == END_OF_STREAM_OFFSET:
                st.eos_chosen = True
        return envelope

    @property
    def supports_runs(self) -> bool:
        """True when the chooser offers runs (chooser/base.py), so :meth:`choose_run` can hand
        over more than one envelope at a time."""
        return self._run_length is not None

    def choose_run(self, timeout_s: float = 0.0) -> list[IncomingMessageEnvelope] | None:
        """The chooser's pick followed by the envelopes of the same partition the chooser says it
        would pick next (a run, in offset order), waiting up to ``timeout_s`` when it has none.
        Needs a chooser that offers runs; otherwise the list holds one envelope."""
        envelope = self._pick(timeout_s)
        if envelope is None:
            return None
        st = self._states[envelope.ssp]
        buffer = st.buffer
        before = len(buffer)
        run = [envelope]
        if before and self._run_length is not None:
            count = self._run_length(envelope, before)
            if count:
                if count == before:  # the whole buffer (the common case): copied in C, not popped one by one
                    run.extend(buffer)
                    buffer.clear()
                else:  # popped in C too (a Python loop here cost B5 ~0.07 µs an envelope)
                    run.extend(map(call, repeat(buffer.popleft, count)))
                self._take_run(run[-1], count)  # type: ignore[misc]
        st.chosen += len(run)
        if buffer:
            self._chooser_update(buffer.popleft())
        else:
            st.outstanding = False
            if run[-1].offset == END_OF_STREAM_OFFSET:
                st.eos_chosen = True
        if before > st.low_water >= len(buffer):
            st.room()  # the poller may be waiting for room
        return run

    @property
    def supports_rounds(self) -> bool:
        """True when the chooser offers rounds (chooser/base.py): :meth:`choose_rounds` hands
        over many picks at a time."""
        return self._fifo is not None

    def choose_rounds(self, timeout_s: float = 0.0) -> list[IncomingMessageEnvelope] | None:
        """The chooser's next picks, as many as the one-at-a-time ``choose`` calls would return
        with nothing arriving in between (module docstring, "Rounds"): envelope ``i`` is of the
        same partition as envelope ``i - round_width``, and none is an end of stream unless the
        list holds one envelope (the one-at-a-time ``choose``, which it falls back to whenever a
        round cannot be formed). Waits up to ``timeout_s`` when there is nothing."""
        fifo = self._fifo
        if fifo is None or self._error is not None:
            return self._one(timeout_s)
        now = time.monotonic()
        # about a target time's worth of envelopes at the rate the last ones were processed (the
        # time since the last call, over how many it handed over), and at most twice as many as then
        width = len(fifo)
        target = min(_ROUNDS_TARGET_MAX_S, max(_ROUNDS_TARGET_S, width * _ROUNDS_TARGET_PER_PARTITION_S))
        last = self._round_size
        per_envelope = (now - self._rounds_at) / last
        limit = min(max(_ROUNDS_MAX, _ROUNDS_MIN_WHOLE * width), 2 * last)
        if per_envelope * limit > target:
            limit = max(1, int(target / per_envelope))
        if self._inline and now >= self._next_inline_poll:
            self._topped = self._poll_inline(0.0, topping_up=True)
        if self._arrivals:
            self._drain_arrivals()
        batch = self._rounds(fifo, limit) if limit > 1 else None
        if batch is None:
            return self._one(timeout_s)
        self._topped = False
        self._round_size = len(batch)
        self._rounds_credit -= len(batch)
        self._rounds_at = time.monotonic()
        return batch

    def _one(self, timeout_s: float) -> list[IncomingMessageEnvelope] | None:
        envelope = self.choose(timeout_s)
        self._topped = False  # (when choose did not get as far as _pick)
        self.round_width = 1
        self._round_size = 1
        self._rounds_credit -= 1
        self._rounds_at = time.monotonic()
        return None if envelope is None else [envelope]

    def _rounds(self, fifo: deque[IncomingMessageEnvelope], limit: int) -> list[IncomingMessageEnvelope] | None:
        """Up to ``limit`` picks from the FIFO and the buffers of its partitions, the FIFO left as
        the one-at-a-time picks would leave it; None when not even two can be taken this way.

        Whole rounds need every partition of the FIFO to have its next envelopes buffered, which
        takes a look at all of them; when that look finds one with nothing buffered, the next
        ``len(fifo)`` picks are made without another (``_rounds_credit``), so a wide job whose
        partitions' buffers run dry one by one does not pay that look per envelope."""
        n = len(fifo)
        if n == 0:
            return None
        states = self._states
        if limit >= n and self._rounds_credit <= 0:
            sts = [states[envelope.ssp] for envelope in fifo]
            lengths = [len(st.buffer) for st in sts]
            rounds = min(lengths)  # every partition has this many next envelopes buffered
            if rounds > 0:
                return self._whole_rounds(fifo, sts, lengths, rounds, limit)
            self._rounds_credit = n
        # part of one round: the FIFO's first envelopes up to the first partition with nothing
        # buffered behind its own, each partition's next envelope then put behind them
        sts = []
        for envelope in islice(fifo, limit):
            st = states[envelope.ssp]
            if not st.buffer:
                break
            sts.append(st)
        m = len(sts)
        if m < 2:
            return None
        popleft = fifo.popleft
        batch = [popleft() for _ in range(m)]
        append = fifo.append
        for st in sts:
            buffer = st.buffer
            append(buffer.popleft())
            st.chosen += 1
            if len(buffer) == st.low_water:
                st.room()
        self.round_width = m
        return batch

    def _whole_rounds(
        self,
        fifo: deque[IncomingMessageEnvelope],
        sts: list[_SspState],
        lengths: list[int],
        rounds: int,
        limit: int,
    ) -> list[IncomingMessageEnvelope]:
        """Whole rounds (and part of one more) of the FIFO's ``n`` partitions, each with at least
        ``rounds`` envelopes buffered behind its own."""
        n = len(fifo)
        k, m = divmod(min(limit, rounds * n), n)  # k whole rounds and m picks of one more
        # each partition's column: its envelope in the FIFO, then what is taken from its buffer
        # (k + 1 for the first m partitions, k for the others; popped in C)
        columns = [
            [envelope, *map(call, repeat(st.buffer.popleft, k + 1 if x < m else k))]
            for x, (envelope, st) in enumerate(zip(fifo, sts, strict=True))
        ]
        # k + 1 whole rounds: the first m columns hold one more, added after
        picks = list(chain.from_iterable(zip(*columns, strict=False)))
        picks.extend(column[k + 1] for column in columns[:m])
        size = k * n + m
        fifo.clear()
        fifo.extend(picks[size:])  # what the one-at-a-time picks leave in the chooser: n envelopes
        del picks[size:]
        for x, st in enumerate(sts):
            taken = k + 1 if x < m else k
            st.chosen += taken
            before = lengths[x]
            if before > st.low_water >= before - taken:
                st.room()  # the poller may be waiting for room
        self.round_width = n
        return picks

    def _drain_arrivals(self) -> None:
        arrivals = self._arrivals
        states = self._states
        update = self._chooser_update
        while arrivals:
            st = states[arrivals.popleft()]
            if not st.outstanding and st.buffer:
                st.outstanding = True
                update(st.buffer.popleft())

    def _pick(self, timeout_s: float) -> IncomingMessageEnvelope | None:
        """The chooser's pick after surfacing a poller's error and handing it what arrived;
        waiting up to ``timeout_s`` (no spinning) when it has none. The caller does the
        per-envelope bookkeeping of the pick."""
        topped = self._topped  # choose_rounds' top-up just ran
        self._topped = False
        if self._inline:
            self._countdown = _CHOOSES_PER_CLOCK_CHECK
            if time.monotonic() >= self._next_inline_poll:
                topped = self._poll_inline(0.0, topping_up=True) or topped
        envelope = self._choose_now()
        if envelope is not None:
            return envelope
        # the chooser ran dry: fetch now, whatever the interval — unless a top-up just did. (A
        # partition with something buffered has its envelope in the chooser, so when it is dry
        # every partition with room is at its low water, and a top-up polls exactly those: at a
        # trickle the second poll was one more for every message that came.)
        if self._inline and not topped:
            self._poll_inline(0.0)
            envelope = self._choose_now()
            if envelope is not None:
                return envelope
        if timeout_s <= 0:
            return None
        # Only here, when the chooser has nothing, does choosing wait: the time is Samza's
        # block-ns, measured on the idle path so the per-envelope path pays nothing for it.
        started = time.perf_counter()
        try:
            return self._block(timeout_s)
        finally:
            self.block_s += time.perf_counter() - started
            self.blocks += 1

    def _block(self, timeout_s: float) -> IncomingMessageEnvelope | None:
        """Wait up to ``timeout_s`` for the chooser to have a pick."""
        if self._inline:
            return self._wait_inline(timeout_s)
        deadline = time.monotonic() + timeout_s
        cond = self._cond
        while True:
            with cond:
                if not self._arrivals and self._error is None and not self._stopped:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return None
                    cond.wait(remaining)
            envelope = self._choose_now()
            if envelope is not None:
                return envelope
            if self._stopped or time.monotonic() >= deadline:
                return None

    def _choose_now(self) -> IncomingMessageEnvelope | None:
        """Surface a poller's error, hand the chooser what arrived, and ask it."""
        if self._error is not None:
            self._raise_error()
        if self._arrivals:
            self._drain_arrivals()
        return self._chooser_choose()

    def _poll_inline(self, timeout_s: float, *, topping_up: bool = False) -> bool:
        """Poll every system polled on this thread, for its partitions with room (waiting up to
        ``timeout_s`` in each); when ``topping_up`` (the periodic poll while the chooser has
        envelopes) only those drained to half their capacity, so that a busy partition is read
        in whole fetches rather than a few rows per poll. False when no partition was polled."""
        self._next_inline_poll = time.monotonic() + _INLINE_POLL_INTERVAL_S
        polled_any = False
        for system, (consumer, states) in self._inline.items():
            refill = self._refill[system]
            if topping_up:
                if not refill:
                    continue
                wanted = list(refill)
            else:
                wanted = [st for st in states if not st.eos_polled and len(st.buffer) < st.capacity]
                if not wanted:
                    continue
            polled_any = True
            try:
                polled = consumer.poll([st.ssp for st in wanted], timeout_s)
            except Exception as exc:
                raise SystemConsumersError(system, exc) from exc
            if polled:
                self._deliver(self._states, polled)
            for st in wanted:  # still at or below low water (little or nothing came): next top-up too
                if st.eos_polled or len(st.buffer) > st.low_water:
                    refill.pop(st, None)
                else:
                    refill[st] = None
        return polled_any

    def _wait_inline(self, timeout_s: float) -> IncomingMessageEnvelope | None:
        """Nothing is available and some system is polled on this thread: poll until the chooser
        picks something or ``timeout_s`` passes. With no poller threads the consumer's own poll
        waits (the log watches its files for commits); otherwise poll without waiting and sleep
        on the pollers' condition in between, backing off while nothing comes."""
        deadline = time.monotonic() + timeout_s
        backoff = _INLINE_POLL_INTERVAL_S
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self._stopped:
                return None
            if self._threads or len(self._inline) > 1:
                with self._cond:
                    if not self._arrivals and self._error is None:
                        self._cond.wait(min(backoff, remaining))
                backoff = min(backoff * 2, _INLINE_IDLE_BACKOFF_MAX_S)
                self._poll_inline(0.0)
            elif not self._poll_inline(remaining):
                with self._cond:  # nothing can come from this thread's polls: wait to be stopped
                    if not self._arrivals and self._error is None and not self._stopped:
                        self._cond.wait(remaining)
            envelope = self._choose_now()
            if envelope is not None:
                return envelope

    def _deliver(
        self, by_ssp: Mapping[SystemStreamPartition, _SspState], polled: Mapping[SystemStreamPartition, list]
    ) -> bool:
        """Append what a poll returned to the partitions' buffers; True when anything came."""
        arrivals = self._arrivals
        got = False
        for ssp, envelopes in polled.items():
            if not envelopes:
                continue
            st = by_ssp.get(ssp)
            if st is None:
                raise SystemClientError(f"consumer returned envelopes for {ssp}, which was not polled")
            if st.eos_polled:
                raise SystemClientError(f"consumer returned envelopes for {ssp} after its end-of-stream")
            if st.bytes_share is not None:
                st.fit_bytes(envelopes)
                limit = self._fetch_limits.get(ssp.system)
                if limit is not None and limit[1] != st.capacity - st.low_water:
                    limit[1] = st.capacity - st.low_water
                    limit[0](limit[1])
            st.buffer.extend(envelopes)
            if envelopes[-1].is_end_of_stream:
                st.eos_polled = True
            arrivals.append(ssp)
            got = True
        return got

    def _raise_error(self) -> None:
        assert self._error is not None
        system, exc = self._error
        raise SystemConsumersError(system, exc) from exc

    # -- the poller threads' side ----------------------------------------------------------------
    def _poll_loop(self, system: str, consumer: SystemConsumer, states: list[_SspState]) -> None:
        timeout = self._poll_timeout_s
        room = self._room[system]
        stopping = self._stopping
        cond = self._cond
        by_ssp = {st.ssp: st for st in states}
        try:
            while not stopping.is_set():
                ssps = [st.ssp for st in states if not st.eos_polled and len(st.buffer) < st.capacity]
                ended = sum(1 for st in states if st.eos_polled)
                if not ssps:
                    if all(st.eos_polled for st in states):
                        return  # every partition ended: nothing more will ever come
                    room.clear()
                    if any(not st.eos_polled and len(st.buffer) < st.capacity for st in states):
                        continue
                    room.wait(timeout)
                    continue
                # While some partitions sit out because their buffers are full, a poll of the
                # others must not block for long: the full ones need polling again as soon as the
                # run loop drains them, which at full speed takes a millisecond or two, and an
                # idle partition (a bootstrap job's other inputs) would otherwise hold the
                # poller in its poll for the whole timeout while the run loop starves.
                wait = timeout if len(ssps) == len(states) - ended else min(timeout, _POLL_TIMEOUT_WHILE_FULL_S)
                polled = consumer.poll(ssps, wait)
                if polled and self._deliver(by_ssp, polled):
                    with cond:
                        cond.notify()
        except BaseException as exc:  # noqa: BLE001 - surfaced from choose() in the run loop's thread
            log.error("poller thread of system %r failed: %r", system, exc)
            self._error = (system, exc)
            with cond:
                cond.notify_all()

    # -- introspection -------------------------------------------------------------------------
    @property
    def idle(self) -> bool:
        """True when nothing is buffered and the chooser holds nothing."""
        return not self._arrivals and all(not st.buffer and not st.outstanding for st in self._states.values())

    @property
    def chooser(self) -> MessageChooser:
        return self._chooser

    def buffered(self, ssp: SystemStreamPartition) -> int:
        """Envelopes buffered for ``ssp`` (not counting the one the chooser holds)."""
        return len(self._states[ssp].buffer)

    def buffer_sizes(self) -> dict[SystemStreamPartition, int]:
        return {ssp: len(st.buffer) for ssp, st in self._states.items()}

    def chosen_counts(self) -> dict[SystemStreamPartition, int]:
        return {ssp: st.chosen for ssp, st in self._states.items()}

    def end_of_stream_chosen(self, ssp: SystemStreamPartition) -> bool:
        return self._states[ssp].eos_chosen

    def metrics_snapshot(self) -> dict[str, Any]:
        """A plain-dict snapshot: per partition envelopes chosen and buffered, plus the chooser's
        own metrics when it has any (bootstrap lag and time to head for DefaultChooser)."""
        snapshot: dict[str, Any] = {
            "chosen": {str(ssp): st.chosen for ssp, st in self._states.items()},
            "buffered": {str(ssp): len(st.buffer) for ssp, st in self._states.items()},
            "buffered_total": sum(len(st.buffer) for st in self._states.values()),
        }
        if isinstance(self._chooser, ReportsMetrics):
            snapshot["chooser"] = self._chooser.metrics_snapshot()
        return snapshot
