"""samza-dagster's Dagster integration (the only package of samza_dagster importing dagster),
installed with it: what a user's own Dagster project imports.

* :class:`SamzaJobComponent` — the dg component: one job's whole definitions from a ``defs.yaml``
  (``type: samza_dagster.orchestration.SamzaJobComponent``);
* the resources — :class:`SamzaSystemsResource`, :class:`SparkResource`,
  :class:`KafkaAdminResource`, :class:`CoordinatorStreamResource` — and the I/O manager
  :class:`IcebergIOManager`, which loads the Iceberg tables jobs write (a day of them for a daily
  asset) into downstream assets as pandas or Arrow;
* the factories the component is made of, for a project building definitions in Python: stream
  assets from an execution plan, the job's multi-asset, the coordinator-stream, observation and
  failure sensors, the daily reprocessing backfills (:func:`reprocessing_backfill` re-sends a day,
  :func:`rewind_backfill` rewinds an input to a day by startpoints), and an application's whole
  definitions (:func:`application_definitions`).
"""

from samza_dagster.orchestration.application import application_definitions, failed_application_definitions
from samza_dagster.orchestration.assets import DeclaredOutput, StreamAssets, asset_role, stream_assets, stream_key
from samza_dagster.orchestration.backfill import (
    ReprocessingBackfill,
    ReprocessingConfig,
    reprocessing_backfill,
    resend_window,
)
from samza_dagster.orchestration.component import (
    SamzaBackfill,
    SamzaComponentError,
    SamzaJobComponent,
    default_resources,
)
from samza_dagster.orchestration.iceberg_io import IcebergIOManager
from samza_dagster.orchestration.job_asset import SYSTEMS_RESOURCE_KEY, SamzaJobRunConfig, op_name, samza_job_asset
from samza_dagster.orchestration.observation import StreamObservation, observe_streams
from samza_dagster.orchestration.resources import (
    CoordinatorStreamResource,
    KafkaAdminResource,
    SamzaSystemsResource,
    SparkResource,
)
from samza_dagster.orchestration.rewind import rewind_backfill, rewind_to_time
from samza_dagster.orchestration.sensors import (
    coordinator_stream_sensor,
    samza_job_failure_sensor,
    stream_observation_sensor,
)
from samza_dagster.orchestration.settings import DagsterSettings
from samza_dagster.orchestration.single_run import JOB_INSTANCE_TAG, job_instance
from samza_dagster.orchestration.tables import ICEBERG_IO_MANAGER_KEY, TableRef

__all__ = [
    "CoordinatorStreamResource",
    "KafkaAdminResource",
    "SamzaBackfill",
    "SamzaComponentError",
    "SamzaJobComponent",
    "SamzaSystemsResource",
    "SparkResource",
    "default_resources",
    "JOB_INSTANCE_TAG",
    "SYSTEMS_RESOURCE_KEY",
    "DagsterSettings",
    "ICEBERG_IO_MANAGER_KEY",
    "IcebergIOManager",
    "TableRef",
    "DeclaredOutput",
    "SamzaJobRunConfig",
    "ReprocessingBackfill",
    "ReprocessingConfig",
    "StreamAssets",
    "StreamObservation",
    "application_definitions",
    "asset_role",
    "coordinator_stream_sensor",
    "failed_application_definitions",
    "job_instance",
    "observe_streams",
    "op_name",
    "reprocessing_backfill",
    "resend_window",
    "rewind_backfill",
    "rewind_to_time",
    "samza_job_failure_sensor",
    "samza_job_asset",
    "stream_assets",
    "stream_key",
    "stream_observation_sensor",
]
