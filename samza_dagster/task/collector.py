"""MessageCollector: serializes a task's output with the stream's serdes and hands the
bytes to the system's producer (the serialization boundary: producers only see bytes)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from samza_dagster.errors import SamzaError
from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.serde.registry import SerdeRegistry
from samza_dagster.serde.serdes import SerdeError
from samza_dagster.system.protocols import AppendsTables, SystemProducer
from samza_dagster.task.batch_formats import table_rows


class UnknownSystemError(SamzaError, LookupError):
    """A task sent to a system the job does not configure."""


class _Route:
    __slots__ = ("producer", "key_serde", "msg_serde")

    def __init__(self, producer: SystemProducer, key_serde: Any, msg_serde: Any) -> None:
        self.producer = producer
        self.key_serde = key_serde
        self.msg_serde = msg_serde


class MessageCollector:
    """One per task; ``source`` (the task name) is what the task's output is registered and
    flushed under in each producer. Serdes are resolved once per system stream."""

    __slots__ = ("source", "_producers", "_serdes", "_routes", "sent")

    def __init__(self, source: str, producers: Mapping[str, SystemProducer], serdes: SerdeRegistry) -> None:
        self.source = source
        self._producers = producers
        self._serdes = serdes
        self._routes: dict[SystemStream, _Route] = {}
        self.sent = 0

    def _route(self, system_stream: SystemStream) -> _Route:
        producer = self._producers.get(system_stream.system)
        if producer is None:
            known = ", ".join(sorted(self._producers)) or "none"
            raise UnknownSystemError(
                f"task {self.source!r} sent to {system_stream.system}.{system_stream.stream}, but system "
                f"{system_stream.system!r} is not configured (systems.{system_stream.system}.samza.factory); "
                f"configured systems: {known}"
            )
        route = _Route(producer, self._serdes.key_serde(system_stream), self._serdes.msg_serde(system_stream))
        self._routes[system_stream] = route
        return route

    def send(self, envelope: OutgoingMessageEnvelope) -> None:
        system_stream = envelope.system_stream
        if type(system_stream) is not SystemStream:
            system_stream = SystemStream(*system_stream)
            envelope.system_stream = system_stream
        route = self._routes.get(system_stream) or self._route(system_stream)
        if route.key_serde is not None or route.msg_serde is not None:
            envelope = self._serialize(envelope, route)
        route.producer.send(self.source, envelope)
        self.sent += 1

    def send_table(self, system_stream: SystemStream, table: Any) -> None:
        """Send a batch of rows in one call: a ``pyarrow.Table`` or ``RecordBatch``, or a pandas
        ``DataFrame``. A producer that appends tables (Iceberg, files) takes it whole, as it is;
        any other gets one message per row (a dict of column → value) through the stream's serdes,
        unkeyed — send rows yourself where a key or partition matters."""
        if type(system_stream) is not SystemStream:
            system_stream = SystemStream(*system_stream)
        route = self._routes.get(system_stream) or self._route(system_stream)
        if isinstance(route.producer, AppendsTables):
            route.producer.send_table(self.source, system_stream, table)
            self.sent += table.num_rows if hasattr(table, "num_rows") else len(table)
            return
        for row in table_rows(table):
            self.send(OutgoingMessageEnvelope(system_stream, row))

    def _serialize(self, envelope: OutgoingMessageEnvelope, route: _Route) -> OutgoingMessageEnvelope:
        key, message, partition_key = envelope.key, envelope.message, envelope.partition_key
        try:
            if route.key_serde is not None:
                if key is not None:
                    key = route.key_serde.to_bytes(key)
                if partition_key is not None and not isinstance(partition_key, bytes):
                    partition_key = route.key_serde.to_bytes(partition_key)
            if route.msg_serde is not None and message is not None:
                message = route.msg_serde.to_bytes(message)
        except SerdeError as exc:
            raise SerdeError(
                f"task {self.source!r} cannot serialize a message for {envelope.system_stream}: {exc}"
            ) from exc
        return OutgoingMessageEnvelope(
            envelope.system_stream, message, key, partition_key, envelope.partition, envelope.event_time
        )
