"""Checks of a job's config before anything is created or started: every set key with a
definition (:mod:`samza_dagster.config.keys`) parses as its type, every serde named resolves, the
runner exists, the task or application class imports, and the job and task views' own rules
hold; a key nothing reads that is a near miss of a defined one is refused too (unless
``job.config.misspelled.keys=warn``). A job that would fail on its config fails here, as a config error (exit 2), before a
stream is created or a Spark session started — not minutes later inside a container. A key that
nothing reads gets one WARNING naming the key it most likely meant."""

from __future__ import annotations

from samza_dagster.application import StreamApplicationDescriptor
from samza_dagster.application.specs import BatchMapOperatorSpec
from samza_dagster.config import Config, ConfigError, keys
from samza_dagster.config.job_config import JobConfig
from samza_dagster.config.keys import SERDE
from samza_dagster.config.preflight import check_unread_keys, check_values, definition_of
from samza_dagster.config.task_config import TaskConfig
from samza_dagster.container.exactly_once import check_exactly_once
from samza_dagster.container.run_loop import check_batch_task_settings
from samza_dagster.coordinator.http import check_bind
from samza_dagster.planner import load_application
from samza_dagster.runtime import RUNNERS
from samza_dagster.serde.registry import SerdeRegistry, load_class
from samza_dagster.task.api import is_async_task, is_batch_task


def check_job_config(config: Config) -> None:
    """Refuse a near miss of a defined key, warn about other keys nothing reads; raise the
    ConfigError (naming the key) of the first setting that does not parse or names something
    that does not exist."""
    check_unread_keys(config)
    check_job_values(config)


def check_job_values(config: Config) -> None:
    """The checks of :func:`check_job_config` that raise, without its warnings (a caller that
    reports unread keys its own way — the Dagster op, in the run's log)."""
    check_values(config)
    for view in (JobConfig(config), TaskConfig(config)):
        for name, attr in vars(type(view)).items():
            if isinstance(attr, property):
                getattr(view, name)
    from samza_dagster.metrics.config import metrics_config

    metrics_config(config)  # reporters: class, stream on a configured system, positive interval
    check_bind(keys.JOB_COORDINATOR_HTTP_HOST.get(config), keys.JOB_COORDINATOR_HTTP_TOKEN.get(config))
    factory = JobConfig(config).factory
    if factory not in RUNNERS:
        raise ConfigError(
            f"config key {keys.JOB_FACTORY_CLASS.name!r}: unknown runner {factory!r}; known: {', '.join(RUNNERS)}",
            key=keys.JOB_FACTORY_CLASS.name,
        )
    check_serde_names(config)
    task_is_async = False
    pool, concurrency = JobConfig(config).thread_pool_size, TaskConfig(config).max_concurrency
    off_the_inline_loop = pool > 1 or concurrency > 1
    if keys.APP_CLASS.get(config):
        app = load_application(config)
        # describing the graph runs user code: only when the settings would refuse a batch map
        if off_the_inline_loop and _has_batch_map(StreamApplicationDescriptor.of(app, config)):
            check_batch_task_settings(pool, concurrency)
    elif task_class := TaskConfig(config).task_class:
        cls = load_class(task_class, keys.TASK_CLASS.name)
        task_is_async = is_async_task(cls)
        if is_batch_task(cls):
            check_batch_task_settings(pool, concurrency)
    check_exactly_once(config, task_is_async)


def _has_batch_map(descriptor: StreamApplicationDescriptor) -> bool:
    """Whether the application's graph holds a ``map_batches`` (its tasks then process batches)."""
    return any(isinstance(spec, BatchMapOperatorSpec) for spec in descriptor.all_operator_specs())


def check_serde_names(config: Config) -> None:
    """Every key naming a serde (a system's, a stream's, a store's) names one that exists: built
    in or registered with ``serializers.registry.<name>.class`` (whose class is imported)."""
    registry = SerdeRegistry(config)
    for key, value in config.items():
        definition = definition_of(key)
        if definition is not None and definition.kind is SERDE and value.strip():
            registry.get(value.strip(), key)
