"""The demo's printed report: one rich table per application, printed as each application ends
(``print_application``), then how to open it in Dagster (``print_footer``)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


def _table(title: str) -> Table:
    t = Table(title=title, title_justify="left", show_header=True, header_style="bold")
    t.add_column("", overflow="fold")
    t.add_column("value", justify="right", no_wrap=True)
    return t


def report_console() -> Console:
    """A terminal's own width; 100 columns when the output is a file or a pipe (rich's 80
    would cut the widest table), unless ``COLUMNS`` says otherwise. Its log lines carry no
    ``main.py:108`` (rich's default: the caller's file and line)."""
    import os
    import sys

    if sys.stdout.isatty() or os.environ.get("COLUMNS"):
        return Console(log_path=False)
    return Console(width=100, log_path=False)


def print_report(console: Console, report: Any, *, kept: bool) -> None:
    """The whole report at once: the header, every application's section, the footer."""
    print_header(console, report)
    for name in ("user_classification", "currency_join", "ad_ctr", "pageview_pipeline", "clicks_lake"):
        print_application(console, report, name)
    print_footer(console, report, kept=kept)


def print_header(console: Console, report: Any) -> None:
    console.rule(f"[bold]samza-dagster demo[/bold] — {report.runner} runner, size {report.size:,}")


def print_application(console: Console, report: Any, name: str) -> None:
    """The section of application ``name`` (nothing when it has no result)."""
    {
        "user_classification": _user_classification,
        "currency_join": _currency_join,
        "ad_ctr": _ad_ctr,
        "pageview_pipeline": _pageview_pipeline,
        "clicks_lake": _clicks_lake,
    }[name](console, getattr(report, name))


def _user_classification(console: Console, uc: Any) -> None:
    if uc is not None:
        t = Table(
            title="1. user_classification — streams with different latency SLAs (priority 1 vs 0)",
            title_justify="left",
            header_style="bold",
        )
        for col in ("stream", "messages", "p50 latency ms", "p99 latency ms", "max ms"):
            t.add_column(col, justify="right" if col != "stream" else "left", overflow="fold")
        for label, split in (
            ("user_signups (real-time, priority 1)", uc.realtime),
            ("  … served during the backfill flood", uc.realtime_during_flood),
            ("reclassify_requests (batch, priority 0)", uc.batch),
        ):
            t.add_row(label, f"{split.count:,}", f"{split.p50_ms:,.1f}", f"{split.p99_ms:,.1f}", f"{split.max_ms:,.1f}")
        console.print(t)
        console.print(
            f"   {uc.history_users:,} past users classified with [bold]{uc.first_strategy}[/bold]; coordinator stream "
            f"set {uc.reconfiguration}; backfill ({uc.backfill_engine}) re-sent {uc.backfill_sent:,} users; "
            f"{uc.reclassified:,} reclassified, {uc.countries_changed:,} changed country; "
            f"{uc.live_signups:,} live signups; {uc.wrong_country} wrong classifications; "
            f"{uc.messages_processed:,} messages processed"
        )


def _currency_join(console: Console, cj: Any) -> None:
    if cj is not None:
        t = _table("2. currency_join — bootstrapping a state stream")
        t.add_row("currency codes (bootstrap stream, 4 partitions)", f"{cj.currency_codes:,}")
        t.add_row("transactions joined / in", f"{cj.joined:,} / {cj.transactions:,}")
        t.add_row(
            "[bold]transactions processed before currency_codes reached head[/bold]",
            f"[bold]{cj.processed_before_head}[/bold]",
        )
        t.add_row(
            "… of them in the restarted run (new currency added)",
            f"{cj.restart_before_head} of {cj.restart_transactions:,}",
        )
        t.add_row("transactions without a symbol / wrong amount", f"{cj.missing_symbol} / {cj.wrong_amount}")
        t.add_row("messages processed (2 runs)", f"{cj.messages_processed:,}")
        console.print(t)


def _ad_ctr(console: Console, ad: Any) -> None:
    if ad is not None:
        t = Table(
            title="3. ad_ctr — time-aligned streams (5-minute join buffer)", title_justify="left", header_style="bold"
        )
        # short headers and an unwrapped first column: the table fits 80 columns as well as 100
        t.caption, t.caption_justify = "peak held: views and clicks waiting in the join buffer at once", "left"
        t.add_column("chooser", no_wrap=True)
        for col in ("views → results", "clicks joined", "peak held", "peak views", "peak clicks"):
            t.add_column(col, justify="right", overflow="fold")
        for run in (ad.aligned, ad.round_robin):
            t.add_row(
                run.chooser,
                f"{run.outputs:,}",
                f"{run.clicks_joined:,}",
                f"{run.peak_buffered:,}",
                f"{run.peak_views:,}",
                f"{run.peak_clicks:,}",
            )
        console.print(t)
        console.print(
            f"   {ad.views:,} views, {ad.clicks:,} clicks (CTR {ad.ctr:.1%}); same join results: "
            f"{'yes' if ad.same_results else 'NO'}; round-robin held [bold]{ad.buffer_ratio:.1f}×[/bold] as much"
        )


def _pageview_pipeline(console: Console, pv: Any) -> None:
    if pv is not None:
        t = _table("4. pageview_pipeline — bounded high-level application (plan + end-of-stream)")
        for sid, n in pv.input_partitions.items():
            t.add_row(f"stream {sid}", f"{n} partitions")
        for sid, n in pv.intermediate_partitions.items():
            t.add_row(f"[bold]intermediate {sid}[/bold] (inferred)", f"[bold]{n} partitions[/bold]")
        t.add_row("page views counted / in", f"{pv.counted_views:,} / {pv.page_views:,}")
        t.add_row(
            "hourly country windows (counts match the data)", f"{pv.windows} ({'yes' if pv.counts_match else 'NO'})"
        )
        t.add_row("job status", f"{pv.status} (ended by itself)")
        console.print(t)


def _clicks_lake(console: Console, cl: Any) -> None:
    if cl is not None:
        t = _table("5. clicks_lake — the batch half: stream → job → Iceberg table → daily aggregate")
        t.add_row(
            f"click events in ({len(cl.days)} days, a job run each) / rows in table {cl.table}",
            f"{cl.events:,} / {cl.rows_in_table:,}",
        )
        t.add_row("table snapshot (carries the job's checkpoint)", str(cl.snapshot_id))
        t.add_row(
            f"[bold]day {cl.day}: rows the IO manager loaded[/bold] (the day's events)",
            f"[bold]{cl.rows_loaded:,}[/bold] ({cl.day_events:,})",
        )
        t.add_row("data files scanned / in the table", f"{cl.data_files_scanned} / {cl.data_files}")
        t.add_row(
            "daily aggregate (country × page) matches the events",
            f"{cl.aggregate_rows} rows ({'yes' if cl.aggregate_matches else 'NO'})",
        )
        console.print(t)


def print_footer(console: Console, report: Any, *, kept: bool) -> None:
    for name, error in report.errors.items():
        console.print(f"[red]{name} FAILED[/red]: {error}")
    console.print(
        f"done in {report.elapsed_s:.1f} s"
        + (f" (Spark session {report.spark_startup_s:.1f} s)" if report.spark_startup_s else "")
    )
    if kept:
        console.print(f"streams kept under {report.log_root}/<application>/log")
        console.print(
            "Open an application's streams in the Dagster UI:  "
            f"[bold]SAMZA_LOG_PATH={report.log_root}/<application>/log dg dev[/bold]  "
            "(from the checkout; each application keeps its own log root) — assets per stream, one job per "
            "application, the coordinator-stream sensor for reconfiguration."
        )
    else:  # the streams were in a temporary directory, gone now
        console.print(
            "To open the streams in the Dagster UI, keep them:  [bold]samza-dagster demo --root DIR[/bold], "
            "then [bold]SAMZA_LOG_PATH=DIR/<application>/log dg dev[/bold] from the checkout — assets per "
            "stream, one job per application, the coordinator-stream sensor for reconfiguration."
        )
