"""Shared fixtures. Plugins in tests/fixtures/ are registered here."""

from __future__ import annotations

import pytest

from samza_dagster.config import Config

pytest_plugins = ["support.kafka_broker"]


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
