"""ad_ctr (Samza design): views joined with clicks within 5 minutes; on the same
skewed input the TimeAlignedChooser holds about five minutes of views while round-robin lets the
sparse clicks stream run hours ahead, so its clicks pile up — and both produce the same join."""

from __future__ import annotations

from jobs.ad_ctr.scenario import run_scenario


def test_time_aligned_join_holds_a_window_while_round_robin_holds_the_backlog(tmp_path):
    r = run_scenario(tmp_path / "log", size=12_000)
    for run in (r.aligned, r.round_robin):
        assert run.outputs == r.views  # one result per view, none lost
        assert run.clicks_joined == r.expected_clicked_views and run.orphan_clicks == 0
    assert r.same_results
    # aligned: bounded by the window (5 min of views at one per ~2 s, per task) — not by the input
    assert r.aligned.peak_clicks == 0 and r.aligned.peak_buffered < 350
    # round-robin: clicks hours ahead wait for their views
    assert r.round_robin.peak_clicks > 0.8 * r.clicks
    assert r.round_robin.peak_buffered > 3 * r.aligned.peak_buffered
