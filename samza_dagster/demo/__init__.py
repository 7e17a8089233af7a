"""``samza-dagster demo``: the seed's four use cases (jobs/*) on the spark runner, with a report."""

from samza_dagster.demo.main import DemoReport, build_demo_report, run_demo

__all__ = ["DemoReport", "build_demo_report", "run_demo"]
