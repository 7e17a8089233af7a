"""Startpoints (Samza's ``org.apache.samza.startpoint``): where an input partition starts at the
job's next start, ahead of its checkpoint.

* ``startpoint`` — the model: ``Startpoint`` and its kinds (oldest, upcoming, specific offset,
  timestamp), ``StartpointKey``, their JSON;
* ``manager`` — ``StartpointManager``: writes, reads, fans out and deletes them on the job's
  coordinator stream;
* ``resolver`` — startpoints to offsets, through the systems' admins;
* ``container`` — a container's side: applied at start, deleted once the first checkpoint after
  it covers them.

Setting them from outside a job, checked against the job's plan, is
``samza_dagster.runtime.startpoints`` (it needs the planner, a layer above this package); the
``samza-dagster startpoint`` command's printing is ``samza_dagster.cli.startpoints``.
"""

from samza_dagster.startpoint.manager import StartpointManager
from samza_dagster.startpoint.startpoint import (
    Startpoint,
    StartpointError,
    StartpointKey,
    StartpointOldest,
    StartpointSpecific,
    StartpointTimestamp,
    StartpointUpcoming,
)

__all__ = [
    "Startpoint",
    "StartpointError",
    "StartpointKey",
    "StartpointManager",
    "StartpointOldest",
    "StartpointSpecific",
    "StartpointTimestamp",
    "StartpointUpcoming",
]
