"""Offsets of a set of partitions from any system's admin, in one batched call per system.

Samza's ``SystemAdmin.getSSPMetadata``: a container asks for the offsets of the partitions it
reads or writes (lag at shutdown, changelog offsets at commit) and must not pay for every
partition of their streams per partition asked. An admin with ``get_ssp_metadata`` (the log)
answers for exactly the asked partitions; for one without it, one ``get_system_stream_metadata``
over the asked partitions' streams answers for all of them at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from samza_dagster.model import SystemStreamPartition, SystemStreamPartitionMetadata
from samza_dagster.system.protocols import SspMetadataAdmin


def ssp_metadata(
    admin_for: Callable[[str], Any], ssps: Iterable[SystemStreamPartition]
) -> dict[SystemStreamPartition, SystemStreamPartitionMetadata]:
    """The offsets of each of ``ssps`` (one left out when its stream lacks the partition): one
    admin call per system, whatever the number of partitions."""
    by_system: dict[str, list[SystemStreamPartition]] = {}
    for ssp in ssps:
        by_system.setdefault(ssp.system, []).append(ssp)
    result: dict[SystemStreamPartition, SystemStreamPartitionMetadata] = {}
    for system, wanted in by_system.items():
        admin = admin_for(system)
        if isinstance(admin, SspMetadataAdmin):
            result.update(admin.get_ssp_metadata(wanted))
            continue
        metadata = admin.get_system_stream_metadata(sorted({ssp.stream for ssp in wanted}))
        for ssp in wanted:
            pm = metadata[ssp.stream].partitions.get(ssp.partition)
            if pm is not None:
                result[ssp] = pm
    return result
