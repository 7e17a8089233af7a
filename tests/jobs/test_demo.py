"""The demo end to end on the spark runner (one local[2] session for the five applications):
its structured report is checked against the data it generated."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from jobs.ad_ctr.data import ad_traffic
from jobs.currency_join.data import CURRENCIES
from jobs.demo import build_demo_report

pytestmark = [pytest.mark.spark, pytest.mark.timeout(420)]

SIZE = 1500


def test_demo_on_spark_reports_what_its_data_implies(tmp_path):
    out = io.StringIO()
    report = build_demo_report(str(tmp_path), SIZE, Console(file=out, width=160), runner="spark")
    assert report.ok, report.errors
    text = out.getvalue()

    uc = report.user_classification
    history = SIZE // 2
    assert uc.backfill_engine == "spark" and uc.backfill_sent == history == uc.reclassified
    assert uc.outputs == 2 * history + uc.live_signups and uc.wrong_country == 0
    assert uc.realtime.p50_ms < uc.batch.p50_ms

    cj = report.currency_join
    assert cj.transactions == cj.joined == SIZE and cj.currency_codes == len(CURRENCIES) + 1
    assert cj.processed_before_head == 0 and cj.missing_symbol == 0 and cj.wrong_amount == 0

    ad = report.ad_ctr
    views, clicks = ad_traffic(SIZE)
    assert (ad.views, ad.clicks) == (len(views), len(clicks))
    assert ad.same_results and ad.aligned.outputs == ad.round_robin.outputs == len(views)
    assert ad.aligned.clicks_joined == len({c["view_id"] for c in clicks})

    pv = report.pageview_pipeline
    assert pv.status == "completed" and pv.counts_match and pv.counted_views == SIZE
    assert pv.intermediate_partitions == {
        "pageview-pipeline-1-partition_by-by-user": 4,
        "pageview-pipeline-1-partition_by-by-country": 3,
    }

    cl = report.clicks_lake
    assert cl.status == "completed" and cl.rows_in_table == cl.events == 3 * (SIZE // 3)
    # the day's aggregate read only that day: its rows, matching the events of the day, and of the
    # three days' data files (a job run each) only its own
    assert cl.aggregate_matches and cl.rows_loaded == cl.day_events == SIZE // 3
    assert (cl.data_files_scanned, cl.data_files) == (1, 3)

    # the printed report carries the same numbers
    assert "transactions processed before currency_codes reached head" in text
    assert f"{SIZE:,} / {SIZE:,}" in text
    assert "dg dev" in text and "dagster dev" not in text
    assert "5. clicks_lake" in text and f"{cl.rows_loaded:,}" in text
