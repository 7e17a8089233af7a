"""Where the systems are, from the environment: the deployment's half of a job's config.

A job's .properties describes the application; where its systems live belongs to the machine it
runs on. The one rule for where the embedded log lives, used by the command line and by the
Dagster resource ``SamzaSystemsResource`` alike: the deployment's log root — the resource's
``log_path`` when set, else ``SAMZA_LOG_PATH`` — applies to every system whose factory is ``log``
(a system named ``log`` with no factory is one) and wins over the .properties, so the command
line and the Dagster UI started in the same shell read and write the same log. With neither, the
.properties' ``systems.<s>.log.path`` applies, else the log's default ``./.samza-log``.
``--config`` overrides on the command line still win over it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from samza_dagster.config import keys
from samza_dagster.config.config import Config

LOG_PATH_ENV = "SAMZA_LOG_PATH"
DEFAULT_LOG_SYSTEM = "log"


def log_systems(config: Config) -> list[str]:
    """Names of the systems the embedded log backs."""
    names = {DEFAULT_LOG_SYSTEM} if not config.get_str(keys.SYSTEM_FACTORY.key(system=DEFAULT_LOG_SYSTEM)) else set()
    for key, value in config.items():
        if key.startswith("systems.") and key.endswith(".samza.factory") and value.strip() == "log":
            names.add(key[len("systems.") : -len(".samza.factory")])
    return sorted(names)


def log_root(log_path: str | None = None, environ: Mapping[str, str] | None = None) -> str | None:
    """The deployment's log root as an absolute path: ``log_path``, else ``SAMZA_LOG_PATH``;
    None when the deployment names none."""
    env = os.environ if environ is None else environ
    root = (log_path or "").strip() or env.get(LOG_PATH_ENV, "").strip()
    return os.path.abspath(os.path.expanduser(root)) if root else None


def deployment_overrides(
    config: Config, environ: Mapping[str, str] | None = None, *, log_path: str | None = None
) -> dict[str, str]:
    """``systems.<s>.log.path`` for every log system, when the deployment names a log root."""
    root = log_root(log_path, environ)
    if root is None:
        return {}
    return {keys.LOG_PATH.key(system=system): root for system in log_systems(config)}


def apply_deployment(
    config: Config, environ: Mapping[str, str] | None = None, *, log_path: str | None = None
) -> Config:
    overrides = deployment_overrides(config, environ, log_path=log_path)
    return config.with_overrides(overrides) if overrides else config
