"""Sensors: reconfiguration from the coordinator stream, and observation of input streams.

``coordinator_stream_sensor`` keeps the coordinator stream's offset as its cursor. When messages
after the cursor change the job's effective configuration (its .properties overlaid with the
stream's set-config entries; a delete reverts a key to the .properties), it requests one run of
the job with the stream's configuration as overrides; the run key is the offset of the last
message that changed it, so a re-evaluation never requests the same reconfiguration twice.
Messages that cannot be decoded are skipped (the reader logs each one with its offset, and the
sensor logs how many it skipped); a read failure skips the tick — a sensor never crashes on the
stream's content.
"""


import json
from collections.abc import Mapping
from typing import Any

import dagster as dg

from samza_dagster.config import Config
from samza_dagster.coordinator.state import CoordinatorStreamState
from samza_dagster.coordinator.stream import CoordinatorStreamReader
from samza_dagster.orchestration.assets import StreamAssets
from samza_dagster.orchestration.observation import observe_streams
from samza_dagster.orchestration.ops import SYSTEMS_RESOURCE_KEY
from samza_dagster.system.errors import StreamNotFoundError

OFFSET_TAG = "samza/coordinator-offset"
CHANGED_TAG = "samza/changed-keys"


def _resolve(context: Any, config: Config) -> Config:
    systems = getattr(context.resources, SYSTEMS_RESOURCE_KEY, None) if context.resources else None
    return systems.apply(config) if systems is not None else config


def coordinator_stream_sensor(
    job_name: str,
    config: Config,
    *,
    job: Any,
    op_name: str,
    name: str | None = None,
    minimum_interval_seconds: int = 30,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
) -> dg.SensorDefinition:
    """A sensor requesting a reconfiguration run of ``job`` (the Dagster job running the Samza
    job ``job_name``, whose op is ``op_name`` with :class:`SamzaJobRunConfig`)."""

    @dg.sensor(
        name=name or f"{_identifier(job_name)}_coordinator_stream_sensor",
        job=job,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        required_resource_keys={SYSTEMS_RESOURCE_KEY},
        description=f"Reconfigures {job_name} when its coordinator stream changes its config",
    )
    def _sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        cfg = _resolve(context, config)
        try:
            with CoordinatorStreamReader(cfg) as reader:
                messages, next_offset = reader.read(None)  # the whole (compacted) stream: the state before the cursor
                compare = reader.admin.offset_comparator
        except StreamNotFoundError:
            return dg.SkipReason(f"job {job_name} has no coordinator stream yet")
        except Exception as exc:  # noqa: BLE001 - a sensor must survive a bad or unreachable stream
            context.log.warning(f"cannot read the coordinator stream of job {job_name}: {type(exc).__name__}: {exc}")
            return dg.SkipReason(f"coordinator stream of {job_name} unreadable: {exc}")
        cursor = context.cursor
        if cursor is not None and compare(next_offset, cursor) <= 0:
            return dg.SkipReason(f"no new coordinator stream messages after offset {cursor}")

        before, after = CoordinatorStreamState(), CoordinatorStreamState()
        new_offsets: list[str] = []
        for offset, message in messages:
            if cursor is not None and compare(offset, cursor) < 0:
                before.apply(message, offset)
            else:
                new_offsets.append(offset)
            after.apply(message, offset)
        skipped = _skipped(cursor, next_offset, messages)
        if skipped:
            context.log.warning(
                f"coordinator stream of {job_name}: skipped {skipped} undecodable message(s) before offset {next_offset}"
            )
        base = config.to_dict()
        old, new = {**base, **before.config}, {**base, **after.config}
        changed = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
        if not changed:
            return dg.SensorResult(
                skip_reason=f"messages up to offset {next_offset} leave the config of {job_name} unchanged",
                cursor=next_offset,
            )
        trigger = _last_change(messages, new_offsets, before, changed)
        context.log.info(f"job {job_name}: config changed at offset {trigger}: {', '.join(changed)}")
        request = dg.RunRequest(
            run_key=trigger,
            run_config={
                "ops": {
                    op_name: {
                        "config": {
                            "overrides": dict(after.config),
                            "reason": f"(coordinator stream offset {trigger}; changed {', '.join(changed)})",
                        }
                    }
                }
            },
            tags={OFFSET_TAG: trigger, CHANGED_TAG: ",".join(changed)[:1000], "samza/job": job_name},
        )
        return dg.SensorResult(run_requests=[request], cursor=next_offset)

    return _sensor


def _last_change(
    messages: list[tuple[str, Any]], new_offsets: list[str], before: CoordinatorStreamState, changed: list[str]
) -> str:
    """Offset of the last new message that touched a changed key (the run's identity)."""
    new = set(new_offsets)
    keys = set(changed)
    hits = [offset for offset, m in messages if offset in new and m.key in keys]
    return hits[-1] if hits else new_offsets[-1]


def _skipped(cursor: str | None, next_offset: str, messages: list[tuple[str, Any]]) -> int:
    """How many offsets in [cursor, next) decoded to nothing (integer-offset systems only)."""
    try:
        start = int(cursor) if cursor is not None else (int(messages[0][0]) if messages else int(next_offset))
        seen = sum(1 for offset, _ in messages if int(offset) >= start)
        return max(0, int(next_offset) - start - seen)
    except (TypeError, ValueError):
        return 0


def stream_observation_sensor(
    assets: StreamAssets,
    config: Config,
    *,
    name: str | None = None,
    minimum_interval_seconds: int = 60,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
) -> dg.SensorDefinition:
    """Observes the streams an application reads (newest offsets as data version, lag behind
    its checkpoints) and reports an observation for each stream whose data version changed."""

    @dg.sensor(
        name=name or f"{assets.group_name}_stream_observation_sensor",
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        required_resource_keys={SYSTEMS_RESOURCE_KEY},
        description=f"Observes the input streams of {assets.application}",
    )
    def _sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        cfg = _resolve(context, config)
        try:
            observed = observe_streams(cfg, assets.read_streams(), with_lag=True)
        except Exception as exc:  # noqa: BLE001 - report and try again next tick
            context.log.warning(f"cannot observe the streams of {assets.application}: {exc}")
            return dg.SkipReason(f"observation failed: {exc}")
        seen: Mapping[str, str] = json.loads(context.cursor) if context.cursor else {}
        versions = {sid: obs.data_version for sid, obs in observed.items()}
        events = [
            obs.to_event(assets.keys[sid]) for sid, obs in sorted(observed.items()) if seen.get(sid) != versions[sid]
        ]
        if not events:
            return dg.SkipReason("no new messages in the input streams")
        return dg.SensorResult(asset_events=events, cursor=json.dumps(versions, sort_keys=True))

    return _sensor


def _identifier(name: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)
