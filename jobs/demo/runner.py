"""Run one job of the example applications and wait for it, stopping it gracefully when
its work is done.

``thread`` (tests) or ``spark`` (the product's runner, on a session the caller passes so the
demo pays for one). Both go through the runtime's own runners — the job coordinator, the
JobModel over HTTP, the containers — so the demo shows the real path. A bounded job ends by
itself; an unbounded one (user_classification's real-time stream) is stopped gracefully once
``stop_when()`` says its work is done: containers commit and return.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from samza_dagster.config import Config

RUNNERS = ("thread", "spark")


@dataclass
class JobOutcome:
    job_name: str
    runner: str
    status: str
    elapsed_s: float
    messages_per_stream: dict[str, int] = field(default_factory=dict)
    #: the plan (high-level applications only)
    plan: Any = None

    @property
    def messages_processed(self) -> int:
        return sum(self.messages_per_stream.values())


class JobFailedError(RuntimeError):
    pass


def run_job(
    config: Config,
    *,
    runner: str = "thread",
    spark: Any = None,
    stop_when: Callable[[], bool] | None = None,
    timeout_s: float = 300.0,
) -> JobOutcome:
    if runner not in RUNNERS:
        raise ValueError(f"runner must be one of {RUNNERS}, got {runner!r}")
    config = config.with_overrides({"job.factory.class": runner})
    started = time.monotonic()
    job = _job_runner(config, runner, spark)
    name = config.get_str("job.name") or "job"
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = job.run()
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            box["error"] = exc

    worker = threading.Thread(target=target, name=f"demo-{runner}-{name}", daemon=True)
    worker.start()
    _wait(worker, job.stop, stop_when, timeout_s, name)
    if "error" in box:
        raise JobFailedError(f"job {name} failed: {box['error']}") from box["error"]
    result = box["result"]
    if not result.succeeded:
        raise JobFailedError(result.summary_line())
    statuses = ",".join(sorted({s.status.value for s in result.summaries}))
    plan = None
    if config.get_str("app.class"):
        from samza_dagster.planner import plan_from_config

        plan = plan_from_config(config)
    return JobOutcome(name, runner, statuses, time.monotonic() - started, result.messages_per_stream, plan)


def _job_runner(config: Config, runner: str, spark: Any) -> Any:
    if runner == "spark":
        from samza_dagster.runtime.spark_runner import SparkJobRunner

        return SparkJobRunner(config, spark=spark)
    from samza_dagster.runtime.thread_runner import ThreadJobRunner

    return ThreadJobRunner(config)


def _wait(
    worker: threading.Thread,
    stop: Callable[[], None],
    stop_when: Callable[[], bool] | None,
    timeout_s: float,
    name: str,
) -> None:
    deadline = time.monotonic() + timeout_s
    stopping = False
    while worker.is_alive():
        worker.join(0.2)
        if not stopping and stop_when is not None and stop_when():
            stop()
            stopping = True
        if time.monotonic() > deadline and not stopping:
            stop()
            stopping = True
            worker.join(60)
            raise JobFailedError(f"job {name} did not finish within {timeout_s:.0f} s (stopped)")
