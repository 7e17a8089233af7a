"""What the thread and process runners share: job preparation (a high-level application is
planned first), unmasking secrets in a served JobModel, and building a container."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.secrets import MASK
from samza_dagster.container import SamzaContainer
from samza_dagster.model import SystemStream
from samza_dagster.operators import create_container, prepare_application

#: How often a container asks the coordinator whether a newer JobModel is served.
WATCH_INTERVAL_KEY = keys.JOB_COORDINATOR_WATCH_INTERVAL_MS.name
DEFAULT_WATCH_INTERVAL_MS: int = keys.JOB_COORDINATOR_WATCH_INTERVAL_MS.default
MAX_RESTARTS_KEY = keys.JOB_MAX_MODEL_RESTARTS.name
DEFAULT_MAX_RESTARTS: int = keys.JOB_MAX_MODEL_RESTARTS.default


@dataclass
class PreparedJob:
    config: Config
    input_streams: dict[SystemStream, int] | None = None
    exclude: frozenset[SystemStream] = frozenset()


def prepare_job(config: Config) -> PreparedJob:
    """``app.class`` jobs are planned (streams created, inputs named); ``task.class`` jobs need
    nothing: the coordinator reads ``task.inputs``."""
    if not keys.APP_CLASS.get(config):
        return PreparedJob(config)

    prepared = prepare_application(config)
    return PreparedJob(prepared.config, dict(prepared.input_streams), frozenset(prepared.exclude))


def unmask(model: Any, secrets: dict[str, str]) -> Any:
    """The served JobModel masks secrets; a container gets them from its launcher."""
    restore = {k: secrets[k] for k, v in model.config.items() if v == MASK and k in secrets}
    if not restore:
        return model
    return dataclasses.replace(model, config=Config({**dict(model.config), **restore}))


def watch_interval_s(config: Config) -> float:
    ms = config.get_int(WATCH_INTERVAL_KEY, DEFAULT_WATCH_INTERVAL_MS) or DEFAULT_WATCH_INTERVAL_MS
    return ms / 1000.0


def new_container(container_id: str, model: Any, watcher: Any = None, stop_event: Any = None) -> Any:
    """A SamzaContainer: ``task.class`` jobs build their task class; an ``app.class`` job's
    operator graph is rebuilt from the application class (streams already created)."""
    config = model.config
    if not keys.APP_CLASS.get(config):
        return SamzaContainer(container_id, model, job_model_watcher=watcher, stop_event=stop_event)

    prepared = prepare_application(config, create_streams=False)
    return create_container(prepared, container_id, model, job_model_watcher=watcher, stop_event=stop_event)
