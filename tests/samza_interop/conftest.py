"""The ``samza`` fixture: Apache Samza 1.8.0's own classes in one JVM for the session (harness.py);
``samza_job``: a Java Samza job run by Samza's own runner (samza_job.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.samza_interop.harness import SamzaWire, start
from tests.samza_interop.samza_job import SamzaJob


@pytest.fixture(scope="session")
def samza(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamzaWire]:
    wire = start(tmp_path_factory.mktemp("samza-wire"))
    try:
        yield wire
    finally:
        wire.close()


@pytest.fixture(scope="session")
def samza_job(tmp_path_factory: pytest.TempPathFactory) -> SamzaJob:
    """``SamzaCopyJob.java`` compiled for the session (samza_job.py); each ``run`` a JVM of its own."""
    return SamzaJob(tmp_path_factory.mktemp("samza-job"))
