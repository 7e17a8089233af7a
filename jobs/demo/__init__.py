"""``samza-dagster demo``: five example applications of ``jobs/`` on the spark runner, with a
report. The command line loads this package by name from the checkout, as it loads any
application; the engine never imports it."""

from jobs.demo.main import DemoReport, build_demo_report, run_demo

__all__ = ["DemoReport", "build_demo_report", "run_demo"]
