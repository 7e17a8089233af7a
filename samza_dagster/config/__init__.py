"""Configuration: Config, .properties loading and typed views over Samza's keys."""

from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.config.job_config import JobConfig
from samza_dagster.config.properties import load_properties, parse_overrides, parse_properties
from samza_dagster.config.system_config import StorageConfig, StreamConfig, SystemConfig
from samza_dagster.config.task_config import TaskConfig

__all__ = [
    "Config",
    "ConfigError",
    "JobConfig",
    "StorageConfig",
    "StreamConfig",
    "SystemConfig",
    "TaskConfig",
    "load_properties",
    "parse_overrides",
    "parse_properties",
]
