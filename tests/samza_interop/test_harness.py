"""The harness itself: the classes answering are Samza 1.8.0's, from the jars the pom names."""

from __future__ import annotations

from support.samza_dist import samza_version
from tests.samza_interop.harness import SamzaWire


def test_the_driver_runs_the_pinned_samza_release(samza: SamzaWire) -> None:
    assert samza.call("ping")["samzaVersion"] == samza_version() == "1.8.0"
