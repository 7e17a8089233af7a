"""RunLoopConfig: every setting the run loop runs with, in one frozen object (Samza's
RunLoopConfig), built once from the job's config — so the loop's constructor takes one settings
object instead of a dozen keywords, and its times are seconds (None: never) decided here."""

from __future__ import annotations

from dataclasses import dataclass

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.job_config import JobConfig
from samza_dagster.config.task_config import TaskConfig


def _seconds(ms: int) -> float | None:
    """A positive number of milliseconds in seconds; None for 0 or less (the timer is off)."""
    return ms / 1000.0 if ms > 0 else None


@dataclass(frozen=True, slots=True)
class RunLoopConfig:
    #: ``task.window.ms``: how often window() runs (None: never)
    window_s: float | None = None
    #: ``task.commit.ms``: how often every task commits (None: only when asked and at the end)
    commit_s: float | None = 60.0
    #: ``job.container.thread.pool.size``: > 1 runs process/window on a pool of that many threads
    thread_pool_size: int = 0
    #: ``task.max.concurrency``: messages in flight per task (at least 1)
    max_concurrency: int = 1
    #: ``task.callback.timeout.ms``: longest an async task's message may stay incomplete (None: no limit)
    callback_timeout_s: float | None = None
    #: longest one choose waits for a message, so timers and requests are seen while idle
    poll_timeout_s: float = 0.05
    #: chosen envelopes one task may have queued before the loop stops choosing (scheduled mode)
    pending_limit: int = 256
    #: ``metrics.timer.enabled`` (as Samza): time each process() call
    timer_enabled: bool = True
    #: ``task.shutdown.ms``: longest in-flight work may take to finish after a stop request
    shutdown_s: float = float("inf")

    def __post_init__(self) -> None:
        # at least one message in flight, and a queue that can hold what may be in flight
        object.__setattr__(self, "max_concurrency", max(1, self.max_concurrency))
        object.__setattr__(self, "pending_limit", max(self.pending_limit, self.max_concurrency))

    @property
    def scheduled_by_settings(self) -> bool:
        """The settings alone call for the scheduled mode (an async task does too)."""
        return self.thread_pool_size > 1 or self.max_concurrency > 1

    @classmethod
    def from_config(cls, config: Config) -> RunLoopConfig:
        task = TaskConfig(config)
        shutdown = _seconds(task.shutdown_ms)
        return cls(
            window_s=_seconds(task.window_ms),
            commit_s=_seconds(task.commit_ms),
            thread_pool_size=JobConfig(config).thread_pool_size,
            max_concurrency=task.max_concurrency,
            callback_timeout_s=_seconds(task.callback_timeout_ms),
            timer_enabled=keys.METRICS_TIMER_ENABLED.get(config),
            shutdown_s=float("inf") if shutdown is None else shutdown,
        )
