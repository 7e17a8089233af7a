"""Samza's coordinator stream writer tool (``run-coordinator-stream-writer.sh``; the
``coordinator-stream-writer`` command and the Dagster coordinator-stream resource): one config
change written to a job's coordinator stream, set-once keys checked first."""

from __future__ import annotations

from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.coordinator.stream.messages import SET_CONFIG, CoordinatorStreamMessage
from samza_dagster.coordinator.stream.reader_writer import (
    CoordinatorStreamLocation,
    CoordinatorStreamReader,
    CoordinatorStreamWriter,
)
from samza_dagster.coordinator.stream.submission import check_set_once

SOURCE = "coordinator-stream-writer"
WRITER_TYPES = ("set-config", "delete")


def run_coordinator_stream_writer(
    config: Config, msg_type: str, key: str, value: str | None, *, force_reset: bool = False
) -> str:
    """Write one config message to the job's coordinator stream, as Samza's
    ``run-coordinator-stream-writer.sh`` does: ``set-config`` sets ``key`` to ``value``,
    ``delete`` removes ``key`` from the job's config.

    A running JobCoordinator picks it up within one monitor interval. A change to a set-once key
    of a stateful job is refused (as at submission) unless ``force_reset``. Returns the line to
    tell the user: what was written, to which stream, at which offset.
    """
    if msg_type not in WRITER_TYPES:
        raise ConfigError(f"--type must be one of {', '.join(WRITER_TYPES)}; got {msg_type!r}", key="--type")
    if not key:
        raise ConfigError("--key is required", key="--key")
    set_value: str | None = None  # the value a set-config writes (None: a delete)
    if msg_type == "set-config":
        if value is None:
            raise ConfigError(f"--value is required with --type set-config (key {key!r})", key="--value")
        set_value = value
        message = CoordinatorStreamMessage.set_config(SOURCE, key, value)
    else:
        message = CoordinatorStreamMessage.delete(SOURCE, SET_CONFIG, key)
    with CoordinatorStreamWriter(config, SOURCE) as writer:
        if not force_reset and set_value is not None:
            with CoordinatorStreamReader(config) as reader:
                state, _ = reader.read_state()
            if state.config:
                check_set_once(state.config, {**state.config, key: set_value})
        writer.send(message)
    where = CoordinatorStreamLocation.from_config(config)
    with CoordinatorStreamReader(config) as reader:
        messages, _ = reader.read(None)
    offset = next((o for o, m in reversed(messages) if m.type == SET_CONFIG and m.key == key), "unknown")
    what = f"set-config {key}={value}" if msg_type == "set-config" else f"delete {key}"
    return f"wrote {what} to the coordinator stream {where.system}.{where.stream} at offset {offset}"
