"""``samza-dagster demo``: SAMZA-2's four use cases as real applications, on the spark runner,
and the batch half: a stream landed in an Iceberg table that a daily Dagster asset reads.

Creates the streams on the embedded log (under ``--root`` or a temporary directory), generates
seeded data for each application, runs each on the spark runner with one Spark session reused
for all of them (and for the reprocessing backfill), and prints a report: per application what was
processed and the evidence of its promise. ``run_demo`` returns the structured report as well.

The applications live in ``jobs/`` (each with its task or StreamApplication, .properties, data
generator, scenario and Dagster definitions); this module only sequences and reports them.
"""

from __future__ import annotations

import logging
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from jobs.demo.report import print_application, print_footer, print_header, report_console

DEFAULT_SIZE = 20_000
RUNNERS = ("spark", "thread")
APPLICATIONS = ("user_classification", "currency_join", "ad_ctr", "pageview_pipeline", "clicks_lake")


@dataclass
class DemoReport:
    size: int
    runner: str
    log_root: str
    elapsed_s: float = 0.0
    spark_startup_s: float = 0.0
    user_classification: Any = None
    currency_join: Any = None
    ad_ctr: Any = None
    pageview_pipeline: Any = None
    clicks_lake: Any = None
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "size": self.size,
            "runner": self.runner,
            "log_root": self.log_root,
            "elapsed_s": round(self.elapsed_s, 2),
            "spark_startup_s": round(self.spark_startup_s, 2),
            "errors": self.errors,
        }
        for app in APPLICATIONS:
            value = getattr(self, app)
            d[app] = value.to_dict() if value is not None else None
        return d


def run_demo(
    root: str | None = None,
    size: int | None = None,
    console: Console | None = None,
    *,
    runner: str = "spark",
    spark: Any = None,
) -> int:
    """The CLI entry: run, print, exit status 0 when every application ran and kept its promise."""
    report = build_demo_report(root, size, console, runner=runner, spark=spark)
    return 0 if report.ok else 1


def build_demo_report(
    root: str | None = None,
    size: int | None = None,
    console: Console | None = None,
    *,
    runner: str = "spark",
    spark: Any = None,
) -> DemoReport:
    console = console or report_console()
    size = size or DEFAULT_SIZE
    if runner not in RUNNERS:
        raise ValueError(f"runner must be one of {RUNNERS}, got {runner!r}")
    with tempfile.TemporaryDirectory(prefix="samza-dagster-demo-") as tmp:
        base = Path(root) if root else Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        report = DemoReport(size, runner, str(base))
        started = time.monotonic()
        _quiet_logs()
        print_header(console, report)
        with console.status("[bold]samza-dagster demo[/bold]: starting", spinner="dots") as status:
            own_spark = False
            if runner == "spark" and spark is None:
                status.update("starting a local Spark session (local[2]) — reused by every application")
                t0 = time.monotonic()
                from samza_dagster.spark.session import get_or_create_spark

                spark = get_or_create_spark(
                    {"spark.sql.shuffle.partitions": "2"}, master="local[2]", app_name="samza-dagster-demo"
                )
                spark.sparkContext.setLogLevel("ERROR")
                report.spark_startup_s = time.monotonic() - t0
                own_spark = True
                console.log(f"Spark session up in {report.spark_startup_s:.1f} s")
            run_spark = spark if runner == "spark" else None
            try:
                for name, label, fn in _applications(size):
                    status.update(f"[bold]{name}[/bold]: {label}")
                    t0 = time.monotonic()
                    try:
                        setattr(report, name, fn(base / name / "log", runner=runner, spark=run_spark))
                        console.log(f"{name} done in {time.monotonic() - t0:.1f} s")
                        # its table now, not with the others at the end: a piped run shows each
                        # application's result as it comes
                        print_application(console, report, name)
                    except Exception as exc:  # noqa: BLE001 - one failed application must not hide the others
                        report.errors[name] = f"{type(exc).__name__}: {exc}"
                        console.log(f"[red]{name} failed[/red]: {report.errors[name]}")
            finally:
                if own_spark:
                    spark.stop()
        report.elapsed_s = time.monotonic() - started
        print_footer(console, report, kept=root is not None)
    return report


def _applications(size: int) -> list[tuple[str, str, Any]]:
    from jobs.ad_ctr.scenario import run_scenario as ad_ctr
    from jobs.clicks_lake.scenario import run_scenario as clicks_lake
    from jobs.currency_join.scenario import run_scenario as currency_join
    from jobs.pageview_pipeline.scenario import run_scenario as pageview_pipeline
    from jobs.user_classification.scenario import run_scenario as user_classification

    return [
        (
            "user_classification",
            "classify past signups, change the strategy on the coordinator stream, backfill, serve live signups",
            lambda root, **kw: user_classification(root, size=max(500, size // 2), min_live=200, **kw),
        ),
        (
            "currency_join",
            "bootstrap currency codes, join transactions, restart",
            lambda root, **kw: currency_join(root, size=size, **kw),
        ),
        (
            "ad_ctr",
            "join views and clicks: time-aligned vs round-robin",
            lambda root, **kw: ad_ctr(root, size=size, **kw),
        ),
        (
            "pageview_pipeline",
            "bounded high-level pipeline until end-of-stream",
            lambda root, **kw: pageview_pipeline(root, size=size, **kw),
        ),
        (
            "clicks_lake",
            "land click events in an Iceberg table, aggregate one day of it in Dagster",
            lambda root, **kw: clicks_lake(root, size=size, **kw),
        ),
    ]


def _quiet_logs() -> None:
    """The report is the output; per-container INFO lines would bury it."""
    for name in ("samza_dagster", "py4j", "pyspark"):
        logging.getLogger(name).setLevel(logging.WARNING)
