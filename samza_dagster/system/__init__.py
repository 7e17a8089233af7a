"""Systems: the stream model, the System* protocols and the factory registry."""

from samza_dagster.model import (
    END_OF_STREAM_OFFSET,
    IncomingMessageEnvelope,
    OutgoingMessageEnvelope,
    StreamSpec,
    SystemStream,
    SystemStreamMetadata,
    SystemStreamPartition,
    SystemStreamPartitionMetadata,
)
from samza_dagster.system.errors import (
    StreamExistsError,
    StreamNotFoundError,
    SystemAuthenticationError,
    SystemUnavailableError,
)
from samza_dagster.system.factories import BUILTIN_FACTORIES, system_factory
from samza_dagster.system.protocols import SystemAdmin, SystemConsumer, SystemFactory, SystemProducer

__all__ = [
    "BUILTIN_FACTORIES",
    "END_OF_STREAM_OFFSET",
    "IncomingMessageEnvelope",
    "OutgoingMessageEnvelope",
    "StreamExistsError",
    "StreamNotFoundError",
    "StreamSpec",
    "SystemAdmin",
    "SystemAuthenticationError",
    "SystemConsumer",
    "SystemFactory",
    "SystemProducer",
    "SystemStream",
    "SystemStreamMetadata",
    "SystemStreamPartition",
    "SystemStreamPartitionMetadata",
    "SystemUnavailableError",
    "system_factory",
]
