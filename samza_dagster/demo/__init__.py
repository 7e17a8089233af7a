"""``samza-dagster demo``: the main job on the embedded default system."""

from samza_dagster.demo.main import run_demo

__all__ = ["run_demo"]
