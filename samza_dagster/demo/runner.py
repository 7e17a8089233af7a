"""Run one job of the example applications on a chosen runner and wait for it.

``thread`` (tests: containers as threads here) or ``spark`` (the product's runner: containers
as one Spark barrier stage on a session the caller passes, so the demo pays for one session).
A bounded job ends by itself; an unbounded one (user_classification's real-time stream) is
stopped gracefully once ``stop_when()`` says its work is done — containers commit and return.

Why not ``samza_dagster.runtime.run_job``: it was not in the tree when the applications were
written; the thread path here is the same SamzaContainer / ``create_container`` the runners use.
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
    if runner == "spark":
        return _run_spark(config, spark, stop_when, timeout_s, started)
    return _run_threads(config, stop_when, timeout_s, started)


def _wait(worker: threading.Thread, stop: Callable[[], None], stop_when: Callable[[], bool] | None,
          timeout_s: float, name: str) -> None:
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


def _run_spark(config: Config, spark: Any, stop_when: Any, timeout_s: float, started: float) -> JobOutcome:
    from samza_dagster.runtime.spark_runner import SparkJobRunner

    job = SparkJobRunner(config, spark=spark)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = job.run()
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            box["error"] = exc

    worker = threading.Thread(target=target, name=f"demo-spark-{job.job_name}", daemon=True)
    worker.start()
    _wait(worker, job.stop, stop_when, timeout_s, job.job_name)
    if "error" in box:
        raise JobFailedError(f"job {job.job_name} failed: {box['error']}") from box["error"]
    result = box["result"]
    if not result.succeeded:
        raise JobFailedError(result.summary_line())
    statuses = ",".join(sorted({s.status.value for s in result.summaries}))
    plan = None
    if config.get_str("app.class"):
        from samza_dagster.planner import plan_from_config

        plan = plan_from_config(config)
    return JobOutcome(job.job_name, "spark", statuses, time.monotonic() - started, result.messages_per_stream, plan)


def _run_threads(config: Config, stop_when: Any, timeout_s: float, started: float) -> JobOutcome:
    from samza_dagster.container import SamzaContainer
    from samza_dagster.coordinator.model_builder import build_job_model

    stop_event = threading.Event()
    plan = None
    if config.get_str("app.class"):
        from samza_dagster.operators import create_container, prepare_application

        prepared = prepare_application(config)
        plan = prepared.plan
        model = build_job_model(prepared.config, input_streams=prepared.input_streams, exclude=prepared.side_inputs).model
        containers = [create_container(prepared, cid, model, stop_event=stop_event) for cid in sorted(model.containers)]
    else:
        model = build_job_model(config).model
        containers = [SamzaContainer(cid, model, stop_event=stop_event) for cid in sorted(model.containers)]
    errors: list[BaseException] = []

    def run_all() -> None:
        threads = [threading.Thread(target=_run_one, args=(c, errors), daemon=True) for c in containers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def stop() -> None:
        stop_event.set()
        for c in containers:
            c.stop()

    name = config.get_str("job.name") or "job"
    worker = threading.Thread(target=run_all, name=f"demo-threads-{name}", daemon=True)
    worker.start()
    _wait(worker, stop, stop_when, timeout_s, name)
    if errors:
        raise JobFailedError(f"job {name} failed: {type(errors[0]).__name__}: {errors[0]}") from errors[0]
    per_stream: dict[str, int] = {}
    statuses = set()
    for c in containers:
        if c.summary is None:
            continue
        statuses.add(c.summary.status.value)
        for s, n in c.summary.messages_per_stream.items():
            per_stream[s] = per_stream.get(s, 0) + n
    return JobOutcome(name, "thread", ",".join(sorted(statuses)), time.monotonic() - started, per_stream, plan)


def _run_one(container: Any, errors: list[BaseException]) -> None:
    try:
        container.run()
    except BaseException as exc:  # noqa: BLE001 - reported by the caller
        errors.append(exc)
