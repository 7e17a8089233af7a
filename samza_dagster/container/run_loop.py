"""RunLoop: the container's event loop (Samza design).

Each iteration: (1) choose an envelope, (2) schedule its task, (3) run window() where the
timer fired, (4) output goes to the producers as tasks send it, (5) commit where
``task.commit.ms`` elapsed or a task asked, (6) block while every task is busy.

Two modes share the scheduling rules:

* **inline** (default: one thread, synchronous tasks, ``task.max.concurrency=1``): process
  runs on the loop's thread right after choose, so every happens-before guarantee holds by
  construction and the per-message path is a handful of dict lookups. With a batching chooser
  (``task.consumer.batch.size`` > 1) the loop takes runs of one partition's envelopes per chooser
  decision (SystemConsumers.choose_run), and with the plain round-robin chooser (the default) whole
  rounds of picks at once (SystemConsumers.choose_rounds); either way it still checks requests
  and timers after every envelope.
* **scheduled** (``job.container.thread.pool.size > 1``, an AsyncStreamTask, or
  ``task.max.concurrency > 1``; a :class:`~samza_dagster.container.scheduled.ScheduledLoop` the run
  loop builds, which calls back the steps both modes share): as Samza's AsyncRunLoop, each task keeps a queue of chosen
  envelopes (``TaskWorker.pending``, task_worker.py) and starts one when it has capacity; synchronous
  process/window run in the thread pool, async tasks complete through callbacks from any
  thread. Completions come back through a deque drained on the loop's thread, which alone
  mutates scheduling state. A task with window/commit/end-of-stream due starts nothing new
  until its in-flight messages complete, and window runs alone. Offsets: per SSP the started
  messages are kept in offset order and the processed offset advances only over a prefix of
  completed ones, so a checkpoint never covers a message still in flight.

Chosen envelopes for a task without capacity wait in its queue, in order (never dropped,
never reordered). The loop stops choosing while any task's queue holds ``pending_limit``
envelopes, which bounds memory; other tasks keep running what they already have.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterable
from itertools import cycle
from operator import attrgetter
from typing import Any, cast

from samza_dagster.config import keys
from samza_dagster.config.errors import ConfigError
from samza_dagster.container.metrics import ContainerMetrics, TaskMetrics
from samza_dagster.container.run_loop_config import RunLoopConfig
from samza_dagster.container.scheduled import RunLoopSteps, ScheduledLoop
from samza_dagster.container.task_instance import InlineBinding, TaskInstance
from samza_dagster.container.task_worker import TaskWorker
from samza_dagster.model import END_OF_STREAM_OFFSET, IncomingMessageEnvelope, SystemStreamPartition
from samza_dagster.system.consumers import SystemConsumers
from samza_dagster.task.collector import MessageCollector
from samza_dagster.task.coordinator import ContainerRequests, TaskCoordinator

log = logging.getLogger(__name__)


#: Longest a task that reached end of stream waits for its commit, so that it joins the commits of
#: other tasks ending or committing meanwhile (inline mode; see ``RunLoop._housekeeping``).
ENDED_COMMIT_DELAY_S = 0.1


def check_batch_task_settings(thread_pool_size: int, max_concurrency: int) -> None:
    """A batch task (``process_batch``) runs on the single-threaded inline loop: refuse the
    settings that would schedule it on a thread pool or several messages at a time."""
    if thread_pool_size > 1 or max_concurrency > 1:
        key = keys.TASK_MAX_CONCURRENCY.name if max_concurrency > 1 else keys.JOB_CONTAINER_THREAD_POOL_SIZE.name
        raise ConfigError(
            f"config key {key!r}: a task that processes batches (process_batch, or an application's "
            "map_batches) runs on the single-threaded "
            f"run loop; set {keys.JOB_CONTAINER_THREAD_POOL_SIZE.name} to 0 or 1 and "
            f"{keys.TASK_MAX_CONCURRENCY.name} to 1 (got {thread_pool_size} and {max_concurrency})",
            key=key,
        )


#: the run loop's settings when none are given (a container passes its job's: RunLoopConfig.from_config)
DEFAULTS = RunLoopConfig()

#: ``time.perf_counter`` reads the clock the timers run on (``time.monotonic``), so the rounds loop's
#: timing of ``process`` doubles as its look at the clock (one read per envelope, not three); true
#: on Linux (both CLOCK_MONOTONIC), checked rather than assumed
_PERF_COUNTER_IS_MONOTONIC = (
    time.get_clock_info("perf_counter").implementation == time.get_clock_info("monotonic").implementation
)


class DeadlineAlarm:
    """Raises ``ContainerRequests.pending`` once ``time.monotonic()`` passes the deadline it was last
    armed with, from a thread of its own (started at the first finite deadline): an inline loop
    that does not time ``process`` (``metrics.timer.enabled=false``) then looks at that one flag
    per envelope instead of reading the clock — ~50 ns of B5's ~350 per envelope
    (docs/benchmarks.md). Only for the real clock: a test's hand-moved clock is read per envelope."""

    def __init__(self, requests: ContainerRequests) -> None:
        self._requests = requests
        self._deadline = math.inf
        self._cond = threading.Condition(threading.Lock())
        self._stopped = False
        self._thread: threading.Thread | None = None

    def arm(self, deadline: float) -> None:
        """The loop's thread: raise the flag at ``deadline`` (monotonic seconds; inf: never)."""
        if deadline == self._deadline:
            return  # still armed for it (a race with firing only makes one more look)
        with self._cond:
            self._deadline = deadline
            self._cond.notify()
        if self._thread is None and deadline != math.inf:
            self._thread = threading.Thread(target=self._run, name="samza-run-loop-alarm", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        with self._cond:
            while not self._stopped:
                remaining = self._deadline - time.monotonic()
                if remaining > 0:
                    self._cond.wait(None if remaining == math.inf else remaining)
                    continue
                self._requests.notice()
                self._deadline = math.inf  # fired: until the loop arms the next one


class RunLoopStatus:
    COMPLETED = "completed"  # every task reached end of stream
    SHUTDOWN = "shutdown"  # a task asked, or the container was told to stop


class RunLoop:
    """The event loop of one container over its TaskInstances (module docstring): ``run()`` chooses,
    processes, windows and commits until every task reaches end-of-stream (``COMPLETED``) or a
    stop is asked (``request_stop``, a task's ``coordinator.shutdown``: ``SHUTDOWN``). Inline mode
    is here, with the steps both modes share (timers, due work, commits, finishing); the scheduled
    mode is a :class:`ScheduledLoop` built here and given those steps. Only the loop's thread
    changes scheduling state."""

    def __init__(
        self,
        tasks: dict[str, TaskInstance],
        consumers: SystemConsumers,
        *,
        commit: Callable[[list[TaskInstance]], None],
        requests: ContainerRequests,
        config: RunLoopConfig = DEFAULTS,
        metrics: ContainerMetrics | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.tasks = tasks
        self.consumers = consumers
        self._commit_task = commit
        self.requests = requests
        self.config = config
        #: what the timers read: monotonic seconds (a test passes a clock it moves by hand)
        self.clock = clock
        self.window_s = config.window_s
        self.commit_s = config.commit_s
        self.poll_timeout_s = config.poll_timeout_s
        self.timer_enabled = config.timer_enabled
        self.metrics = metrics or ContainerMetrics("?")
        #: the run loop's state of each task (its own: TaskInstance holds none of it)
        self.workers = {name: TaskWorker(ti) for name, ti in tasks.items()}
        self._task_for: dict[SystemStreamPartition, TaskInstance] = {
            ssp: ti for ti in tasks.values() for ssp in ti.ssps
        }
        self.scheduled = config.scheduled_by_settings or any(ti.is_async for ti in tasks.values())
        #: the tasks take batches (``process_batch``): inline mode hands them whole runs
        self.batches = any(ti.is_batch for ti in tasks.values())
        if self.batches:
            check_batch_task_settings(config.thread_pool_size, config.max_concurrency)
        self._stop = False
        self._done_count = 0  # tasks that reached end of stream (``done``)
        #: tasks that reached end of stream whose commit waits (inline mode) until ``_ended_by``
        self._ended: list[TaskWorker] = []
        self._ended_by = float("inf")
        now = clock()
        self._next_window = now + self.window_s if self.window_s else float("inf")
        self._next_commit = now + self.commit_s if self.commit_s else float("inf")
        self._next_deadline = self._compute_deadline()
        #: the scheduled mode, when the settings or an async task call for it
        self._scheduled: ScheduledLoop | None = None
        if self.scheduled:
            steps = RunLoopSteps(
                fire_timers=self._fire_timers,
                run_due=self._run_due,
                commit=self._commit,
                check_finished=self._check_finished,
                stop_requested=lambda: self._stop,
                next_deadline=lambda: self._next_deadline,
            )
            self._scheduled = ScheduledLoop(
                self.workers, consumers, requests, config=config, metrics=self.metrics, clock=clock, steps=steps
            )

    # -- control from other threads ------------------------------------------------------------
    def request_stop(self) -> None:
        """Graceful stop: finish in-flight work, commit, return SHUTDOWN."""
        self._stop = True
        self.requests.notice()
        if self._scheduled is not None:
            self._scheduled.wake()

    # -- entry ---------------------------------------------------------------------------------
    def run(self) -> str:
        if not self.tasks:
            return RunLoopStatus.COMPLETED
        if self._scheduled is not None:
            return self._scheduled.run()
        if self.batches:
            return self._run_inline_batches()
        if self.consumers.supports_runs:
            return self._run_inline_runs()
        if self.consumers.supports_rounds and self.clock is time.monotonic and _PERF_COUNTER_IS_MONOTONIC:
            return self._run_inline_rounds()
        return self._run_inline()

    # -- inline mode ---------------------------------------------------------------------------
    def _fast_paths(self) -> dict[SystemStreamPartition, InlineBinding]:
        """Per input partition that needs no deserialization, what processing one envelope
        touches, pre-bound: the loop then does one dict lookup per envelope."""
        fast: dict[SystemStreamPartition, InlineBinding] = {}
        for ti in self.tasks.values():
            for ssp in ti.ssps:
                binding = ti.inline_binding(ssp)
                if binding is not None:
                    fast[ssp] = binding
        return fast

    def _run_inline(self) -> str:
        choose = self.consumers.choose
        task_for = self._task_for
        fast_get = self._fast_paths().get
        requests = self.requests
        monotonic = self.clock
        perf_counter = time.perf_counter
        timed = self.timer_enabled
        poll_timeout = self.poll_timeout_s
        metrics = self.metrics
        eos = END_OF_STREAM_OFFSET
        chosen = 0
        try:
            while True:
                env = choose(poll_timeout)
                if env is not None:
                    chosen += 1
                    ssp = env.ssp
                    offset = env.offset
                    if offset == eos:
                        task_for[ssp].mark_end_of_stream(ssp)
                        requests.notice()
                    else:
                        f = fast_get(ssp)
                        if f is None:
                            task_for[ssp].process_inline(env)
                        else:
                            ti, process, collector, coordinator, last, counts, task_metrics = f
                            if timed:
                                t0 = perf_counter()
                                try:
                                    process(env, collector, coordinator)
                                except Exception as exc:
                                    raise ti.process_error(env, exc) from exc
                                task_metrics.process_s += perf_counter() - t0
                            else:
                                try:
                                    process(env, collector, coordinator)
                                except Exception as exc:
                                    raise ti.process_error(env, exc) from exc
                            last[ssp] = offset
                            counts[ssp] += 1
                else:
                    metrics.null_chooses += 1  # live: the idle path, read by the metrics
                if requests.pending or monotonic() >= self._next_deadline:
                    status = self._housekeeping(monotonic())
                    if status is not None:
                        return status
        finally:
            metrics.chooses += chosen

    def _run_inline_rounds(self) -> str:  # noqa: C901 - the hot path: a helper per branch would cost a call per envelope
        """Inline mode with a round-robin chooser: SystemConsumers.choose_rounds hands over many
        picks at once (the one-at-a-time order: module docstring of system/consumers.py), and
        their partitions repeat with the list's ``round_width``, so what each envelope's task needs
        is looked up once per partition per list, not per envelope. After every envelope the same
        checks as :meth:`_run_inline` (a request, or a timer due: before the next envelope). The
        processed offsets and counts are recorded per list, or before anything (housekeeping, an
        error) can see them (:meth:`_settle`); an interrupted list leaves its unprocessed
        envelopes out of the checkpoint, as a run does."""
        consumers = self.consumers
        choose_rounds = consumers.choose_rounds
        task_for = self._task_for
        fast_get = self._fast_paths().get
        requests = self.requests
        monotonic = self.clock  # time.monotonic here (run())
        perf_counter = time.perf_counter
        timed = self.timer_enabled
        poll_timeout = self.poll_timeout_s
        metrics = self.metrics
        eos = END_OF_STREAM_OFFSET
        chosen = 0
        alarm = DeadlineAlarm(requests)
        ssp_of = attrgetter("ssp")
        last_ssps: list[SystemStreamPartition] = []
        binds: list[InlineBinding | None] = []
        fast: list[InlineBinding] = []
        calls: list[tuple[Callable[..., Any], MessageCollector, TaskCoordinator, TaskMetrics]] = []
        try:
            while True:
                batch = choose_rounds(poll_timeout)
                if batch is None:
                    metrics.null_chooses += 1  # live: the idle path, read by the metrics
                    if requests.pending or monotonic() >= self._next_deadline:
                        status = self._housekeeping(monotonic())
                        if status is not None:
                            return status
                    continue
                chosen += len(batch)
                width = consumers.round_width
                # a FIFO's order stays as it was across whole rounds: the bindings of the last
                # list serve again when its partitions are the same objects in the same order
                ssps = list(map(ssp_of, batch[:width]))
                if ssps != last_ssps:
                    last_ssps = ssps
                    binds = list(map(fast_get, ssps))
                    fast = cast(list[InlineBinding], binds)
                    calls = [(f.process, f.collector, f.coordinator, f.metrics) for f in fast if f is not None]
                if len(batch) == 1 or None in binds:  # one pick (maybe an end of stream), or serdes
                    for env in batch:
                        ssp = env.ssp
                        if env.offset == eos:
                            task_for[ssp].mark_end_of_stream(ssp)
                            requests.notice()
                        else:
                            task_for[ssp].process_inline(env)
                        if requests.pending or monotonic() >= self._next_deadline:
                            status = self._housekeeping(monotonic())
                            if status is not None:
                                return status
                    batch = None  # (as below)
                    continue
                deadline = self._next_deadline
                done = settled = 0
                if timed:
                    # one clock read per envelope: the time since the previous envelope was done
                    # is this one's process time (the loop's step, ~0.1 µs, included), and the
                    # same read is the look at the timers
                    t0 = perf_counter()
                    for env, (process, collector, coordinator, task_metrics) in zip(batch, cycle(calls)):
                        try:
                            process(env, collector, coordinator)
                        except Exception as exc:
                            self._settle(batch, fast, width, settled, done)
                            raise fast[done % width].ti.process_error(env, exc) from exc
                        t1 = perf_counter()
                        task_metrics.process_s += t1 - t0
                        t0 = t1
                        done += 1
                        if requests.pending or t1 >= deadline:
                            self._settle(batch, fast, width, settled, done)
                            settled = done
                            status = self._housekeeping(monotonic())
                            if status is not None:
                                return status
                            deadline = self._next_deadline
                            t0 = perf_counter()  # the housekeeping is not the next envelope's
                else:
                    alarm.arm(deadline)  # the flag is the look at the timers: no clock read
                    for env, (process, collector, coordinator, _) in zip(batch, cycle(calls)):
                        try:
                            process(env, collector, coordinator)
                        except Exception as exc:
                            self._settle(batch, fast, width, settled, done)
                            raise fast[done % width].ti.process_error(env, exc) from exc
                        done += 1
                        if requests.pending:
                            self._settle(batch, fast, width, settled, done)
                            settled = done
                            status = self._housekeeping(monotonic())
                            if status is not None:
                                return status
                            alarm.arm(self._next_deadline)
                self._settle(batch, fast, width, settled, done)
                # let the list go before the next choose: its top-up poll refills the buffers it
                # came from, and the two together would hold twice the fetch threshold's budget
                batch = None
        finally:
            alarm.stop()
            metrics.chooses += chosen

    @staticmethod
    def _settle(
        batch: list[IncomingMessageEnvelope], binds: list[InlineBinding], width: int, start: int, stop: int
    ) -> None:
        """Record ``batch[start:stop]`` as processed: per partition its last offset there and how
        many (envelope ``j`` is of the partition of ``binds[j % width]``)."""
        for j in range(max(start, stop - width), stop):  # the last envelope of each partition
            env = batch[j]
            f = binds[j % width]
            f.last_processed[env.ssp] = env.offset
            f.counts[env.ssp] += (j - start) // width + 1

    @staticmethod
    def _record(
        last: dict[SystemStreamPartition, str],
        counts: dict[SystemStreamPartition, int],
        ssp: SystemStreamPartition,
        run: list[IncomingMessageEnvelope],
        recorded: int,
        processed: int,
    ) -> int:
        """Record ``run[recorded:processed]`` as processed (its last offset, how many); returns
        ``processed``, now recorded."""
        if processed > recorded:
            last[ssp] = run[processed - 1].offset
            counts[ssp] += processed - recorded
        return processed

    def _run_inline_runs(self) -> str:  # noqa: C901 - the hot path: a helper per branch would cost a call per envelope
        """Inline mode when the chooser offers runs (``task.consumer.batch.size`` > 1): one
        chooser decision hands over a run of one partition's envelopes (SystemConsumers.choose_run),
        processed back to back. After every envelope the same checks as :meth:`_run_inline`:
        a commit or shutdown the task asks for, or a window or commit that falls due, happens
        before the next envelope of the run, and a run cut short by a shutdown leaves its
        unprocessed envelopes out of the checkpoint."""
        choose_run = self.consumers.choose_run
        task_for = self._task_for
        fast_get = self._fast_paths().get
        requests = self.requests
        monotonic = self.clock
        perf_counter = time.perf_counter
        timed = self.timer_enabled
        poll_timeout = self.poll_timeout_s
        metrics = self.metrics
        eos = END_OF_STREAM_OFFSET
        chosen = 0
        # the timing's clock reads are the look at the timers too, when they read the same clock;
        # untimed on the real clock, the alarm's flag is
        real_clock = monotonic is time.monotonic
        shared_clock = real_clock and _PERF_COUNTER_IS_MONOTONIC
        alarm = DeadlineAlarm(requests) if real_clock and not timed else None
        try:
            while True:
                run = choose_run(poll_timeout)
                if run is None:
                    metrics.null_chooses += 1  # live: the idle path, read by the metrics
                    if requests.pending or monotonic() >= self._next_deadline:
                        status = self._housekeeping(monotonic())
                        if status is not None:
                            return status
                    continue
                ssp = run[0].ssp
                f = fast_get(ssp)
                if f is None:
                    ti = task_for[ssp]
                    for env in run:
                        chosen += 1
                        if env.offset == eos:
                            ti.mark_end_of_stream(ssp)
                            requests.notice()
                        else:
                            ti.process_inline(env)
                        if requests.pending or monotonic() >= self._next_deadline:
                            status = self._housekeeping(monotonic())
                            if status is not None:
                                return status
                    continue
                ti, process, collector, coordinator, last, counts, task_metrics = f
                chosen += len(run)
                end_of_stream = run[-1].offset == eos  # only ever the last envelope of a run
                if end_of_stream:
                    run.pop()
                # Per envelope only what must happen per envelope; the offset and the count are
                # recorded once per run, or before anything (housekeeping, an error) can see them
                # (``i`` processed, up to ``recorded`` recorded). At most one clock read per
                # envelope (as in _run_inline_rounds), none when the alarm's flag says when a timer
                # is due: one loop per case, so that no envelope pays for the others' tests.
                deadline = self._next_deadline
                recorded = i = 0
                if timed:
                    t0 = perf_counter()
                    for env in run:
                        try:
                            process(env, collector, coordinator)
                        except Exception as exc:
                            self._record(last, counts, ssp, run, recorded, i)
                            raise ti.process_error(env, exc) from exc
                        i += 1
                        t1 = perf_counter()
                        task_metrics.process_s += t1 - t0
                        t0 = t1
                        if requests.pending or (t1 if shared_clock else monotonic()) >= deadline:
                            recorded = self._record(last, counts, ssp, run, recorded, i)
                            status = self._housekeeping(monotonic())
                            if status is not None:
                                return status
                            deadline = self._next_deadline
                            t0 = perf_counter()
                elif alarm is not None:
                    alarm.arm(deadline)
                    for env in run:
                        try:
                            process(env, collector, coordinator)
                        except Exception as exc:
                            self._record(last, counts, ssp, run, recorded, i)
                            raise ti.process_error(env, exc) from exc
                        i += 1
                        if requests.pending:
                            recorded = self._record(last, counts, ssp, run, recorded, i)
                            status = self._housekeeping(monotonic())
                            if status is not None:
                                return status
                            alarm.arm(self._next_deadline)
                else:
                    for env in run:
                        try:
                            process(env, collector, coordinator)
                        except Exception as exc:
                            self._record(last, counts, ssp, run, recorded, i)
                            raise ti.process_error(env, exc) from exc
                        i += 1
                        if requests.pending or monotonic() >= deadline:
                            recorded = self._record(last, counts, ssp, run, recorded, i)
                            status = self._housekeeping(monotonic())
                            if status is not None:
                                return status
                            deadline = self._next_deadline
                self._record(last, counts, ssp, run, recorded, i)
                if end_of_stream:
                    ti.mark_end_of_stream(ssp)
                    requests.notice()
                    status = self._housekeeping(monotonic())
                    if status is not None:
                        return status
        finally:
            if alarm is not None:
                alarm.stop()
            metrics.chooses += chosen

    def _run_inline_batches(self) -> str:
        """Inline mode for batch tasks: each chooser decision's run (``SystemConsumers.choose_run``;
        one envelope when the chooser offers no runs) goes to the task's ``process_batch`` whole
        (``TaskInstance.process_run``), and requests and timers are checked between runs only — so
        a commit, window or shutdown never falls inside a batch."""
        choose_run = self.consumers.choose_run
        task_for = self._task_for
        requests = self.requests
        monotonic = self.clock
        poll_timeout = self.poll_timeout_s
        metrics = self.metrics
        eos = END_OF_STREAM_OFFSET
        chosen = 0
        try:
            while True:
                run = choose_run(poll_timeout)
                if run is None:
                    metrics.null_chooses += 1  # live: the idle path, read by the metrics
                else:
                    chosen += len(run)
                    ssp = run[0].ssp
                    ti = task_for[ssp]
                    end_of_stream = run[-1].offset == eos  # only ever the last envelope of a run
                    if end_of_stream:
                        run.pop()
                    if run:
                        ti.process_run(run)
                    if end_of_stream:
                        ti.mark_end_of_stream(ssp)
                        requests.notice()
                if requests.pending or monotonic() >= self._next_deadline:
                    status = self._housekeeping(monotonic())
                    if status is not None:
                        return status
        finally:
            metrics.chooses += chosen

    def _housekeeping(self, now: float) -> str | None:
        """Timers, requests and end of stream, for the tasks that may have something due (every
        task when a timer fired, else only those that asked or ended): the cost of a request or
        of a partition's end of stream does not grow with the number of tasks. In inline mode
        nothing is ever in flight, so commits that fall due together are made together (one
        batch: see ``_commit``), and the commits of tasks that reached end of stream wait up to
        ``ENDED_COMMIT_DELAY_S`` to join others — the partitions of a bounded input end within
        moments of each other, and one commit for all of them costs what one commit costs."""
        self.requests.looked()
        commits: list[TaskWorker] = []
        for w in self._fire_timers(now):
            if not w.done:
                self._run_due(w, commits)
        ended = self._ended
        for w in commits:
            if w.done:
                ended.append(w)
        if ended:
            commits = [w for w in commits if not w.done]
            if commits or now >= self._ended_by or self._done_count == len(self.tasks):
                commits += ended
                ended.clear()
                self._ended_by = float("inf")
            elif self._ended_by == float("inf"):
                self._ended_by = now + ENDED_COMMIT_DELAY_S
            self._next_deadline = self._compute_deadline()
        self._commit(commits)
        return self._check_finished()

    # -- shared --------------------------------------------------------------------------------
    def _compute_deadline(self) -> float:
        return min(self._next_window, self._next_commit, self._ended_by)

    def _fire_timers(self, now: float) -> Iterable[TaskWorker]:
        """Flag what the timers and the tasks' requests made due; the tasks that may now have
        something due: every task when a timer fired or all were asked to commit, else the ones
        that asked (``ContainerRequests.asking``: a commit, a shutdown, an end of stream)."""
        everyone = False
        if now >= self._next_window:
            for w in self.workers.values():
                if w.ti.is_windowable and not w.done:
                    w.need_window()
            self._next_window = now + (self.window_s or float("inf"))  # only due when window_s is set
            everyone = True
        if now >= self._next_commit:
            for w in self.workers.values():
                if not w.done:
                    w.need_commit()
            self._next_commit = now + (self.commit_s or float("inf"))  # only due when commit_s is set
            everyone = True
        self._next_deadline = self._compute_deadline()
        req = self.requests
        if req.take_commit_all():
            for w in self.workers.values():
                w.need_commit()
            everyone = True
        tasks = self.workers
        asked = [tasks[name] for name in dict.fromkeys(req.take_asking())]
        for w in asked:
            if w.ti.coordinator.take_commit_request():
                w.need_commit()
        return tasks.values() if everyone else asked

    def _run_due(self, w: TaskWorker, commits: list[TaskWorker]) -> bool:
        """Window (on the loop's thread: the scheduled loop starts a pool's windows itself), end of
        stream and commit for a task with nothing in flight; a commit it needs is appended to
        ``commits``, for the caller to make with the others due at the same time before the task
        processes anything more. True if something ran or a commit is due."""
        if w.busy:
            return False
        ran = False
        if w.window_due:
            w.start_window(in_pool=False)
            w.ti.window()
            ran = True
        if w.end_of_stream_due:
            w.ti.end_of_stream()
            commits.append(w)
            w.finish()
            self._done_count += 1
            return True
        if w.commit_due:
            w.start_commit()
            commits.append(w)
            ran = True
        return ran

    def _commit(self, tasks: list[TaskWorker]) -> None:
        """Commit ``tasks`` in one batch; each task's commit time is its share of the batch."""
        if not tasks:
            return
        t0 = time.perf_counter()
        self._commit_task([w.ti for w in tasks])
        share = (time.perf_counter() - t0) / len(tasks)
        for w in tasks:
            w.ti.metrics.commit_count += 1
            w.ti.metrics.commit_s += share

    def _check_finished(self) -> str | None:
        """COMPLETED, SHUTDOWN (after committing every task), or None while the run goes on."""
        req = self.requests
        tasks = self.workers.values()
        if self._done_count == len(self.tasks):
            return RunLoopStatus.COMPLETED
        shutdown = (
            self._stop
            or req.shutdown_all
            or (req.shutdowns > 0 and all(w.done or w.ti.coordinator.shutdown_requested for w in tasks))
        )
        if not shutdown:
            return None
        # graceful: everything in flight is complete here (callers guarantee it); commit all,
        # the ended tasks whose commit waits included
        self._commit([w for w in tasks if not w.done] + self._ended)
        self._ended.clear()
        return RunLoopStatus.SHUTDOWN
