"""SparkResource: the Spark session of samza_dagster's batch work.

Not dagster-pyspark's ``PySparkResource`` (it installs cleanly with this dagster, as
dagster-pyspark 0.29.x): that resource builds a plain session, while jobs here need what
``samza_dagster.spark.session.get_or_create_spark`` does before the JVM starts —
``PYSPARK_PYTHON`` pointed at this interpreter (else Spark's Python workers run outside the
virtualenv and die) and the ``samza`` data source registered. So this resource calls it.
:meth:`SparkResource.iceberg_session` adds an iceberg system's tables as a Spark catalog.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dagster as dg
from pydantic import Field

from samza_dagster.config import Config
from samza_dagster.spark.session import get_or_create_spark


class SparkResource(dg.ConfigurableResource):
    """``master`` — e.g. ``local[2]`` or a cluster URL (default: ``local[<cpu count>]``);
    ``spark_config`` — any ``spark.*`` settings."""

    master: str | None = Field(
        default=None, description="Spark master URL, e.g. local[2] or spark://host:7077; unset: local[<cpu count>]"
    )
    app_name: str | None = Field(
        default=None, description="the Spark application's name; unset: spark.app.name, else the job's name"
    )
    spark_config: dict[str, str] = Field(
        default_factory=dict, description="any spark.* settings for the session (spark.executor.memory, ...)"
    )

    def get_session(self) -> Any:
        """The active SparkSession (or a new one) with the ``samza`` format registered."""
        settings = {k: str(v) for k, v in self.spark_config.items()}
        return get_or_create_spark(settings, app_name=self.app_name, master=self.master)

    def iceberg_session(self, config: Mapping[str, object], system: str) -> Any:
        """This resource's session, in which catalog ``<system>`` is the iceberg system's tables
        (``samza_dagster.spark.iceberg``: Apache Iceberg's Spark runtime over the catalog the job
        writes through, resolved from ``config`` as the job resolves it)."""
        from samza_dagster.spark.iceberg import iceberg_session

        settings = {k: str(v) for k, v in self.spark_config.items()}
        cfg = config if isinstance(config, Config) else Config(config)
        return iceberg_session(cfg, system, spark_config=settings, master=self.master, app_name=self.app_name)

    def job_config(self) -> dict[str, str]:
        """``spark.*`` keys to pass to a job run by the spark runner."""
        settings = {k: str(v) for k, v in self.spark_config.items()}
        if self.master:
            settings["spark.master"] = self.master
        return settings
