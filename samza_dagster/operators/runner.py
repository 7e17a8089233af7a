"""``run_application(config)``: one job of an application, its containers as threads in this
process (the JobModel built straight from the planned inputs). The runners of
:mod:`samza_dagster.runtime` reach the same code through ``prepare_application`` /
``create_container``; this is the self-contained path used by tests and the benchmark."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from samza_dagster.config import Config
from samza_dagster.coordinator.model_builder import build_job_model
from samza_dagster.operators.prepare import PreparedApplication, create_container, prepare_application


@dataclass
class ApplicationRun:
    prepared: PreparedApplication
    containers: list[Any]
    summaries: list[Any]
    errors: list[BaseException]

    @property
    def tasks(self) -> dict[str, Any]:
        return self.prepared.task_factory.tasks


def run_application(
    config: Config | Mapping[str, Any], *, stop_event: threading.Event | None = None, timeout_s: float | None = None
) -> ApplicationRun:
    """Run until every container ends (bounded inputs), ``stop_event`` is set, or
    ``timeout_s`` passes (then containers are stopped gracefully: they commit). Raises the
    first container error."""
    prepared = prepare_application(config)
    model = build_job_model(prepared.config, input_streams=prepared.input_streams, exclude=prepared.side_inputs).model
    containers = [create_container(prepared, cid, model, stop_event=stop_event) for cid in sorted(model.containers)]
    summaries: list[Any] = [None] * len(containers)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            summaries[i] = containers[i].run()
        except BaseException as exc:  # noqa: BLE001 - reported to the caller
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,), name=f"app-container-{i}", daemon=True) for i in range(len(containers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout_s)
        if t.is_alive():
            for c in containers:
                c.stop()
            t.join(30)
    if errors:
        raise errors[0]
    return ApplicationRun(prepared, containers, summaries, errors)
