"""The ``samza`` fixture: Apache Samza 1.8.0's own classes in one JVM for the session (harness.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.samza_interop.harness import SamzaWire, start


@pytest.fixture(scope="session")
def samza(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamzaWire]:
    wire = start(tmp_path_factory.mktemp("samza-wire"))
    try:
        yield wire
    finally:
        wire.close()
