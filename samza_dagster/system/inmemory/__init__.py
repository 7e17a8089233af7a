"""The in-memory system, for unit tests: streams live in a process-wide registry keyed by
system name and carry arbitrary Python objects (no serialization needed). Offsets, metadata,
partitioning, blocking poll and bounded end-of-stream follow the log system's semantics.

Streams must be created with the admin's ``create_stream`` before they are produced to or
read (StreamNotFoundError otherwise). ``send`` appends at once and wakes waiting consumers;
``flush`` has nothing to do. ``systems.<system>.inmemory.fetch.size`` (default 1000) bounds the
envelopes one poll returns per partition. Call ``reset()`` (or ``InMemorySystemFactory.reset()``)
between tests.
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
