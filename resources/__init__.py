"""The Dagster resources of this repository's example deployment, configured from the
environment — the instances ``definitions.py`` and ``jobs/definitions.py`` bind:

* ``samza_systems`` (``SamzaSystemsResource``): where the systems are — the embedded log's root
  from ``SAMZA_LOG_PATH`` (else each job's ``systems.<s>.log.path``, else ``./.samza-log``), a
  Kafka system ``kafka`` on ``SAMZA_KAFKA_BOOTSTRAP_SERVERS`` when that is set;
* ``spark`` (``SparkResource``): the Spark session of jobs on the spark runner and of the
  reprocessing backfills (``local[2]`` unless configured in the launchpad);
* ``kafka_admin`` (``KafkaAdminResource``): batched last-offset lookups on those brokers;
* ``coordinator_stream`` (``CoordinatorStreamResource``): a job's coordinator stream, on the same
  systems as the job.

They are the very instances every ``SamzaJobComponent`` binds by default
(``samza_dagster.orchestration.default_resources()``): Dagster merges definitions only when a
resource key maps to one object, so the components under ``jobs/defs`` and these bindings merge.
A deployment of its own changes them here (and sets ``bind_resources: false`` on its components).
Every field can also be overridden per run in the launchpad.
"""

from __future__ import annotations

import dagster as dg

from samza_dagster.orchestration import default_resources

RESOURCES: dict[str, dg.ConfigurableResource] = default_resources()

__all__ = ["RESOURCES"]
