"""The run loop's scheduled mode (Samza's AsyncRunLoop), used with a thread pool, async tasks or
``task.max.concurrency`` > 1; :class:`samza_dagster.container.run_loop.RunLoop` mixes it in.

Each pass of :meth:`ScheduledMode._run_scheduled` is a sequence of named steps:

1. settle the completions other threads handed back (:mod:`samza_dagster.container.completions`);
2. fire due timers and requests, note a stop request, enforce ``task.shutdown.ms`` while stopping
   and ``task.callback.timeout.ms`` for async callbacks;
3. schedule every task (:meth:`ScheduledMode._schedule`): due window/end-of-stream/commit first
   (only with nothing in flight), else start queued messages up to ``task.max.concurrency``;
4. finish when stopping and nothing is in flight, or when every task is done;
5. choose the next envelope into its task's queue — or block until a completion when nothing
   can be chosen.

Only the loop's thread changes scheduling state; other threads append completions and set
``_wakeup``.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from samza_dagster.container.completions import CallbackFailed, Completion, ProcessDone, WindowDone
from samza_dagster.container.errors import CallbackTimeoutError, ContainerError, TaskProcessError, coordinates
from samza_dagster.container.metrics import ContainerMetrics
from samza_dagster.container.task_instance import TaskInstance
from samza_dagster.container.task_worker import InFlight, TaskWorker
from samza_dagster.model import END_OF_STREAM_OFFSET, IncomingMessageEnvelope, SystemStreamPartition
from samza_dagster.system.consumers import SystemConsumers
from samza_dagster.task.callback import CallbackError, TaskCallback
from samza_dagster.task.coordinator import ContainerRequests


@dataclass(slots=True)
class _Pass:
    """What one scheduling pass over the tasks found."""

    #: something started or ran: pass again before choosing
    progress: bool = False
    #: messages in flight plus windows running, over all tasks
    running: int = 0
    #: no task's queue is full (and the loop is not stopping)
    can_choose: bool = True


class ScheduledMode:
    """Scheduled-mode state and steps; the attributes below are the run loop's."""

    tasks: dict[str, TaskInstance]
    workers: dict[str, TaskWorker]
    consumers: SystemConsumers
    requests: ContainerRequests
    metrics: ContainerMetrics
    max_concurrency: int
    pending_limit: int
    poll_timeout_s: float
    shutdown_s: float
    callback_timeout_s: float | None
    clock: Callable[[], float]
    _task_for: dict[SystemStreamPartition, TaskInstance]
    _worker_for: dict[SystemStreamPartition, TaskWorker]
    _stop: bool
    _next_deadline: float
    _pool: ThreadPoolExecutor | None
    _completions: deque[Completion]
    _wakeup: threading.Event
    _callbacks: set[TaskCallback]
    # shared with the inline mode, defined by RunLoop
    _fire_timers: Callable[[float], Iterable[TaskWorker]]
    _run_due: Callable[[TaskWorker, list[TaskWorker]], bool]
    _commit: Callable[[list[TaskWorker]], None]
    _check_finished: Callable[[], str | None]

    def _run_scheduled(self) -> str:
        stopping_since: float | None = None
        while True:
            self._wakeup.clear()
            if self._completions:
                self._drain_completions()
            now = self.clock()
            if self.requests.pending or now >= self._next_deadline:
                self.requests.looked()
                self._fire_timers(now)
                if (self._stop or self.requests.shutdown_all) and stopping_since is None:
                    stopping_since = now
            if stopping_since is not None:
                self._enforce_shutdown_timeout(now - stopping_since)
            if self._callbacks and self.callback_timeout_s is not None:
                self._check_callback_timeouts(now)
            step = self._schedule(stopping=stopping_since is not None)
            status = self._finish(step, stopping=stopping_since is not None)
            if status is not None:
                return status
            if not step.progress:
                self._choose_or_block(step)

    # -- step 2: shutdown -----------------------------------------------------------------------
    def _enforce_shutdown_timeout(self, stopping_for_s: float) -> None:
        if stopping_for_s > self.shutdown_s:
            busy = {w.ti.task_name: w.in_flight for w in self.workers.values() if w.busy}
            raise ContainerError(
                f"tasks did not finish their in-flight work within task.shutdown.ms={int(self.shutdown_s * 1000)} "
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
        self._commit(commits)
        return step

    def _start_pending(self, w: TaskWorker) -> bool:
        """Start queued messages while the task has capacity; True if anything started (or its
        end of stream became due and can run on the next pass)."""
        started = False
        while w.can_start(self.max_concurrency):
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
        if len(w.pending) >= self.pending_limit:
            step.can_choose = False

    # -- step 4: finishing ----------------------------------------------------------------------
    def _finish(self, step: _Pass, *, stopping: bool) -> str | None:
        tasks = self.workers.values()
        if stopping and step.running == 0 and not any(w.exclusive_running for w in tasks):
            self._stop = True  # so the check below commits every task and reports the shutdown
            return self._check_finished()
        if all(w.done for w in tasks):
            return self._check_finished()  # completed
        if all(w.done or w.ti.coordinator.shutdown_requested for w in tasks):
            self.requests.ask_shutdown_all()
        return None

    # -- step 5: choosing or blocking -----------------------------------------------------------
    def _choose_or_block(self, step: _Pass) -> None:
        metrics = self.metrics
        if not step.can_choose:
            metrics.blocked_waits += 1
            self._wakeup.wait(min(self.poll_timeout_s, max(0.0, self._next_deadline - self.clock())))
            return
        if step.running:
            env = self.consumers.choose(0.0)
            if env is None:  # work is running: wait for its completion rather than poll
                metrics.blocked_waits += 1
                self._wakeup.wait(0.002)
                return
        else:
            env = self.consumers.choose(min(self.poll_timeout_s, max(0.0, self._next_deadline - self.clock())))
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
            self._callbacks.add(callback)
            try:
                w.ti.call_process(env, callback)
            except Exception as exc:
                raise w.ti.process_error(env, exc) from exc
        elif self._pool is not None:
            self._pool.submit(self._process_in_pool, w, env, ssp, entry)
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
        self._completions.append(ProcessDone(w, ssp, entry, exc))
        self._wakeup.set()

    def _window_in_pool(self, w: TaskWorker) -> None:
        exc: BaseException | None = None
        try:
            w.ti.window()
        except BaseException as e:  # noqa: BLE001 - reported on the loop thread
            exc = e
        self._completions.append(WindowDone(w, exc))
        self._wakeup.set()

    def _make_on_done(
        self, w: TaskWorker, ssp: SystemStreamPartition, entry: InFlight
    ) -> Callable[[TaskCallback, BaseException | None], None]:
        completions, wakeup = self._completions, self._wakeup

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
        completions = self._completions
        while completions:
            completions.popleft().settle(self)

    def _forget_callback(self, callback: TaskCallback) -> None:
        self._callbacks.discard(callback)

    def _check_callback_timeouts(self, now: float) -> None:
        limit = self.callback_timeout_s
        assert limit is not None
        for cb in list(self._callbacks):
            if now - cb.started_at > limit and cb.expire():
                raise CallbackTimeoutError(
                    f"task {cb.task_name!r} did not complete the message at {coordinates(cb.envelope)} within "
                    f"task.callback.timeout.ms={int(limit * 1000)}",
                    cb.task_name,
                    cb.envelope,
                )
