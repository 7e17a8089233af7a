"""The in-memory system, for unit tests: streams live in a process-wide registry keyed by
system name and carry arbitrary Python objects (no serialization needed). Offsets, metadata,
partitioning, blocking poll and bounded end-of-stream follow the log system's semantics.

Call ``reset()`` (or ``InMemorySystemFactory.reset()``) between tests.
"""

from samza_dagster.system.inmemory.admin import InMemorySystemAdmin
from samza_dagster.system.inmemory.consumer import InMemorySystemConsumer
from samza_dagster.system.inmemory.factory import InMemorySystemFactory
from samza_dagster.system.inmemory.producer import InMemorySystemProducer
from samza_dagster.system.inmemory.state import reset

__all__ = [
    "InMemorySystemAdmin",
    "InMemorySystemConsumer",
    "InMemorySystemFactory",
    "InMemorySystemProducer",
    "reset",
]
