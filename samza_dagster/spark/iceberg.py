"""The iceberg system's tables on Spark: Apache Iceberg's own Spark runtime over the system's catalog.

:func:`iceberg_spark_conf` turns ``systems.<s>.iceberg.catalog.*`` (the pyiceberg catalog a job
writes through, :mod:`samza_dagster.system.iceberg.config`) into the ``spark.*`` settings of a
Spark catalog named ``<s>``, so ``spark.table("<s>.<namespace>.<table>")`` reads what the job wrote
and ``INSERT INTO`` / ``CALL <s>.system.*`` work on the same tables:

* the catalog carries the system's name: pyiceberg's SQL catalog stores it in every row
  (``catalog_name``), and Iceberg's ``JdbcCatalog`` under any other name finds no namespace;
* pyiceberg's ``type=sql`` on SQLite becomes ``type=jdbc`` on ``jdbc:sqlite:<file>``; a file that
  does not exist is refused (SQLite would create an empty catalog silently); other catalog types
  (``rest``, ``glue``, ``hive``, ...) pass their properties through, as Iceberg's Java catalogs
  read the same names;
* ``cache-enabled=false``: Spark's catalog otherwise caches a loaded table ~30 s and reads a
  snapshot the job has long moved past;
* ``spark.jars``: the runtime and SQLite's JDBC driver from Maven Central, fetched once with ``mvn``
  into ``~/.cache/samza-dagster`` (``SAMZA_DAGSTER_CACHE`` moves it) — by the test command during
  set-up, else on first use (``python -m samza_dagster.spark.iceberg`` fetches with a progress line);
  ``spark.sql.extensions`` adds Iceberg's procedures (``CALL <s>.system.expire_snapshots``).

The runtime is built for Spark 4.1 (``iceberg-spark-runtime-4.1_2.13``): the product's pyspark is
pinned to 4.1.x (docs/decisions.md). Jars join the driver's classpath when the process's JVM
starts (its first session), extensions when a session starts: :func:`iceberg_session` refuses a
session or a JVM without them, and :func:`preload_runtime` puts the runtime on the JVM's classpath
ahead of any session (a process that starts other sessions first, e.g. a test suite).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ICEBERG_VERSION = "1.12.0"
SPARK_BINARY = "4.1"
SCALA_BINARY = "2.13"
SQLITE_JDBC_VERSION = "3.50.3.0"
ARTIFACTS = (
    f"org.apache.iceberg:iceberg-spark-runtime-{SPARK_BINARY}_{SCALA_BINARY}:{ICEBERG_VERSION}",
    f"org.xerial:sqlite-jdbc:{SQLITE_JDBC_VERSION}",
)
EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
SPARK_CATALOG = "org.apache.iceberg.spark.SparkCatalog"

#: written last into the cache directory: its presence means every jar was copied
_COMPLETE = ".complete"


def cache_dir() -> Path:
    root = Path(os.environ.get("SAMZA_DAGSTER_CACHE") or Path.home() / ".cache" / "samza-dagster")
    return root / f"iceberg-spark-{SPARK_BINARY}_{SCALA_BINARY}-{ICEBERG_VERSION}-sqlite-{SQLITE_JDBC_VERSION}"


def iceberg_jars(progress: bool = False) -> list[Path]:
    """The runtime's and the SQLite driver's jars, fetched with ``mvn`` into the cache if missing."""
    target = cache_dir()
    if not (target / _COMPLETE).exists():
        _fetch(target, progress)
    return sorted(target.glob("*.jar"))


def _fetch(target: Path, progress: bool) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ConfigError(
            f"Iceberg's Spark runtime ({ARTIFACTS[0]}) comes from Maven Central through `mvn`, which is not "
            "on PATH (Debian: apt-get install maven)"
        )
    if progress:
        print(f"fetching {', '.join(ARTIFACTS)} (~60 MB) with mvn into {target}", file=sys.stderr)
    started = time.monotonic()
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    for artifact in ARTIFACTS:
        result = subprocess.run(
            [
                mvn,
                "--batch-mode",
                "--quiet",
                "dependency:copy",
                f"-Dartifact={artifact}",
                f"-DoutputDirectory={staging}",
            ],
            capture_output=True,
            text=True,
            check=False,
            cwd=staging.parent if staging.parent.exists() else None,
        )
        if result.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            output = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout + result.stderr)  # mvn's colours
            errors = [ln for ln in output.splitlines() if "ERROR" in ln] or ["(no output)"]
            raise ConfigError(f"mvn could not fetch {artifact} from Maven Central: {errors[0].strip()[:400]}")
    (staging / _COMPLETE).write_text(f"fetched in {time.monotonic() - started:.1f}s\n")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    if progress:
        print(f"fetched in {time.monotonic() - started:.1f}s", file=sys.stderr)


def catalog_properties(config: Config | Mapping[str, str], system: str) -> dict[str, str]:
    """The Spark catalog ``<system>``'s properties (without the ``spark.sql.catalog.<system>.`` prefix)."""
    # the iceberg system's own module pulls in pyiceberg: loaded only where a catalog is configured
    from samza_dagster.system.iceberg.config import IcebergSystemConfig

    cfg = config if isinstance(config, Config) else Config(dict(config))
    factory = cfg.get(f"systems.{system}.samza.factory")
    if factory != "iceberg":
        raise ConfigError(f"systems.{system}.samza.factory is {factory!r}: system {system!r} is not an iceberg system")
    pyiceberg_props = IcebergSystemConfig.from_config(system, cfg).catalog_properties
    props = {k: v for k, v in pyiceberg_props.items() if k not in ("type", "uri")}
    kind = pyiceberg_props.get("type", "")
    uri = pyiceberg_props.get("uri", "")
    prefix = keys.prefix(keys.ICEBERG_CATALOG_KEYS, system=system)
    if kind == "sql":
        props["type"] = "jdbc"
        props["uri"] = _jdbc_uri(uri, f"{prefix}uri")
    else:
        props["type"] = kind
        if uri:
            props["uri"] = uri
    props["cache-enabled"] = "false"
    return props


def _jdbc_uri(uri: str, key: str) -> str:
    """pyiceberg's SQLAlchemy URL of a SQLite catalog as a JDBC URL; the file must exist."""
    if uri.startswith("jdbc:"):
        return uri
    if not uri.startswith("sqlite:///"):
        raise ConfigError(
            f"{key}={uri}: only a SQLite SQL catalog (sqlite:///<file>) is read on Spark; "
            "give another database's catalog as its jdbc: URL"
        )
    # SQLAlchemy's form: sqlite:///<relative path>, sqlite:////<absolute path>
    path = os.path.abspath(unquote(uri.removeprefix("sqlite:///").split("?", 1)[0]))
    if not os.path.isfile(path):
        raise ConfigError(f"{key}={uri}: no catalog file at {path} (a job writing to the system creates it)")
    return f"jdbc:sqlite:{path}"


def iceberg_spark_conf(config: Config | Mapping[str, str], system: str, *, jars: bool = True) -> dict[str, str]:
    """The ``spark.*`` settings that make Spark see ``system``'s tables as catalog ``<system>``.

    ``jars=False`` leaves out ``spark.jars`` (for a session that gets the runtime otherwise, e.g.
    ``spark.jars.packages`` on a cluster) and fetches nothing.
    """
    settings = {f"spark.sql.catalog.{system}": SPARK_CATALOG, "spark.sql.extensions": EXTENSIONS}
    for key, value in catalog_properties(config, system).items():
        settings[f"spark.sql.catalog.{system}.{key}"] = value
    if jars:
        settings["spark.jars"] = ",".join(str(p) for p in iceberg_jars())
    return settings


def with_iceberg(settings: Mapping[str, Any], conf: Mapping[str, str]) -> dict[str, str]:
    """``settings`` (``spark.*``) with the Iceberg catalog's ``conf`` merged in: ``spark.jars`` and
    ``spark.sql.extensions`` are lists, so they are joined with what is there, not replaced."""
    merged = {str(k): str(v) for k, v in settings.items()}
    for key, value in conf.items():
        if key in ("spark.jars", "spark.sql.extensions") and merged.get(key):
            present = merged[key].split(",")
            merged[key] = ",".join(present + [v for v in value.split(",") if v not in present])
        else:
            merged[key] = value
    return merged


def iceberg_session(
    config: Config | Mapping[str, str],
    system: str,
    *,
    spark_config: Mapping[str, Any] | None = None,
    master: str | None = None,
    app_name: str | None = None,
) -> SparkSession:
    """A SparkSession (``get_or_create_spark``) in which catalog ``<system>`` is the system's tables.

    A session already running in this process without Iceberg's runtime cannot load it (jars and
    extensions are read when the JVM starts): refused, naming what to do.
    """
    from samza_dagster.spark.session import get_or_create_spark

    conf = iceberg_spark_conf(config, system)
    spark = get_or_create_spark(with_iceberg(spark_config or {}, conf), master=master, app_name=app_name)
    extensions = spark.sparkContext.getConf().get("spark.sql.extensions", "") or ""
    if EXTENSIONS not in extensions:
        raise ConfigError(
            f"iceberg system {system!r}: a Spark session without Iceberg's extensions is already running in this "
            "process; stop it (spark.stop()) first"
        )
    if not _runtime_loadable(spark):
        raise ConfigError(
            f"iceberg system {system!r}: this process's JVM started without Iceberg's Spark runtime (jars join the "
            "driver's classpath only at its start): call samza_dagster.spark.iceberg.preload_runtime() first"
        )
    for key, value in conf.items():  # a session started for another system gets this one's catalog too
        if key.startswith(f"spark.sql.catalog.{system}"):
            spark.conf.set(key, value)
    return spark


def _runtime_loadable(spark: SparkSession) -> bool:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    try:
        jvm.java.lang.Class.forName(
            SPARK_CATALOG, False, jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader()
        )
    except Exception:  # noqa: BLE001 - py4j's error for ClassNotFoundException: not on the classpath
        return False
    return True


def preload_runtime() -> bool:
    """Put Iceberg's Spark runtime on the driver's classpath of the JVM this process starts for its
    first Spark session (``PYSPARK_SUBMIT_ARGS``), so an :func:`iceberg_session` created after
    other sessions were stopped still loads it. False when the JVM is already running (too late)."""
    from pyspark import SparkContext

    if SparkContext._gateway is not None:
        return False
    classpath = os.pathsep.join(str(p) for p in iceberg_jars())
    args = os.environ.get("PYSPARK_SUBMIT_ARGS", "pyspark-shell")
    if classpath not in args:
        os.environ["PYSPARK_SUBMIT_ARGS"] = f"--driver-class-path {classpath} {args}"
    return True


if __name__ == "__main__":
    for jar in iceberg_jars(progress=True):
        print(jar)
