"""Descriptors: what an application asks for — systems, input and output streams, tables.

Descriptors are plain values. ``StreamApplicationDescriptor.get_input_stream`` and friends turn
them into graph nodes and check them against the config (the system must be configured or be
the default system; its factory always comes from ``systems.<name>.samza.factory``).

Keys: a stream whose descriptor is *keyed* (``kv=True``, the default when a ``key_serde`` is
given) hands user functions :class:`~samza_dagster.application.kv.KV` ``(key, value)`` pairs
and, as an output, expects them (the key picks the partition). An unkeyed stream hands over
the deserialized value alone. ``serde=None`` means: the serde the config gives the stream
(``streams.<id>.samza.msg.serde`` / ``systems.<system>.samza.msg.serde``), else raw bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from samza_dagster.application.errors import ApplicationError


def _check_stream_id(stream_id: Any, what: str) -> None:
    if not isinstance(stream_id, str) or not stream_id.strip():
        raise ApplicationError(f"{what}: stream id must be a non-empty string, got {stream_id!r}")


def _check_partitions(partitions: Any, stream_id: str) -> None:
    if partitions is None:
        return
    if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
        raise ApplicationError(
            f"stream {stream_id!r}: partitions must be a positive integer, got {partitions!r}", stream=stream_id
        )


@dataclass(frozen=True, eq=False)
class StreamDescriptor:
    """A stream on a system. ``partitions`` declares the count the stream has (or should be
    created with); the planner checks it against the system's actual count."""

    stream_id: str
    system: str
    serde: Any = None
    key_serde: Any = None
    partitions: int | None = None
    kv: bool = False
    physical_name: str | None = None

    def __post_init__(self) -> None:
        _check_stream_id(self.stream_id, type(self).__name__)
        _check_partitions(self.partitions, self.stream_id)


class InputDescriptor(StreamDescriptor):
    """An input stream; see the module docstring for keys and serdes."""


class OutputDescriptor(StreamDescriptor):
    """An output stream; see the module docstring for keys and serdes."""


@dataclass(frozen=True)
class SystemDescriptor:
    """A system by name. Its factory and settings come from config (``systems.<name>.*``)."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip() or "." in self.name:
            raise ApplicationError(f"system name must be a non-empty string without dots, got {self.name!r}")

    def input(
        self,
        stream_id: str,
        serde: Any = None,
        key_serde: Any = None,
        partitions: int | None = None,
        *,
        kv: bool | None = None,
        physical_name: str | None = None,
    ) -> InputDescriptor:
        return InputDescriptor(
            stream_id,
            self.name,
            serde,
            key_serde,
            partitions,
            key_serde is not None if kv is None else kv,
            physical_name,
        )

    def output(
        self,
        stream_id: str,
        serde: Any = None,
        key_serde: Any = None,
        partitions: int | None = None,
        *,
        kv: bool | None = None,
        physical_name: str | None = None,
    ) -> OutputDescriptor:
        return OutputDescriptor(
            stream_id,
            self.name,
            serde,
            key_serde,
            partitions,
            key_serde is not None if kv is None else kv,
            physical_name,
        )


@dataclass(frozen=True, eq=False)
class TableDescriptor:
    """A local table (a key-value store of the task).

    ``side_inputs`` are stream ids (of the default system, or the one
    ``streams.<id>.samza.system`` names) or InputDescriptors whose messages fill the table;
    ``side_input_fn(kv) -> iterable of KV`` turns a side-input message (as ``KV(key, value)``)
    into table entries — when omitted, each message is put as it is keyed.
    """

    table_id: str
    side_inputs: tuple[str | InputDescriptor, ...] = field(default=())
    side_input_fn: Callable[[Any], Iterable[Any]] | None = None
    key_serde: Any = None
    value_serde: Any = None

    def __init__(
        self,
        table_id: str,
        *,
        side_inputs: Iterable[str | InputDescriptor] = (),
        side_input_fn: Callable[[Any], Iterable[Any]] | None = None,
        key_serde: Any = None,
        value_serde: Any = None,
    ) -> None:
        if not isinstance(table_id, str) or not table_id.strip():
            raise ApplicationError(f"table id must be a non-empty string, got {table_id!r}")
        if isinstance(side_inputs, (str, InputDescriptor)):
            side_inputs = (side_inputs,)
        inputs = tuple(side_inputs)
        for entry in inputs:
            if isinstance(entry, InputDescriptor):
                continue
            _check_stream_id(entry, f"side input of table {table_id!r}")
        if side_input_fn is not None and not callable(side_input_fn):
            raise ApplicationError(f"table {table_id!r}: side_input_fn must be callable", table=table_id)
        if side_input_fn is not None and not inputs:
            raise ApplicationError(f"table {table_id!r}: side_input_fn given without side_inputs", table=table_id)
        object.__setattr__(self, "table_id", table_id)
        object.__setattr__(self, "side_inputs", inputs)
        object.__setattr__(self, "side_input_fn", side_input_fn)
        object.__setattr__(self, "key_serde", key_serde)
        object.__setattr__(self, "value_serde", value_serde)
