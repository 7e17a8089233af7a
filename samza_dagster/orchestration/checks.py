"""Asset checks on the streams a Samza job writes.

* ``consumer_lag`` — how many input messages the job has not yet processed: when a run ends, the
  containers' own ``messages-behind-high-watermark`` metrics (the numbers the metrics stream and
  Prometheus show); otherwise its checkpoints against the inputs' upcoming offsets. Passes up to ``dagster.check.lag.warn.messages``, fails
  with severity WARN up to ``dagster.check.lag.error.messages``, with ERROR above. Evaluated when
  a run of the job ends and by the application's stream observation sensor while it runs.
* ``reached_end_of_stream`` — a bounded job's run ended by itself, every input at its end (not
  stopped, not failed). Evaluated when a run ends.
"""

from __future__ import annotations

from collections.abc import Mapping

import dagster as dg
from dagster._core.definitions.asset_checks.asset_check_evaluation import AssetCheckEvaluationTargetMaterializationData

from samza_dagster.orchestration.assets import StreamAssets
from samza_dagster.orchestration.observation import StreamObservation
from samza_dagster.orchestration.settings import DagsterSettings

LAG_CHECK = "consumer_lag"
END_OF_STREAM_CHECK = "reached_end_of_stream"


def check_specs(assets: StreamAssets, *, bounded: bool) -> list[dg.AssetCheckSpec]:
    specs = []
    for key in assets.written_keys:
        specs.append(
            dg.AssetCheckSpec(
                LAG_CHECK,
                asset=key,
                description="Input messages the job has not processed yet, against thresholds (at a run's end from the "
                "containers' lag metrics, while it runs from its checkpoints)",
            )
        )
        if bounded:
            specs.append(
                dg.AssetCheckSpec(
                    END_OF_STREAM_CHECK,
                    asset=key,
                    description="The bounded job ended by itself with every input at its end",
                )
            )
    return specs


def lag_per_input(inputs: Mapping[str, StreamObservation]) -> dict[str, int]:
    """stream id → messages after the job's checkpoints (streams with a known lag only)."""
    return {sid: sum(obs.lag.values()) for sid, obs in sorted(inputs.items()) if obs.lag is not None}


def lag_evaluation(
    key: dg.AssetKey,
    inputs: Mapping[str, StreamObservation],
    settings: DagsterSettings,
    metrics_lag: Mapping[str, int] | None = None,
    instance: dg.DagsterInstance | None = None,
) -> dg.AssetCheckEvaluation:
    """``metrics_lag`` (stream id → messages behind, from the job's metrics) wins over the
    checkpoint-based lag of ``inputs`` when given. Given the ``instance`` (a sensor's runless
    evaluation), the evaluation names the asset's latest materialization as its target: Dagster
    shows a check's latest execution only for the latest materialization, and without a target it
    compares timestamps its check records keep to the second — an evaluation in the same second
    as the materialization read as older, "Not evaluated"."""
    per_input = dict(metrics_lag) if metrics_lag else lag_per_input(inputs)
    total = sum(per_input.values())
    if total > settings.lag_error:
        passed, severity = False, dg.AssetCheckSeverity.ERROR
    elif total > settings.lag_warn:
        passed, severity = False, dg.AssetCheckSeverity.WARN
    else:
        passed, severity = True, dg.AssetCheckSeverity.WARN
    return dg.AssetCheckEvaluation(
        asset_key=key,
        check_name=LAG_CHECK,
        passed=passed,
        target_materialization_data=latest_materialization(instance, key) if instance is not None else None,
        severity=severity,
        description=f"{total} input messages not yet processed (warn above {settings.lag_warn}, error above "
        f"{settings.lag_error})",
        metadata={
            "lag": dg.MetadataValue.int(total),
            "lag_per_input": dg.MetadataValue.json(per_input),
            "lag_source": "metrics" if metrics_lag else "checkpoints",
            "warn_above": dg.MetadataValue.int(settings.lag_warn),
            "error_above": dg.MetadataValue.int(settings.lag_error),
        },
    )


def latest_materialization(
    instance: dg.DagsterInstance, key: dg.AssetKey
) -> AssetCheckEvaluationTargetMaterializationData | None:
    """The asset's latest materialization as a check evaluation's target (None: never materialized)."""
    records = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=key), limit=1).records
    if not records:
        return None
    record = records[0]
    return AssetCheckEvaluationTargetMaterializationData(
        storage_id=record.storage_id, run_id=record.run_id, timestamp=record.timestamp
    )


def lag_result(
    key: dg.AssetKey,
    inputs: Mapping[str, StreamObservation],
    settings: DagsterSettings,
    metrics_lag: Mapping[str, int] | None = None,
) -> dg.AssetCheckResult:
    evaluation = lag_evaluation(key, inputs, settings, metrics_lag)
    return dg.AssetCheckResult(
        asset_key=key,
        check_name=LAG_CHECK,
        passed=evaluation.passed,
        severity=evaluation.severity,
        description=evaluation.description,
        metadata=evaluation.metadata,
    )


def end_of_stream_result(key: dg.AssetKey, status: str, stopped_by: str | None) -> dg.AssetCheckResult:
    passed = status == "completed"
    why = (
        "ended by itself: every input reached end-of-stream"
        if passed
        else (f"the run was {stopped_by}" if stopped_by else f"the job ended {status}")
    )
    return dg.AssetCheckResult(
        asset_key=key,
        check_name=END_OF_STREAM_CHECK,
        passed=passed,
        severity=dg.AssetCheckSeverity.WARN,
        description=why,
        metadata={"job_status": status},
    )
