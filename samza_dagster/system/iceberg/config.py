"""``systems.<system>.iceberg.*``: the catalog, the namespace and how rows are batched and committed.

* ``iceberg.catalog.<prop>`` — every one is a property of ``pyiceberg.catalog.load_catalog(<system>,
  **props)``: ``type=sql`` / ``uri`` / ``warehouse``, ``type=rest`` / ``uri``, ``type=glue`` ... Without
  any, a SQL catalog on a SQLite file under the log root (``<root>/iceberg/<system>/catalog.db``,
  tables under ``<root>/iceberg/<system>/warehouse``): nothing to install or start. The log root is
  ``SAMZA_LOG_PATH`` when set, else the default system's ``log.path``, else ``./.samza-log``.
* ``iceberg.namespace`` — the namespace of the system's tables (default ``samza``): stream ``<t>``
  is table ``<namespace>.<t>``.
* ``iceberg.buffer.rows`` — rows held per table before they are written to a data file (committed
  with the others at the next commit), so a commit interval's rows are never in memory whole.
* ``iceberg.commit.retries`` — commits retried after a conflict with another writer, on top of
  pyiceberg's own retries (``commit.retry.*`` table properties).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.deployment import log_root


@dataclass(frozen=True, slots=True)
class IcebergSystemConfig:
    system: str
    namespace: str
    catalog_properties: dict[str, str]
    buffer_rows: int
    commit_retries: int
    commit_interval_ms: int

    @classmethod
    def from_config(cls, system: str, config: Config) -> IcebergSystemConfig:
        props = dict(config.subset(keys.prefix(keys.ICEBERG_CATALOG_KEYS, system=system)).items())
        return cls(
            system=system,
            namespace=keys.ICEBERG_NAMESPACE.get(config, system=system),
            catalog_properties=props or default_catalog(system, config),
            buffer_rows=keys.ICEBERG_BUFFER_ROWS.get(config, system=system),
            commit_retries=keys.ICEBERG_COMMIT_RETRIES.get(config, system=system),
            commit_interval_ms=keys.ICEBERG_COMMIT_INTERVAL_MS.get(config, system=system),
        )


def default_catalog(system: str, config: Config) -> dict[str, str]:
    """A SQL catalog on a SQLite file under the log root, its tables beside it.

    The root is the job's config's first — its default system's ``log.path``, which the entry
    points (the CLI, the Dagster resource) set from ``SAMZA_LOG_PATH`` or the resource's
    ``log_path`` — and the environment's only when the config names none: a container runs
    where the environment may be another's (a Spark worker started for an earlier job), and a
    table written under that root is one its job never finds."""
    default_system = keys.JOB_DEFAULT_SYSTEM.get(config)
    configured = config.get_str(keys.LOG_PATH.key(system=default_system))
    root = log_root(configured) or os.path.abspath(os.path.expanduser(keys.LOG_PATH.default))
    base = os.path.join(root, "iceberg", system)
    os.makedirs(os.path.join(base, "warehouse"), exist_ok=True)
    return {
        "type": "sql",
        "uri": f"sqlite:///{os.path.join(base, 'catalog.db')}",
        "warehouse": f"file://{os.path.join(base, 'warehouse')}",
    }
