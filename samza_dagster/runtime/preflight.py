"""Checks of a job's config before anything is created or started: the runner exists, the task
or application class imports, and every typed job and task setting parses. A job that would
fail on its config fails here, as a config error (exit 2), before a stream is created or a
Spark session started — not minutes later inside a container."""

from __future__ import annotations

from samza_dagster.config import Config
from samza_dagster.config.job_config import JobConfig
from samza_dagster.config.task_config import TaskConfig


def check_job_config(config: Config) -> None:
    """Raise the ConfigError (naming the key) of the first setting that does not parse."""
    for view in (JobConfig(config), TaskConfig(config)):
        for name, attr in vars(type(view)).items():
            if isinstance(attr, property):
                getattr(view, name)
    from samza_dagster.runtime import RUNNERS, FACTORY_KEY
    from samza_dagster.config import ConfigError

    factory = JobConfig(config).factory
    if factory not in RUNNERS:
        raise ConfigError(f"config key {FACTORY_KEY!r}: unknown runner {factory!r}; known: {', '.join(RUNNERS)}",
                          key=FACTORY_KEY)
    if config.get_str("app.class"):
        from samza_dagster.planner import load_application

        load_application(config)
    elif config.get_str("task.class"):
        from samza_dagster.serde.registry import load_class

        load_class(config.get_str("task.class"), "task.class")
