"""Runners: ``run_job(config)`` runs a job with the runner ``job.factory.class`` names;
``create_runner(config)`` returns the runner itself, for a caller that must stop it gracefully
(``runner.stop()`` from any thread while ``runner.run()`` blocks) or watch its job coordinator
(``runner.coordinator``, set once ``run()`` has started it).

Adding a runner is a :class:`JobRunner` subclass (it supplies how its containers start, are
awaited and stop; the base holds the restart loop) and one entry in :data:`RUNNERS`
(``"name": "module:Class"``, the class taking the config and keyword arguments).
"""

from __future__ import annotations

import importlib
from typing import Any

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.config.job_config import JobConfig
from samza_dagster.runtime.result import JobResult
from samza_dagster.runtime.runner import JobRunner

RUNNERS: dict[str, str] = {
    "thread": "samza_dagster.runtime.thread_runner:ThreadJobRunner",
    "process": "samza_dagster.runtime.process_runner:ProcessJobRunner",
    "spark": "samza_dagster.runtime.spark_runner:SparkJobRunner",
}

FACTORY_KEY = keys.JOB_FACTORY_CLASS.name


def run_job(config: Config, **kwargs: Any) -> JobResult:
    """Run the job to its end (bounded inputs) or until stopped; returns the runner's result."""
    return create_runner(config, **kwargs).run()


def create_runner(config: Config, **kwargs: Any) -> JobRunner:
    """The runner ``job.factory.class`` names, not yet started."""
    name = JobConfig(config).factory
    path = RUNNERS.get(name)
    if path is None:
        raise ConfigError(
            f"config key {FACTORY_KEY!r}: unknown runner {name!r}; known: {', '.join(RUNNERS)}", key=FACTORY_KEY
        )
    module, _, class_name = path.partition(":")
    return getattr(importlib.import_module(module), class_name)(config, **kwargs)


__all__ = ["RUNNERS", "JobResult", "JobRunner", "create_runner", "run_job"]
