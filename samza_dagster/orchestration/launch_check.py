"""What a Dagster launch checks before it creates a stream or starts a runner: the run's own
config — the .properties, the ``samza_systems`` resource and the launchpad's ``overrides`` —
through the pre-flight ``samza-dagster run`` uses. The component checked the .properties when
the code location loaded, but an override is only known at launch: without this, a bad value
failed inside a container (after a Spark session had started) and a mistyped key was silently
ignored. The ``dagster.*`` settings are read again when the overrides set any of them, so a
launchpad override of, say, the materialization interval applies to that run."""

from __future__ import annotations

from collections.abc import Mapping

import dagster as dg

from samza_dagster.config import Config, ConfigError
from samza_dagster.config.preflight import check_unread_keys
from samza_dagster.orchestration.settings import DagsterSettings
from samza_dagster.runtime.preflight import check_job_values

DAGSTER_PREFIX = "dagster."


def check_launch_config(
    context: dg.AssetExecutionContext,
    config: Config,
    job_name: str,
    overrides: Mapping[str, str],
    settings: DagsterSettings,
) -> DagsterSettings:
    """Warn in the run's log about keys nothing reads; fail the step with one line naming the
    key of a bad value or of a near miss of a defined key. Returns the settings this run goes by."""
    try:
        check_unread_keys(config, lambda message: context.log.warning(f"job {job_name}: {message}"))
        check_job_values(config)
        if any(key.startswith(DAGSTER_PREFIX) for key in overrides):
            return DagsterSettings.from_config(config)
    except ConfigError as exc:
        raise dg.Failure(description=f"job {job_name}: {exc}") from exc
    return settings
