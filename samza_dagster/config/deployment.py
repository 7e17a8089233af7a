"""Where the systems are, from the environment: the deployment's half of a job's config.

A job's .properties describes the application; where its systems live belongs to the machine it
runs on. ``SAMZA_LOG_PATH`` names the embedded log's root directory: it applies to every system
whose factory is ``log`` (a system named ``log`` with no factory is one) and wins over the
.properties, as the Dagster code location's ``samza_systems`` resource does — so the command line
and the Dagster UI started in the same shell read and write the same log. ``--config`` overrides
on the command line still win over it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from samza_dagster.config.config import Config

LOG_PATH_ENV = "SAMZA_LOG_PATH"
DEFAULT_LOG_SYSTEM = "log"


def log_systems(config: Config) -> list[str]:
    """Names of the systems the embedded log backs."""
    names = {DEFAULT_LOG_SYSTEM} if not config.get_str(f"systems.{DEFAULT_LOG_SYSTEM}.samza.factory") else set()
    for key, value in config.items():
        if key.startswith("systems.") and key.endswith(".samza.factory") and value.strip() == "log":
            names.add(key[len("systems."): -len(".samza.factory")])
    return sorted(names)


def deployment_overrides(config: Config, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``systems.<s>.log.path`` for every log system, when ``SAMZA_LOG_PATH`` is set."""
    env = os.environ if environ is None else environ
    root = env.get(LOG_PATH_ENV, "").strip()
    if not root:
        return {}
    path = os.path.abspath(os.path.expanduser(root))
    return {f"systems.{system}.log.path": path for system in log_systems(config)}


def apply_deployment(config: Config, environ: Mapping[str, str] | None = None) -> Config:
    overrides = deployment_overrides(config, environ)
    return config.with_overrides(overrides) if overrides else config
