"""pageview_pipeline (Samza design): the bounded high-level application stops by itself
(end-of-stream through two intermediate streams), its plan infers the intermediate partition
counts, and its hourly per-country counts equal the ones computed from the generated data."""

from __future__ import annotations

from jobs.pageview_pipeline.scenario import run_scenario


def test_bounded_pipeline_terminates_with_exact_counts_and_inferred_partitions(tmp_path):
    r = run_scenario(tmp_path / "log", size=3000)
    assert r.status == "completed"  # every container ended at end-of-stream, nobody stopped it
    assert r.intermediate_partitions == {
        "pageview-pipeline-1-partition_by-by-user": 4,  # joined with the side-input table (4), not page_views (2)
        "pageview-pipeline-1-partition_by-by-country": 3,  # job.intermediate.stream.partitions
    }
    assert r.input_partitions == {"page_views": 2, "user_profiles": 4, "country_counts": 2}
    assert r.counts_match and r.counted_views == 3000
    assert r.windows == 6 * 6  # 6 countries × 6 hours, each window fired exactly once
