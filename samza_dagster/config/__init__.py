"""Configuration: Config, .properties loading and typed views over Samza's keys."""

from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.config.properties import load_properties, parse_overrides, parse_properties

__all__ = ["Config", "ConfigError", "load_properties", "parse_overrides", "parse_properties"]


def __getattr__(name: str):  # typed views import the system model; load them lazily
    if name in ("JobConfig",):
        from samza_dagster.config.job_config import JobConfig

        return JobConfig
    if name in ("TaskConfig",):
        from samza_dagster.config.task_config import TaskConfig

        return TaskConfig
    if name in ("SystemConfig", "StreamConfig", "StorageConfig"):
        from samza_dagster.config import system_config

        return getattr(system_config, name)
    raise AttributeError(name)
