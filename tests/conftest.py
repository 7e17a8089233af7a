"""Shared fixtures; the Kafka broker fixtures are the support.kafka_broker and support.kafka_secure plugins."""

from __future__ import annotations

import logging
import signal

import pytest

from samza_dagster.config import Config
from support.session_tmp import SessionTmp

pytest_plugins = ["support.kafka_broker", "support.kafka_secure"]

_SESSION_TMP = SessionTmp()


def pytest_configure(config: pytest.Config) -> None:
    """Before any test or fixture asks for a temporary directory: the session's own."""
    _SESSION_TMP.install()


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Spark tests share one JVM, whose classpath is fixed by the first session: Iceberg's Spark
    runtime goes on it before any (fetched once with mvn, as scripts/test does), so the tables-on-
    Spark tests pass whichever Spark test ran first."""
    if any(item.get_closest_marker("spark") for item in items):
        from samza_dagster.spark.iceberg import preload_runtime

        preload_runtime()


def pytest_unconfigure(config: pytest.Config) -> None:
    _SESSION_TMP.remove()


@pytest.fixture
def log_config(tmp_path) -> Config:
    """A minimal job config on the embedded log system rooted in a temporary directory."""
    return Config(
        {
            "job.name": "test-job",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(tmp_path / "log"),
        }
    )


@pytest.fixture(autouse=True)
def _sigterm_not_ignored():
    """Every test starts with SIGTERM at its default. A process started with SIGTERM ignored (or
    a library in this process that left it so) passes the ignored signal to every child: Dagster's
    compute-log ``tail`` processes then survive the SIGTERM that ends them, and an in-process
    Dagster run waits for them after its op returned — seen as a run that 'did not stop'."""
    if signal.getsignal(signal.SIGTERM) is signal.SIG_IGN:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield


#: loggers that ``samza-dagster``'s quiet mode (cli/commands.configure_logging) sets to ERROR
_CLI_QUIETED_LOGGERS = ("py4j", "pyspark", "kafka")


@pytest.fixture(autouse=True)
def _cli_logging_undone():
    """A test that runs the CLI in this process leaves its quiet logging behind (the Kafka
    clients' loggers at ERROR, the root handlers filtered), one that runs Dagster its loggers
    disabled: undone after each test, so a later test's caplog sees the records it asserts on
    whatever ran before it."""
    levels = {name: logging.getLogger(name).level for name in _CLI_QUIETED_LOGGERS}
    root = logging.getLogger()
    handlers = {handler: (handler.level, list(handler.filters)) for handler in root.handlers}
    yield
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)
    for handler in root.handlers:
        if handler in handlers:
            handler.setLevel(handlers[handler][0])
            handler.filters = handlers[handler][1]
    # Dagster configures its loggers with logging.config.dictConfig, which disables every logger
    # that exists then (disable_existing_loggers): the engine's, made at import, among them
    for name, logger in list(logging.root.manager.loggerDict.items()):
        if name.startswith("samza_dagster") and isinstance(logger, logging.Logger):
            logger.disabled = False
