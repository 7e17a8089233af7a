"""The run loop's scheduled mode (Samza's AsyncRunLoop), used with a thread pool, async tasks or
``task.max.concurrency`` > 1: a :class:`ScheduledLoop` that
:class:`samza_dagster.container.run_loop.RunLoop` builds and runs in place of its inline loop.

Each pass of :meth:`ScheduledLoop.run` is a sequence of named steps:

1. settle the completions other threads handed back (:mod:`samza_dagster.container.completions`);
2. fire due timers and requests, note a stop request, enforce ``task.shutdown.ms`` while stopping
   and ``task.callback.timeout.ms`` for async callbacks;
3. schedule every task (:meth:`ScheduledLoop._schedule`): due window/end-of-stream/commit first
   (only with nothing in flight), else start queued messages up to ``task.max.concurrency``;
4. finish when stopping and nothing is in flight, or when every task is done;
5. choose the next envelope into its task's queue — or block until a completion when nothing
   can be chosen.

Who owns what: the run loop owns what both modes share — the timers, the stop request, the tasks'
due work and their commits — and lends it to the scheduled loop as bound steps
(:class:`RunLoopSteps`); the scheduled loop owns what only this mode keeps
(:class:`ScheduledState`: the completions handed back, the wake-up event, the async callbacks not
yet completed, the thread pool). Only the loop's thread changes scheduling state; other threads
append completions and set the wake-up event.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from samza_dagster.container.completions import CallbackFailed, Completion, ProcessDone, WindowDone
from samza_dagster.container.errors import CallbackTimeoutError, ContainerError, TaskProcessError, coordinates
from samza_dagster.container.metrics import ContainerMetrics
from samza_dagster.container.run_loop_config import RunLoopConfig
from samza_dagster.container.task_worker import InFlight, TaskWorker
from samza_dagster.model import END_OF_STREAM_OFFSET, IncomingMessageEnvelope, SystemStreamPartition
from samza_dagster.system.consumers import SystemConsumers
from samza_dagster.task.callback import CallbackError, TaskCallback
from samza_dagster.task.coordinator import ContainerRequests


@dataclass(frozen=True, slots=True)
class RunLoopSteps:
    """What the scheduled loop calls back on the run loop: the steps both modes share, bound to
    the RunLoop, which owns the timers, the stop request and the commits."""

    #: flag what the timers and the tasks' requests made due; the tasks that may now have something due
    fire_timers: Callable[[float], Iterable[TaskWorker]]
    #: a task's due window (on the loop's thread), end of stream and commit, once nothing is in
    #: flight; a commit is appended to the list, to be made with the others due in the same pass
    run_due: Callable[[TaskWorker, list[TaskWorker]], bool]
    #: commit these tasks in one batch
    commit: Callable[[list[TaskWorker]], None]
    #: the run's status once it is over (a shutdown after committing every task), else None
    check_finished: Callable[[], str | None]
    #: a stop was requested (``RunLoop.request_stop``)
    stop_requested: Callable[[], bool]
    #: when the next timer falls due, on the loop's clock
    next_deadline: Callable[[], float]


@dataclass(slots=True)
class ScheduledState:
    """What only the scheduled mode keeps. The loop's thread alone acts on it; other threads only
    append to ``completions`` and set ``wakeup``."""

    #: ``job.container.thread.pool.size`` > 1: the threads sync tasks' process and window run on
    #: (no thread starts before the first submit; shut down when the loop returns)
    pool: ThreadPoolExecutor | None
    #: work that ended on another thread, settled on the loop's thread in arrival order
    completions: deque[Completion] = field(default_factory=deque)
    #: set when a completion arrives or a stop is requested: the loop stops waiting
    wakeup: threading.Event = field(default_factory=threading.Event)
    #: async tasks' callbacks not completed yet, checked against ``task.callback.timeout.ms``
    callbacks: set[TaskCallback] = field(default_factory=set)


@dataclass(slots=True)
class _Pass:
    """What one scheduling pass over the tasks found."""

    #: something started or ran: pass again before choosing
    progress: bool = False
    #: messages in flight plus windows running, over all tasks
    running: int = 0
    #: no task's queue is full (and the loop is not stopping)
    can_choose: bool = True


class ScheduledLoop:
    """The scheduled mode over the run loop's TaskWorkers (module docstring): the RunLoop builds it
    with what it needs and calls :meth:`run` in place of its inline loop."""

    def __init__(
        self,
        workers: dict[str, TaskWorker],
        consumers: SystemConsumers,
        requests: ContainerRequests,
        *,
        config: RunLoopConfig,
        metrics: ContainerMetrics,
        clock: Callable[[], float],
        steps: RunLoopSteps,
    ) -> None:
        self.workers = workers
        self.consumers = consumers
        self.requests = requests
        self.config = config
        self.metrics = metrics
        self.clock = clock
        self.steps = steps
        #: the task each chosen envelope is queued for
        self._worker_for: dict[SystemStreamPartition, TaskWorker] = {
            ssp: w for w in workers.values() for ssp in w.ti.ssps
        }
        pool = None
        if config.thread_pool_size > 1:
            pool = ThreadPoolExecutor(max_workers=config.thread_pool_size, thread_name_prefix="samza-task")
        self.state = ScheduledState(pool)

    def wake(self) -> None:
        """Stop waiting now (any thread): a stop was requested."""
        self.state.wakeup.set()

    def run(self) -> str:
        """Pass after pass until the run is over; its status (``RunLoopStatus``)."""
        try:
            return self._passes()
        finally:
            if self.state.pool is not None:
                self.state.pool.shutdown(wait=True, cancel_futures=True)

    def _passes(self) -> str:
        state, steps = self.state, self.steps
        stopping_since: float | None = None
        while True:
            state.wakeup.clear()
            if state.completions:
                self._drain_completions()
            now = self.clock()
            if self.requests.pending or now >= steps.next_deadline():
                self.requests.looked()
                steps.fire_timers(now)
                if (steps.stop_requested() or self.requests.shutdown_all) and stopping_since is None:
                    stopping_since = now
            if stopping_since is not None:
                self._enforce_shutdown_timeout(now - stopping_since)
            if state.callbacks and self.config.callback_timeout_s is not None:
                self._check_callback_timeouts(now)
            step = self._schedule(stopping=stopping_since is not None)
            status = self._finish(step, stopping=stopping_since is not None)
            if status is not None:
                return status
            if not step.progress:
                self._choose_or_block(step)

    # -- step 2: shutdown -----------------------------------------------------------------------
    def _enforce_shutdown_timeout(self, stopping_for_s: float) -> None:
        shutdown_s = self.config.shutdown_s
        if stopping_for_s > shutdown_s:
            busy = {w.ti.task_name: w.in_flight for w in self.workers.values() if w.busy}
            raise ContainerError(
                f"tasks did not finish their in-flight work within task.shutdown.ms={int(shutdown_s * 1000)} "
                f"of a shutdown request (in flight per task: {busy}); nothing was committed for them"
            )

    # -- step 3: scheduling ---------------------------------------------------------------------
    def _schedule(self, *, stopping: bool) -> _Pass:
        step = _Pass(can_choose=not stopping)
        commits: list[TaskWorker] = []
        for w in self.workers.values():
            if w.done:
                continue
            if w.has_due:
                due = len(commits)
                if self._run_due(w, commits):
                    step.progress = True
                if len(commits) > due or w.done or w.exclusive_running or w.has_due:
                    # due work waits for in-flight messages, and a task committing starts nothing
                    # before its commit (made below with the others due in this pass)
                    self._count(w, step)
                    continue
            if not stopping and self._start_pending(w):
                step.progress = True
            self._count(w, step)
        self.steps.commit(commits)
        return step

    def _run_due(self, w: TaskWorker, commits: list[TaskWorker]) -> bool:
        """The run loop's due work for ``w`` (``RunLoopSteps.run_due``), except that with a pool a
        sync task's window runs there, alone for its task until its :class:`WindowDone`."""
        pool = self.state.pool
        if pool is not None and w.window_due and not w.busy and not w.ti.is_async:
            w.start_window(in_pool=True)
            pool.submit(self._window_in_pool, w)
            return True
        return self.steps.run_due(w, commits)

    def _start_pending(self, w: TaskWorker) -> bool:
        """Start queued messages while the task has capacity; True if anything started (or its
        end of stream became due and can run on the next pass)."""
        started = False
        max_concurrency = self.config.max_concurrency
        while w.can_start(max_concurrency):
            env = w.next_pending()
            if env.offset == END_OF_STREAM_OFFSET:
                w.ti.mark_end_of_stream(env.ssp)
                if w.end_of_stream_due:
                    break
                continue
            self._start(w, env)
            started = True
        return started or (w.end_of_stream_due and not w.in_flight)

    def _count(self, w: TaskWorker, step: _Pass) -> None:
        step.running += w.in_flight + w.exclusive_running
        if len(w.pending) >= self.config.pending_limit:
            step.can_choose = False

    # -- step 4: finishing ----------------------------------------------------------------------
    def _finish(self, step: _Pass, *, stopping: bool) -> str | None:
        tasks = self.workers.values()
        if stopping and step.running == 0 and not any(w.exclusive_running for w in tasks):
            # stopping is a stop request or a shutdown of all tasks (neither is ever withdrawn):
            # the check commits every task and reports the shutdown
            return self.steps.check_finished()
        if all(w.done for w in tasks):
            return self.steps.check_finished()  # completed
        if all(w.done or w.ti.coordinator.shutdown_requested for w in tasks):
            self.requests.ask_shutdown_all()
        return None

    # -- step 5: choosing or blocking -----------------------------------------------------------
    def _choose_or_block(self, step: _Pass) -> None:
        metrics, wakeup = self.metrics, self.state.wakeup
        poll_timeout_s = self.config.poll_timeout_s
        if not step.can_choose:
            metrics.blocked_waits += 1
            wakeup.wait(min(poll_timeout_s, max(0.0, self.steps.next_deadline() - self.clock())))
            return
        if step.running:
            env = self.consumers.choose(0.0)
            if env is None:  # work is running: wait for its completion rather than poll
                metrics.blocked_waits += 1
                wakeup.wait(0.002)
                return
        else:
            env = self.consumers.choose(min(poll_timeout_s, max(0.0, self.steps.next_deadline() - self.clock())))
        if env is not None:
            metrics.chooses += 1
            self._worker_for[env.ssp].enqueue(env)
        else:
            metrics.null_chooses += 1

    # -- starting a message ---------------------------------------------------------------------
    def _start(self, w: TaskWorker, envelope: IncomingMessageEnvelope) -> None:
        """Start processing ``envelope``: deserialize on the loop thread, then process inline
        (no pool), in the pool (sync task) or via process_async (async task)."""
        ssp = envelope.ssp
        entry = w.start_process(ssp, envelope.offset)
        try:  # prepare marks the task uncommitted
            env = w.ti.prepare(envelope)
        except Exception:
            w.abandon_process()
            raise
        if env is None or env.offset == END_OF_STREAM_OFFSET:
            if env is not None:
                w.ti.mark_end_of_stream(env.ssp)
            w.done_process(ssp, entry)
            return
        if w.ti.is_async:
            callback = TaskCallback(w.ti.task_name, env, self._make_on_done(w, ssp, entry), self.clock())
            self.state.callbacks.add(callback)
            try:
                w.ti.call_process(env, callback)
            except Exception as exc:
                raise w.ti.process_error(env, exc) from exc
        elif self.state.pool is not None:
            self.state.pool.submit(self._process_in_pool, w, env, ssp, entry)
        else:
            t0 = time.perf_counter()
            try:
                w.ti.call_process(env)
            except Exception as exc:
                raise w.ti.process_error(env, exc) from exc
            w.ti.metrics.process_s += time.perf_counter() - t0
            w.done_process(ssp, entry)

    # -- other threads: hand work back ----------------------------------------------------------
    def _process_in_pool(
        self, w: TaskWorker, env: IncomingMessageEnvelope, ssp: SystemStreamPartition, entry: InFlight
    ) -> None:
        t0 = time.perf_counter()
        exc: BaseException | None = None
        try:
            w.ti.call_process(env)
        except BaseException as e:  # noqa: BLE001 - reported on the loop thread
            exc = w.ti.process_error(env, e)
            exc.__cause__ = e
        w.ti.metrics.process_s += time.perf_counter() - t0
        self.state.completions.append(ProcessDone(w, ssp, entry, exc))
        self.state.wakeup.set()

    def _window_in_pool(self, w: TaskWorker) -> None:
        exc: BaseException | None = None
        try:
            w.ti.window()
        except BaseException as e:  # noqa: BLE001 - reported on the loop thread
            exc = e
        self.state.completions.append(WindowDone(w, exc))
        self.state.wakeup.set()

    def _make_on_done(
        self, w: TaskWorker, ssp: SystemStreamPartition, entry: InFlight
    ) -> Callable[[TaskCallback, BaseException | None], None]:
        completions, wakeup = self.state.completions, self.state.wakeup

        def on_done(callback: TaskCallback, exc: BaseException | None) -> None:
            if isinstance(exc, CallbackError):
                completions.append(
                    CallbackFailed(w, callback, TaskProcessError(str(exc), w.ti.task_name, callback.envelope))
                )
            else:
                if exc is not None:
                    exc = w.ti.process_error(callback.envelope, exc)
                completions.append(ProcessDone(w, ssp, entry, exc, callback))
            wakeup.set()

        return on_done

    # -- step 1: the loop's thread settles them -------------------------------------------------
    def _drain_completions(self) -> None:
        completions = self.state.completions
        while completions:
            completions.popleft().settle(self)

    def forget_callback(self, callback: TaskCallback) -> None:
        """``callback`` completed: no longer checked against ``task.callback.timeout.ms``."""
        self.state.callbacks.discard(callback)

    def _check_callback_timeouts(self, now: float) -> None:
        limit = self.config.callback_timeout_s
        assert limit is not None
        for cb in list(self.state.callbacks):
            if now - cb.started_at > limit and cb.expire():
                raise CallbackTimeoutError(
                    f"task {cb.task_name!r} did not complete the message at {coordinates(cb.envelope)} within "
                    f"task.callback.timeout.ms={int(limit * 1000)}",
                    cb.task_name,
                    cb.envelope,
                )
