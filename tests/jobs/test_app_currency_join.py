"""currency_join (Samza design): every transaction joined with its symbol, none
processed before currency_codes reached head — also after a restart that brings a new currency —
and, as the control, the same data without the bootstrap flag does join too early."""

from __future__ import annotations

from jobs.currency_join.scenario import run_scenario


def test_bootstrap_joins_every_transaction_after_codes_reach_head_across_a_restart(tmp_path):
    r = run_scenario(tmp_path / "log", size=2000)
    assert r.transactions == r.outputs == 2000
    assert r.joined == 2000 and r.missing_symbol == 0 and r.wrong_amount == 0
    assert r.processed_before_head == 0
    # the restart re-read currency_codes (reset.offset) before any of the 400 new transactions
    assert r.restart_transactions == 400 and r.restart_before_head == 0
    assert r.late_currency_joined > 0


def test_without_bootstrap_transactions_overtake_the_codes(tmp_path):
    r = run_scenario(tmp_path / "log", size=2000, **{"systems.log.streams.currency_codes.samza.bootstrap": "false"})
    assert r.outputs == 2000
    assert r.processed_before_head > 0  # the evidence is not vacuous: without bootstrap it breaks
