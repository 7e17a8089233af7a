"""Samza's coordinator stream writer tool (``run-coordinator-stream-writer.sh``; the
``coordinator-stream-writer`` command and the Dagster coordinator-stream resource): one config
change written to a job's coordinator stream, set-once keys checked first.

A change reaches a job only when it is written where the job reads its coordinator stream — on
the embedded log, under the same root. The line the tool prints therefore names the system and
where it is (the log root, the Kafka brokers), and when no job has ever run against the stream
there (it held no job submission) the tool warns: the job is most likely elsewhere, e.g. the
Dagster UI's ``SAMZA_LOG_PATH``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.coordinator.stream.messages import SET_CONFIG, CoordinatorStreamMessage
from samza_dagster.coordinator.stream.reader_writer import (
    CoordinatorStreamLocation,
    CoordinatorStreamReader,
    CoordinatorStreamWriter,
)
from samza_dagster.coordinator.stream.submission import SOURCE as SUBMISSION_SOURCE
from samza_dagster.coordinator.stream.submission import check_set_once
from samza_dagster.system.errors import StreamNotFoundError

SOURCE = "coordinator-stream-writer"
WRITER_TYPES = ("set-config", "delete")


@dataclass(frozen=True)
class CoordinatorStreamWrite:
    """What the tool wrote, to tell the user: ``line`` (what, to which stream on which system
    where, at which offset) and ``warning`` when no job has run against that stream there."""

    line: str
    warning: str | None = None

    def __str__(self) -> str:
        return self.line


def system_whereabouts(config: Config, system: str) -> str:
    """Where ``system`` is, in the words a user checks it by: the embedded log's root, the Kafka
    brokers, or the factory of another system."""
    factory = (config.get_str(keys.SYSTEM_FACTORY.key(system=system)) or "log").strip()
    if factory == "log":
        return f"the embedded log at {os.path.abspath(os.path.expanduser(keys.LOG_PATH.get(config, system=system)))}"
    if factory == "kafka":
        servers = config.get_str(keys.prefix(keys.SYSTEM_CONSUMER_KEYS, system=system) + "bootstrap.servers") or (
            config.get_str(keys.prefix(keys.SYSTEM_PRODUCER_KEYS, system=system) + "bootstrap.servers")
        )
        return f"Kafka at {servers}"
    return f"system factory {factory}"


def run_coordinator_stream_writer(
    config: Config, msg_type: str, key: str, value: str | None, *, force_reset: bool = False
) -> CoordinatorStreamWrite:
    """Write one config message to the job's coordinator stream, as Samza's
    ``run-coordinator-stream-writer.sh`` does: ``set-config`` sets ``key`` to ``value``,
    ``delete`` removes ``key`` from the job's config.

    A running JobCoordinator picks it up within one monitor interval. A change to a set-once key
    of a stateful job is refused (as at submission) unless ``force_reset``. Returns what to tell
    the user: what was written, to which stream on which system where, at which offset — and a
    warning when no job has ever run against that stream there.
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
    where = CoordinatorStreamLocation.from_config(config)
    try:
        with CoordinatorStreamReader(config) as reader:
            before, _ = reader.read(None)
    except StreamNotFoundError:
        before = []
    job_ran = any(m.source == SUBMISSION_SOURCE for _, m in before)
    with CoordinatorStreamWriter(config, SOURCE) as writer:
        if not force_reset and set_value is not None:
            with CoordinatorStreamReader(config) as reader:
                state, _ = reader.read_state()
            if state.config:
                check_set_once(state.config, {**state.config, key: set_value})
        writer.send(message)
    with CoordinatorStreamReader(config) as reader:
        messages, _ = reader.read(None)
    offset = next((o for o, m in reversed(messages) if m.type == SET_CONFIG and m.key == key), "unknown")
    what = f"set-config {key}={value}" if msg_type == "set-config" else f"delete {key}"
    system = system_whereabouts(config, where.system)
    warning = None
    if not job_ran:
        warning = f"no job has run against the coordinator stream {where} on {system}: a job running elsewhere will not see this change"
        if system.startswith("the embedded log"):
            warning += (
                " — if it runs on another log root (the Dagster UI's SAMZA_LOG_PATH), write it there: "
                "SAMZA_LOG_PATH=<that root> samza-dagster coordinator-stream-writer ..."
            )
    return CoordinatorStreamWrite(
        f"wrote {what} to the coordinator stream {where} on {system} at offset {offset}", warning
    )
