"""The high-level API: descriptors, MessageStream, Table, windows and the OperatorSpec graph.

See :mod:`samza_dagster.application.descriptors` for what user functions receive (values, or
``KV`` pairs for keyed streams) and :mod:`samza_dagster.application.specs` for the graph.
"""

from samza_dagster.application.app import StreamApplication, StreamApplicationDescriptor
from samza_dagster.application.descriptors import (
    InputDescriptor,
    OutputDescriptor,
    StreamDescriptor,
    SystemDescriptor,
    TableDescriptor,
)
from samza_dagster.application.errors import ApplicationError
from samza_dagster.application.kv import KV
from samza_dagster.application.message_stream import MessageStream, OutputStream, Table
from samza_dagster.application.windows import WindowDefinition, WindowPane, Windows

__all__ = [
    "KV",
    "ApplicationError",
    "InputDescriptor",
    "MessageStream",
    "OutputDescriptor",
    "OutputStream",
    "StreamApplication",
    "StreamApplicationDescriptor",
    "StreamDescriptor",
    "SystemDescriptor",
    "Table",
    "TableDescriptor",
    "WindowDefinition",
    "WindowPane",
    "Windows",
]
