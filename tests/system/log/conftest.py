"""Every test of the embedded log runs twice: with format 3's thresholds as shipped, and with them
lowered so that batches are written as runs of their own, the head is sealed every few rows, and
reads, cleaning and time lookups meet rows in the head, in runs and across both
(runs_format.py)."""

from __future__ import annotations

import pytest

from samza_dagster.system.log.runs_format import RunsFormat

#: (seal_rows, direct_rows_per_partition) of the lowered run
SMALL = (3, 2)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # (the hypothesis state machines are unittest cases, which are not parametrized: they set the
    # thresholds themselves)
    if "runs_thresholds" in metafunc.fixturenames:
        metafunc.parametrize("runs_thresholds", ["shipped", "small-seals"], indirect=True)


@pytest.fixture(autouse=True)
def runs_thresholds(request, monkeypatch) -> tuple[int, int]:
    if getattr(request, "param", "shipped") == "small-seals":
        monkeypatch.setattr(RunsFormat, "seal_rows", SMALL[0])
        monkeypatch.setattr(RunsFormat, "direct_rows_per_partition", SMALL[1])
    return RunsFormat.seal_rows, RunsFormat.direct_rows_per_partition
