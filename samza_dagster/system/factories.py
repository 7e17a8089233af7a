"""Which SystemFactory a system name maps to (``systems.<name>.samza.factory``)."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.serde.registry import load_class
from samza_dagster.system.protocols import (
    ClosableAdmin,
    ExplainsMissingStreams,
    ListsStreams,
    StoppableAdmin,
    SystemFactory,
)

#: Built-in factories, imported lazily so kafka-python is only loaded when Kafka is used.
BUILTIN_FACTORIES: dict[str, str] = {
    "log": "samza_dagster.system.log:LogSystemFactory",
    "kafka": "samza_dagster.system.kafka:KafkaSystemFactory",
    "inmemory": "samza_dagster.system.inmemory:InMemorySystemFactory",
    "files": "samza_dagster.system.files:FilesSystemFactory",
    "iceberg": "samza_dagster.system.iceberg:IcebergSystemFactory",
}


def system_factory(config: Config, system_name: str) -> SystemFactory:
    """The factory ``systems.<system_name>.samza.factory`` names.

    A system with no factory configured is the embedded log (the default system).
    """
    key = keys.SYSTEM_FACTORY.key(system=system_name)
    name = (config.get_str(key) or "log").strip()
    path = BUILTIN_FACTORIES.get(name)
    if path is None:
        if ":" not in name and "." not in name:
            known = ", ".join(sorted(BUILTIN_FACTORIES))
            raise ConfigError(
                f"config key {key!r} names unknown system factory {name!r}; known: {known}, or module:Class",
                key=key,
            )
        path = name
    cls = load_class(path, key)
    factory = cls()
    for method in ("get_admin", "get_consumer", "get_producer"):
        if not callable(getattr(factory, method, None)):
            raise ConfigError(f"config key {key!r}: {path} is not a SystemFactory (no {method})", key=key)
    return factory


@contextmanager
def system_admin(config: Config, system: str) -> Iterator[Any]:
    """``system``'s admin for the duration of a ``with`` block, stopped (or closed) afterwards."""
    admin = system_factory(config, system).get_admin(system, config)
    try:
        yield admin
    finally:
        stop_admin(admin)


def stop_admin(admin: object) -> None:
    """Release an admin's connections and threads: its ``stop()`` (Samza's name; every built-in
    admin has it), else its ``close()``; an admin with neither holds nothing to release."""
    if isinstance(admin, StoppableAdmin):
        admin.stop()
    elif isinstance(admin, ClosableAdmin):
        admin.close()


def nearest_stream(admin: Any, name: str) -> str | None:
    """The existing stream whose name is closest to ``name`` (a typo), if the system can list its
    streams; the engine's own streams (``__samza_...``) are never suggested, nor ``name`` itself
    (an input that exists with no partition)."""
    if not isinstance(admin, ListsStreams):
        return None
    close = difflib.get_close_matches(
        name, [n for n in admin.list_streams() if not n.startswith("__") and n != name], n=1, cutoff=0.75
    )
    return close[0] if close else None


def absent_input_hint(admin: Any, system: str, stream: str, partitions: int | None = None) -> str:
    """What to do about an input ``system`` does not have: where the system looked (when its admin
    can say), the existing stream a typo most likely meant, else the command that creates it —
    never advice that cannot work (an empty directory is no files input)."""
    said = [admin.explain_missing(stream)] if isinstance(admin, ExplainsMissingStreams) else []
    near = nearest_stream(admin, stream)
    if near:
        said.append(f"did you mean {system}.{near}?")
    elif not said:
        said.append(
            f"create it first: samza-dagster streams create {system}.{stream} --partitions "
            f"{partitions if partitions is not None else 'N'}"
        )
    return "; ".join(said)
