"""The demo's report fits the width it is given: nothing cut off with an ellipsis, no line wider
than the console, at 80 columns (a narrow terminal) and 100 (the width used for a pipe or file)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from jobs.ad_ctr.scenario import AdCtrReport, ChooserRun
from jobs.demo.main import DemoReport
from jobs.demo.report import print_report, report_console


def _run(chooser: str, peak: int) -> ChooserRun:
    return ChooserRun(
        chooser,
        outputs=10_000,
        clicks_joined=1_002,
        no_click=8_998,
        orphan_clicks=0,
        peak_buffered=peak,
        peak_views=peak,
        peak_clicks=0,
        messages_processed=11_002,
        elapsed_s=1.0,
    )


def _printed(report: DemoReport, width: int) -> str:
    """The report printed at ``width``: no value cut with an ellipsis, no line wider."""
    out = io.StringIO()
    print_report(Console(file=out, width=width, color_system=None), report, kept=False)
    text = out.getvalue()
    assert "…" not in text, text
    assert max(len(line) for line in text.splitlines()) <= width
    return text


@pytest.mark.parametrize("width", [80, 100])
def test_the_ad_ctr_table_fits_without_cutting_a_value(width):
    report = DemoReport(size=10_000, runner="spark", log_root="/tmp/x", elapsed_s=1.0)
    report.ad_ctr = AdCtrReport(
        views=10_000,
        clicks=1_002,
        expected_clicked_views=1_002,
        aligned=_run("time-aligned", 278),
        round_robin=_run("round-robin", 900),
    )
    text = _printed(report, width)
    assert "time-aligned" in text and "round-robin" in text and "peak held" in text


def test_a_pipe_gets_100_columns(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert report_console().width == 100  # pytest captures stdout: not a terminal


@pytest.mark.parametrize("width", [80, 100])
def test_the_clicks_lake_table_fits_without_cutting_a_value(width):
    from jobs.clicks_lake.scenario import ClicksLakeReport

    report = DemoReport(size=10_000, runner="spark", log_root="/tmp/x", elapsed_s=1.0)
    report.clicks_lake = ClicksLakeReport(
        events=9_999,
        days=["2024-03-01", "2024-03-02", "2024-03-03"],
        table="web.clicks",
        rows_in_table=9_999,
        snapshot_id=6_201_257_528_867_355_339,
        data_files=3,
        day="2024-03-02",
        day_events=3_333,
        rows_loaded=3_333,
        data_files_scanned=1,
        aggregate_rows=20,
        aggregate_matches=True,
        status="completed",
        messages_processed=9_999,
        elapsed_s=1.0,
    )
    text = _printed(report, width)
    assert "6201257528867355339" in text and "3,333 (3,333)" in text and "1 / 3" in text
