"""The streams a job declares, created before it runs (``samza-dagster run``).

A job declares the streams it reads (``task.inputs``, or an application's inputs and side
inputs) and the ones it writes (an application's outputs; for a low-level task, whose outputs are
code, every stream given ``streams.<id>.partitions`` in its config). Each one that does not exist
written by the job is created with its partition count — from the config, or as the planner
infers it — on a system whose admin can create streams. A stream that cannot be created (no
partition count known, ``--no-create-streams``, or a system that cannot) is reported with the
command that creates it. A stream the job *reads* is never created: a missing input would only
give a job that processes nothing, so it is a config error naming the stream (and the existing
stream it most likely meant, or where the system looked: a files input's directory), raised
before any stream is created; so is an input that exists with no partition (a files input's
directory without a file to read).
Intermediate streams, checkpoints, changelogs and the coordinator stream are the job's own: it
creates them when it starts.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import dataclass, field

from samza_dagster.config import Config, ConfigError, keys
from samza_dagster.config.job_config import JobConfig
from samza_dagster.config.system_config import StreamConfig
from samza_dagster.config.task_config import TaskConfig
from samza_dagster.model import StreamSpec
from samza_dagster.planner import PlanningError, configured_plan
from samza_dagster.planner.admins import fetch_metadata
from samza_dagster.system.errors import SamzaSystemError
from samza_dagster.system.factories import absent_input_hint, system_admin

READ_ROLES = frozenset({"input", "bootstrap", "side-input"})


@dataclass(frozen=True)
class DeclaredStream:
    stream_id: str
    system: str
    physical_name: str
    partitions: int | None
    #: the job reads it (an input, bootstrap or side input), as opposed to writing it
    reads: bool = False

    @property
    def name(self) -> str:
        return f"{self.system}.{self.physical_name}"


class MissingStreamsError(SamzaSystemError):
    """Streams the job needs that do not exist, each with the command that creates it."""

    def __init__(self, missing: list[DeclaredStream], config_path: str | None, why: str) -> None:
        where = f" --config-path {config_path}" if config_path else ""
        lines = [
            f"{s.name}: samza-dagster streams create{where} {s.name} --partitions "
            f"{s.partitions if s.partitions is not None else 'N'}"
            for s in missing
        ]
        super().__init__(f"missing stream(s) ({why}); create them with:\n  " + "\n  ".join(lines))
        self.missing = missing


class MissingInputsError(ConfigError):
    """Streams the job reads that do not exist, or exist without a partition: each named, with
    the existing stream it most likely meant, where the system looked, or the command that
    creates it. A config error: the job as written reads nothing."""

    def __init__(self, missing: list[tuple[DeclaredStream, bool, str]], config: Config) -> None:
        key = keys.TASK_INPUTS.name if TaskConfig(config).inputs else None
        where = f" (config key {key!r})" if key else ""
        lines = [
            f"input stream {stream.name} {'has no partition' if exists else 'does not exist'}{where}: {hint}"
            for stream, exists, hint in missing
        ]
        super().__init__("\n  ".join(lines), key=key)
        self.missing = [stream for stream, _, _ in missing]


@dataclass
class Provisioned:
    created: list[DeclaredStream] = field(default_factory=list)
    existing: list[DeclaredStream] = field(default_factory=list)


def declared_streams(config: Config) -> list[DeclaredStream]:
    """Inputs, side inputs and outputs of the job (not its intermediate streams)."""
    declared = {s.stream_id: s for s in _planned(config)}
    streams = StreamConfig(config)
    default_system = JobConfig(config).default_system
    for sid in streams.stream_ids():
        count = streams.partitions(sid)
        system = streams.system_of(sid, default_system)
        if sid not in declared and count is not None and system:
            declared[sid] = DeclaredStream(sid, system, streams.physical_name(sid), count)
    return sorted(declared.values(), key=lambda s: s.name)


def _planned(config: Config) -> list[DeclaredStream]:
    """The plan's streams; for a low-level job whose input has neither a configured count nor a
    stream to look it up in, its inputs with what the config knows."""
    try:
        plan = configured_plan(config)
    except PlanningError:
        if keys.APP_CLASS.get(config):
            raise
        streams = StreamConfig(config)
        default_system = JobConfig(config).default_system
        out = []
        for ss in TaskConfig(config).inputs:
            ids = streams.stream_ids_for(ss, default_system)
            sid = ids[0] if ids else ss.stream
            out.append(DeclaredStream(sid, ss.system, ss.stream, streams.partitions(sid), reads=True))
        return out
    return [
        DeclaredStream(s.id, s.system, s.physical_name, s.partitions, reads=bool(s.roles & READ_ROLES))
        for s in plan.streams.values()
        if not s.is_intermediate
    ]


def provision_streams(config: Config, *, create: bool = True, config_path: str | None = None) -> Provisioned:
    """Create the declared streams the job writes that are missing (``create``), or raise
    :class:`MissingStreamsError` naming each one that is missing and was not created. A missing
    stream the job reads raises :class:`MissingInputsError` first, before anything is created."""
    result = Provisioned()
    missing: list[DeclaredStream] = []
    with ExitStack() as stack:
        by_system = _by_system(declared_streams(config))
        admins = {system: stack.enter_context(system_admin(config, system)) for system in by_system}
        existing = {
            system: fetch_metadata(admins[system], system, [s.physical_name for s in streams])
            for system, streams in by_system.items()
        }
        absent_inputs = [
            (
                s,
                s.physical_name in existing[system],
                absent_input_hint(admins[system], system, s.physical_name, s.partitions),
            )
            for system, streams in by_system.items()
            for s in streams
            if s.reads and not (s.physical_name in existing[system] and existing[system][s.physical_name].partitions)
        ]
        if absent_inputs:
            raise MissingInputsError(absent_inputs, config)
        for system, streams in by_system.items():
            admin = admins[system]
            for stream in streams:
                if stream.physical_name in existing[system]:
                    result.existing.append(stream)
                elif create and stream.partitions and hasattr(admin, "create_stream"):
                    properties = StreamConfig(config).stream_properties(stream.stream_id)
                    admin.create_stream(
                        StreamSpec(stream.stream_id, stream.physical_name, system, stream.partitions, properties)
                    )
                    result.created.append(stream)
                else:
                    missing.append(stream)
    if missing:
        why = "--no-create-streams" if not create else "no partition count is known for them"
        raise MissingStreamsError(missing, config_path, why)
    return result


def _by_system(streams: Iterable[DeclaredStream]) -> dict[str, list[DeclaredStream]]:
    out: dict[str, list[DeclaredStream]] = {}
    for s in streams:
        out.setdefault(s.system, []).append(s)
    return out
