"""The input data versions a job's materializations record (Dagster's provenance).

Dagster reads each input's latest data version once, when a step starts, and records it on every
materialization the step makes as the version that output was computed from. A Samza job's op
observes its inputs itself, before the run and after it, so the version read at the step's start
was older than this run's own observations (a sensor tick's, or the previous run's untagged
"processed by" one): every output showed "Unsynced" right after a successful run, naming inputs
that had not changed. Now the "processed by" observation carries the version of what the run
read, the step reads its inputs' versions again just before the materializations, and when the
inputs moved on during the run a last observation after the materializations says so, so an
output is unsynced exactly when its inputs hold messages it did not process.
"""

from __future__ import annotations

from collections.abc import Iterable

import dagster as dg

from samza_dagster.orchestration.observation import StreamObservation


def processed_version(before: StreamObservation, after: StreamObservation | None) -> str:
    """The data version of what a run read from an input: its offsets after the run when the job
    left no lag behind them, else the offsets it saw at its start (a bounded job reads up to
    those and stops; messages that arrived since are not in its outputs)."""
    if after is not None and after.exists and after.lag is not None and not any(after.lag.values()):
        return after.data_version
    return before.data_version


def read_input_versions_again(context: dg.AssetExecutionContext, keys: Iterable[dg.AssetKey]) -> None:
    """Drop the versions Dagster read for ``keys`` when the step started, so the next
    materialization reads them again — after the observations this step logged, which Dagster
    stores just before the first materialization the op yields. (Dagster 1.13's step context has
    no public way to say this; the version is pinned in pyproject.toml and a test covers it.)"""
    step = context.get_step_execution_context()
    for key in keys:
        step.wipe_input_asset_version_info(key)
