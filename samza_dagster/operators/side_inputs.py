"""Side inputs: a table with ``side_inputs`` is filled from the task's partition of each
side-input stream (the partition number of the task's own input partitions, as the planner
makes side inputs co-partitioned with the streams joined with the table).

Decision (as Samza): at ``init``, before the first message, each side-input partition is read
from its oldest offset up to the head seen at that moment, so joins see the full table from
the first message. Later side-input messages are not followed while the task runs (a known
limitation); the table store has no changelog since it is rebuilt this way.

A task whose partition number the side-input stream does not have is left with an empty table:
the planner made every stream joined with the table co-partitioned with its side inputs, so
such a task owns no partition of a joined stream (it exists for another, wider input).
"""

from __future__ import annotations

import time
from typing import Any

from samza_dagster.application.kv import KV
from samza_dagster.operators.analysis import store_name
from samza_dagster.operators.errors import OperatorError
from samza_dagster.serde.registry import SerdeRegistry
from samza_dagster.system.factories import system_factory
from samza_dagster.model import SystemStream, SystemStreamPartition

_TIMEOUT_S = 60.0


def load_side_inputs(prepared: Any, context: Any, ssps: frozenset[SystemStreamPartition]) -> int:
    tables = prepared.side_input_tables
    if not tables or not ssps:
        return 0
    partition = min(ssp.partition for ssp in ssps)
    config = context.config
    serdes = SerdeRegistry(config)
    loaded = 0
    for table in tables:
        store = context.get_store(store_name("table-" + table.table_id))
        for sid in table.side_inputs:
            ss = SystemStream(table.side_input_systems[sid], table.side_input_physical_names[sid])
            ssp = SystemStreamPartition(ss.system, ss.stream, partition)
            ks, ms = serdes.key_serde(ss), serdes.msg_serde(ss)
            rows = _read_to_head(config, ssp)
            if rows is None:
                continue
            for key, value in rows:
                if ks is not None and key is not None:
                    key = ks.from_bytes(key)
                if ms is not None and value is not None:
                    value = ms.from_bytes(value)
                entries = table.side_input_fn(KV(key, value)) if table.side_input_fn is not None else (KV(key, value),)
                for k, v in entries:
                    if v is None:
                        store.delete(k)
                    else:
                        store.put(k, v)
                    loaded += 1
    return loaded


def _read_to_head(config: Any, ssp: SystemStreamPartition) -> list[tuple[Any, Any]] | None:
    """(key, value) pairs of the partition from its oldest offset to its head now; None when
    the stream has no such partition."""
    factory = system_factory(config, ssp.system)
    admin = factory.get_admin(ssp.system, config)
    try:
        md = admin.get_system_stream_metadata([ssp.stream])[ssp.stream]
    finally:
        stop = getattr(admin, "stop", None)
        if callable(stop):
            stop()
    pm = md.partitions.get(ssp.partition)
    if pm is None:
        return None
    if pm.newest_offset is None:
        return []
    newest = int(pm.newest_offset)
    consumer = factory.get_consumer(ssp.system, config)
    consumer.register(ssp, pm.oldest_offset)
    consumer.start()
    out: list[tuple[Any, Any]] = []
    deadline = time.monotonic() + _TIMEOUT_S
    try:
        while True:
            for env in consumer.poll({ssp}, 0.2).get(ssp, ()):
                if env.is_end_of_stream:
                    return out
                out.append((env.key, env.message))
                if int(env.offset) >= newest:
                    return out
            if time.monotonic() > deadline:
                raise OperatorError(f"side input {ssp}: not read to offset {newest} within {_TIMEOUT_S:.0f}s")
    finally:
        consumer.stop()
