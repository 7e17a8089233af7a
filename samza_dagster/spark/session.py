"""A SparkSession for samza_dagster's batch work, with the ``samza`` data source registered.

Why each default:
* ``PYSPARK_PYTHON`` / ``PYSPARK_DRIVER_PYTHON`` = ``sys.executable``: Spark's Python workers
  otherwise run ``python3`` from PATH — outside the virtualenv, without pyarrow or this package —
  and die with "Python worker exited unexpectedly" (measured on the dev machine).
* ``local[N]`` (N = CPU count) when no master is given: runs on a laptop with nothing else.
* Spark UI off (``spark.ui.enabled=false``): it binds a port per session and costs start-up time;
  turn it on with ``spark.ui.enabled=true`` in config.
* ``SPARK_LOCAL_IP=127.0.0.1`` for a ``local[...]`` master unless already set: a local session
  then binds loopback (the job coordinator's address too) instead of guessing an interface, and
  does not warn that the hostname resolves to loopback.
* ``spark.sql.shuffle.partitions`` small (4): stream data sets here are modest, and 200
  shuffle tasks on 2 cores cost more than they save.
* The JVM logs with the package's ``log4j2.properties`` (warnings and errors, no start-up
  banner), and the console progress bar is off: a job's own output is what the user reads.
* The working directory goes on the Python workers' ``PYTHONPATH``, so a task module the user
  wrote next to their .properties imports on the workers as it does on the driver.
* The JVM's ``WARNING: Using incubator modules: jdk.incubator.vector`` (Spark 4's launcher adds
  the module; the JVM announces it on stderr at start, whatever the log settings) is kept off
  stderr: the JVM is started with its stderr through a pipe that passes every other line on.
Any ``spark.*`` key in the given config is passed through and wins over these defaults.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from samza_dagster.config import keys

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_APP_NAME = "samza-dagster"
LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")
DEFAULTS: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.showConsoleProgress": "false",
}


def _spark_settings(config_or_dict: Any) -> dict[str, str]:
    if config_or_dict is None:
        return {}
    items = config_or_dict.items() if isinstance(config_or_dict, Mapping) or hasattr(config_or_dict, "items") else []
    return {str(k): str(v) for k, v in items if str(k).startswith("spark.")}


def get_or_create_spark(
    config_or_dict: Any = None,
    *,
    app_name: str | None = None,
    master: str | None = None,
) -> SparkSession:
    """The active SparkSession (or a new one) with the ``samza`` data source registered.

    ``config_or_dict`` is a ``Config`` or a plain mapping; its ``spark.*`` keys configure the
    session. ``master`` / ``app_name`` arguments win over ``spark.master`` / ``spark.app.name``;
    the app name falls back to ``job.name``. Settings that only apply at JVM start (master,
    driver memory) have no effect when a session is already running in this process.
    """
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    _put_cwd_on_worker_path()

    # pyspark (and its JVM gateway) loads only where Spark runs
    from pyspark.sql import SparkSession

    settings = dict(DEFAULTS)
    settings.update(_spark_settings(config_or_dict))
    if master:
        settings["spark.master"] = master
    settings.setdefault("spark.master", f"local[{os.cpu_count() or 1}]")
    job_name = None
    if config_or_dict is not None and hasattr(config_or_dict, "get"):
        job_name = config_or_dict.get(keys.JOB_NAME.name)
    if settings["spark.master"].startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    settings["spark.app.name"] = app_name or settings.get("spark.app.name") or job_name or DEFAULT_APP_NAME

    quiet_logging = f"-Dlog4j.configurationFile={LOG4J_CONFIG}"
    for key in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"):
        if "log4j.configurationFile" not in settings.get(key, ""):
            settings[key] = f"{settings.get(key, '')} {quiet_logging}".strip()

    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    with _jvm_stderr_without_start_up_noise():
        spark = builder.getOrCreate()
    register_data_source(spark)
    return spark


#: lines the JVM prints on stderr at start that say nothing to a user of this package
JVM_START_UP_NOISE = (b"WARNING: Using incubator modules",)


@contextmanager
def _jvm_stderr_without_start_up_noise() -> Iterator[None]:
    """A JVM launched in this block (the first session of the process) gets a pipe as its
    stderr; a daemon thread passes each line on to this process's stderr except
    :data:`JVM_START_UP_NOISE`. This process's own stderr is itself again after the block. With a
    JVM already running, or no stderr to duplicate, nothing changes."""
    from pyspark import SparkContext

    if SparkContext._gateway is not None:
        yield
        return
    try:
        sys.stderr.flush()
        original = os.dup(2)
    except (OSError, ValueError):
        yield
        return
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)

    def forward() -> None:
        with os.fdopen(read_end, "rb") as pipe:
            for line in pipe:
                if not line.startswith(JVM_START_UP_NOISE):
                    os.write(original, line)

    threading.Thread(target=forward, name="jvm-stderr", daemon=True).start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(original, 2)  # the JVM keeps the pipe; `original` stays open for the thread


def _put_cwd_on_worker_path() -> None:
    cwd = os.getcwd()
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if cwd not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([cwd, *parts])


def register_data_source(spark: SparkSession) -> None:
    """Register the ``samza`` format on ``spark`` (idempotent, cheap)."""
    # the data source imports pyspark at its top: loaded only when registered
    from samza_dagster.spark.datasource import SamzaDataSource

    spark.dataSource.register(SamzaDataSource)
