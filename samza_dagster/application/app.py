"""StreamApplication and StreamApplicationDescriptor: where an application describes itself.

``describe(app)`` receives a :class:`StreamApplicationDescriptor`; every ``get_input_stream`` /
``get_output_stream`` / ``get_table`` call and every MessageStream method adds to its
OperatorSpec graph. Errors (an unconfigured system, a stream registered twice, a duplicate
operator id, a table used before ``get_table``, an operator cycle) are raised at the call that
causes them, naming the operator, stream or table.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any

from samza_dagster.application.descriptors import InputDescriptor, OutputDescriptor, SystemDescriptor, TableDescriptor
from samza_dagster.application.errors import ApplicationError
from samza_dagster.application.graph import find_cycle
from samza_dagster.application.message_stream import MessageStream, OutputStream, Table
from samza_dagster.application.specs import (
    INPUT,
    PARTITION_BY,
    InputOperatorSpec,
    OperatorSpec,
    OutputStreamImpl,
    PartitionByOperatorSpec,
    TableSpec,
)
from samza_dagster.config import Config, ConfigError, keys
from samza_dagster.config.job_config import JobConfig
from samza_dagster.config.system_config import StreamConfig, SystemConfig

_OP_ID = re.compile(r"^[A-Za-z0-9_-]+$")


class StreamApplication(ABC):
    """A high-level application: ``describe`` builds its graph on the descriptor."""

    @abstractmethod
    def describe(self, app: StreamApplicationDescriptor) -> None: ...


class StreamApplicationDescriptor:
    """The graph of one application under one config (Samza's StreamApplicationDescriptorImpl).

    Public views for the planner and the runtime: ``input_operators`` (stream id → spec, in
    registration order, intermediate streams included), ``output_streams`` (stream id →
    OutputStreamImpl, intermediate included), ``tables`` (table id → TableSpec),
    ``operators`` (operator id → spec, every operator but the inputs), ``job_name``, ``job_id``.
    """

    def __init__(self, config: Config | Mapping[str, Any], application: StreamApplication | None = None) -> None:
        self.config = config if isinstance(config, Config) else Config(config)
        job = JobConfig(self.config)
        self.job_name = job.name  # ConfigError naming job.name when missing
        self.job_id = job.id
        self.application = application
        self._default_system = job.default_system
        self._configured_systems = set(SystemConfig(self.config).system_names())
        self._streams = StreamConfig(self.config)
        self.input_operators: dict[str, InputOperatorSpec] = {}
        self.output_streams: dict[str, OutputStreamImpl] = {}
        self.tables: dict[str, TableSpec] = {}
        self.operators: dict[str, OperatorSpec] = {}
        self._table_handles: dict[str, Table] = {}
        self._next_op_num = 0

    @classmethod
    def of(cls, application: StreamApplication, config: Config | Mapping[str, Any]) -> StreamApplicationDescriptor:
        """The described graph of ``application`` (runs its ``describe``), validated."""
        descriptor = cls(config, application)
        application.describe(descriptor)
        descriptor.validate()
        return descriptor

    # -- systems -----------------------------------------------------------------------------
    @property
    def default_system(self) -> str:
        return self._default_system

    def with_default_system(self, system: SystemDescriptor | str) -> StreamApplicationDescriptor:
        """The system of intermediate streams, side inputs and bare stream ids."""
        name = system.name if isinstance(system, SystemDescriptor) else SystemDescriptor(system).name
        self._default_system = name
        return self

    def _check_system(self, system: str, what: str, stream_id: str) -> None:
        if system in self._configured_systems or system == self._default_system:
            return
        key = keys.SYSTEM_FACTORY.key(system=system)
        raise ConfigError(
            f"{what} {stream_id!r} has no usable system: system {system!r} is not configured "
            f"(no systems.{system}.* keys; set {key}) and is not the default system {self._default_system!r}",
            key=key,
        )

    def _system_of(self, stream_id: str) -> str:
        return self._streams.system_of(stream_id, self._default_system) or self._default_system

    def _physical_name(self, stream_id: str, given: str | None) -> str:
        return given or self._streams.physical_name(stream_id)

    # -- streams and tables ------------------------------------------------------------------
    def get_input_stream(self, descriptor: InputDescriptor | str) -> MessageStream:
        """The stream of an input; a bare stream id uses ``streams.<id>.samza.system`` or the
        default system."""
        if isinstance(descriptor, str):
            descriptor = InputDescriptor(descriptor, self._system_of(descriptor))
        if not isinstance(descriptor, InputDescriptor):
            raise ApplicationError(
                f"get_input_stream expects an InputDescriptor (system.input(...)), got {descriptor!r}"
            )
        sid = descriptor.stream_id
        self._check_system(descriptor.system, "input stream", sid)
        if sid in self.input_operators:
            raise ApplicationError(
                f"input stream {sid!r} is already registered (get_input_stream called twice)", stream=sid
            )
        for table in self.tables.values():
            if sid in table.side_inputs:
                raise ApplicationError(
                    f"stream {sid!r} is a side input of table {table.table_id!r}; it cannot also be an input stream",
                    stream=sid,
                    table=table.table_id,
                )
        spec = InputOperatorSpec(
            sid,
            descriptor.system,
            self._physical_name(sid, descriptor.physical_name),
            serde=descriptor.serde,
            key_serde=descriptor.key_serde,
            kv=descriptor.kv,
            partitions=descriptor.partitions,
        )
        spec.op_id = self._input_op_id(sid)
        self.input_operators[sid] = spec
        return MessageStream(self, spec)

    def get_output_stream(self, descriptor: OutputDescriptor | str) -> OutputStream:
        if isinstance(descriptor, str):
            descriptor = OutputDescriptor(descriptor, self._system_of(descriptor))
        if not isinstance(descriptor, OutputDescriptor):
            raise ApplicationError(
                f"get_output_stream expects an OutputDescriptor (system.output(...)), got {descriptor!r}"
            )
        sid = descriptor.stream_id
        self._check_system(descriptor.system, "output stream", sid)
        if sid in self.output_streams:
            raise ApplicationError(
                f"output stream {sid!r} is already registered (get_output_stream called twice)", stream=sid
            )
        impl = OutputStreamImpl(
            sid,
            descriptor.system,
            self._physical_name(sid, descriptor.physical_name),
            serde=descriptor.serde,
            key_serde=descriptor.key_serde,
            kv=descriptor.kv,
            partitions=descriptor.partitions,
        )
        self.output_streams[sid] = impl
        return OutputStream(self, impl)

    def get_table(self, descriptor: TableDescriptor) -> Table:
        if not isinstance(descriptor, TableDescriptor):
            raise ApplicationError(f"get_table expects a TableDescriptor, got {descriptor!r}")
        tid = descriptor.table_id
        if tid in self.tables:
            raise ApplicationError(f"table {tid!r} is already registered (get_table called twice)", table=tid)
        ids: list[str] = []
        systems: dict[str, str] = {}
        physical: dict[str, str] = {}
        for entry in descriptor.side_inputs:
            if isinstance(entry, InputDescriptor):
                sid, system, name = (
                    entry.stream_id,
                    entry.system,
                    self._physical_name(entry.stream_id, entry.physical_name),
                )
            else:
                sid, system, name = entry, self._system_of(entry), self._physical_name(entry, None)
            self._check_system(system, f"side input of table {tid!r}:", sid)
            if sid in self.input_operators:
                raise ApplicationError(
                    f"stream {sid!r} is an input stream; it cannot also be a side input of table {tid!r}",
                    stream=sid,
                    table=tid,
                )
            if sid in ids:
                raise ApplicationError(f"table {tid!r} lists side input {sid!r} twice", stream=sid, table=tid)
            ids.append(sid)
            systems[sid] = system
            physical[sid] = name
        spec = TableSpec(
            tid, tuple(ids), systems, physical, descriptor.side_input_fn, descriptor.key_serde, descriptor.value_serde
        )
        self.tables[tid] = spec
        handle = Table(self, spec)
        self._table_handles[tid] = handle
        return handle

    @property
    def intermediate_stream_ids(self) -> list[str]:
        return [sid for sid, spec in self.input_operators.items() if spec.is_intermediate]

    def all_operator_specs(self) -> list[OperatorSpec]:
        """Every operator of the graph: the inputs first, then the others in the order declared."""
        return [*self.input_operators.values(), *self.operators.values()]

    # -- used by MessageStream ---------------------------------------------------------------
    def _input_op_id(self, stream_id: str) -> str:
        # Samza names an input operator by its stream id; with the opcode prefix it cannot clash
        # with the partition_by operator that shares its intermediate stream's id.
        return f"{self.job_name}-{self.job_id}-{INPUT}-{stream_id}"

    def _next_op_id(self, op_code: str, user_op_id: str | None) -> str:
        if user_op_id is None:
            suffix = str(self._next_op_num)
            self._next_op_num += 1
        else:
            if not isinstance(user_op_id, str) or not _OP_ID.match(user_op_id):
                raise ApplicationError(
                    f"{op_code} operator id {user_op_id!r} must be letters, digits, '-' and '_' only",
                    operator=str(user_op_id),
                )
            suffix = user_op_id
        op_id = f"{self.job_name}-{self.job_id}-{op_code}-{suffix}"
        if op_id in self.operators:
            existing = self.operators[op_id]
            raise ApplicationError(
                f"duplicate operator id {op_id!r}: already used by a {existing.op_type} operator "
                f"(op_id {suffix!r} given twice)",
                operator=op_id,
            )
        return op_id

    def _register_operator(self, spec: OperatorSpec) -> None:
        self.operators[spec.op_id] = spec

    def _check_same_app(self, other: object, op_id: str) -> None:  # any owner of a stream handle
        if other is not self:
            raise ApplicationError(
                f"operator {op_id!r}: the stream belongs to another application descriptor", operator=op_id
            )

    def _defined_table(self, table: Table | TableDescriptor, op_id: str, verb: str) -> TableSpec:
        tid = table.table_id
        spec = self.tables.get(tid)
        if isinstance(table, Table) and table.app is not self:
            spec = None
        if spec is None:
            raise ApplicationError(
                f"operator {op_id!r} {verb} table {tid!r}, which is not defined: call app.get_table(...) "
                f"for it before using it",
                operator=op_id,
                table=tid,
            )
        return spec

    def _partition_by(
        self,
        stream: MessageStream,
        key_fn: Callable[[Any], Any],
        value_fn: Callable[[Any], Any] | None,
        user_op_id: str | None,
        serde: Any,
        key_serde: Any,
    ) -> MessageStream:
        op_id = self._next_op_id(PARTITION_BY, user_op_id)
        if not callable(key_fn):
            raise ApplicationError(f"operator {op_id!r}: key must be callable, got {key_fn!r}", operator=op_id)
        if value_fn is not None and not callable(value_fn):
            raise ApplicationError(f"operator {op_id!r}: value must be callable, got {value_fn!r}", operator=op_id)
        # Samza: the intermediate stream's id is the partition_by operator's id.
        sid = op_id
        if sid in self.input_operators or sid in self.output_streams:
            raise ApplicationError(f"operator {op_id!r}: stream {sid!r} already exists", operator=op_id, stream=sid)
        system = self._default_system
        physical = self._physical_name(sid, None)
        out = OutputStreamImpl(sid, system, physical, serde=serde, key_serde=key_serde, kv=True, is_intermediate=True)
        spec = PartitionByOperatorSpec(op_id, user_op_id, out, key_fn, value_fn)
        stream.spec.register_operator_spec(spec)
        self._register_operator(spec)
        self.output_streams[sid] = out
        reader = InputOperatorSpec(
            sid, system, physical, serde=serde, key_serde=key_serde, kv=True, is_intermediate=True
        )
        reader.op_id = self._input_op_id(sid)
        self.input_operators[sid] = reader
        return MessageStream(self, reader)

    # -- validation --------------------------------------------------------------------------
    def validate(self) -> None:
        """Reject an operator cycle (naming the operators on it)."""
        roots: list[OperatorSpec] = list(self.input_operators.values())
        roots.extend(self.operators.values())
        cycle = find_cycle(roots, lambda spec: spec.registered_operator_specs)
        if cycle:
            path = " -> ".join(spec.op_id for spec in cycle)
            raise ApplicationError(f"operator cycle: {path}", operator=cycle[0].op_id)
