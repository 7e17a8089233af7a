"""Shared fixtures; the Kafka broker fixtures are the support.kafka_broker plugin."""

from __future__ import annotations

import pytest

from samza_dagster.config import Config
from support.session_tmp import SessionTmp

pytest_plugins = ["support.kafka_broker"]

_SESSION_TMP = SessionTmp()


def pytest_configure(config: pytest.Config) -> None:
    """Before any test or fixture asks for a temporary directory: the session's own."""
    _SESSION_TMP.install()


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
