"""Runners: ``run_job(config)`` runs a job with the runner ``job.factory.class`` names;
``create_runner(config)`` returns the runner itself, for a caller that must stop it gracefully
(``runner.stop()`` from any thread while ``runner.run()`` blocks) or watch its job coordinator
(``runner.coordinator``, set once ``run()`` has started it).

Adding a runner is one entry in :data:`RUNNERS` (``"name": "module:Class"``, the class taken the
config and keyword arguments, with ``run()`` returning a JobResult-like object with
``succeeded``/``summary_line()`` and ``stop()``).
"""

from __future__ import annotations

from typing import Any, Protocol

from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.runtime.result import JobResult

RUNNERS: dict[str, str] = {
    "thread": "samza_dagster.runtime.thread_runner:ThreadJobRunner",
    "process": "samza_dagster.runtime.process_runner:ProcessJobRunner",
    "spark": "samza_dagster.runtime.spark_runner:SparkJobRunner",
}

FACTORY_KEY = "job.factory.class"


class JobRunner(Protocol):
    """What every runner offers: ``run()`` blocks until the job ends; ``stop()`` (any thread)
    asks every container to finish in-flight work, commit and exit; ``coordinator`` is the
    JobCoordinator serving the job's model while ``run()`` runs (None before)."""

    coordinator: Any

    def run(self) -> Any: ...

    def stop(self) -> None: ...


def run_job(config: Config, **kwargs: Any) -> Any:
    """Run the job to its end (bounded inputs) or until stopped; returns the runner's result."""
    return create_runner(config, **kwargs).run()


def create_runner(config: Config, **kwargs: Any) -> JobRunner:
    """The runner ``job.factory.class`` names, not yet started."""
    import importlib

    from samza_dagster.config.job_config import JobConfig

    name = JobConfig(config).factory
    path = RUNNERS.get(name)
    if path is None:
        raise ConfigError(f"config key {FACTORY_KEY!r}: unknown runner {name!r}; known: {', '.join(RUNNERS)}", key=FACTORY_KEY)
    module, _, class_name = path.partition(":")
    return getattr(importlib.import_module(module), class_name)(config, **kwargs)


__all__ = ["RUNNERS", "JobResult", "JobRunner", "create_runner", "run_job"]
