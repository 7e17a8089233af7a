"""Runners: ``run_job(config)`` runs a job with the runner ``job.factory.class`` names.

Adding a runner is one entry in :data:`RUNNERS` (``"name": "module:function"``, the function
taking the config and returning a JobResult-like object with ``succeeded``/``summary_line()``).
"""

from __future__ import annotations

from typing import Any

from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.runtime.result import JobResult

RUNNERS: dict[str, str] = {
    "thread": "samza_dagster.runtime.thread_runner:run_thread_job",
    "process": "samza_dagster.runtime.process_runner:run_process_job",
    "spark": "samza_dagster.runtime.spark_runner:run_spark_job",
}

FACTORY_KEY = "job.factory.class"


def run_job(config: Config, **kwargs: Any) -> Any:
    """Run the job to its end (bounded inputs) or until stopped; returns the runner's result."""
    import importlib

    from samza_dagster.config.job_config import JobConfig

    name = JobConfig(config).factory
    path = RUNNERS.get(name)
    if path is None:
        raise ConfigError(f"config key {FACTORY_KEY!r}: unknown runner {name!r}; known: {', '.join(RUNNERS)}", key=FACTORY_KEY)
    module, _, fn = path.partition(":")
    return getattr(importlib.import_module(module), fn)(config, **kwargs)


__all__ = ["RUNNERS", "JobResult", "run_job"]
