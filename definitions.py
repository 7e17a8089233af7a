"""The Dagster code location of samza_dagster: every application's definitions plus the shared
resources (``dagster dev -w workspace.yaml``).

Resources come from the environment: ``SAMZA_LOG_PATH`` (the embedded log's root, default
``./.samza-log``), ``SAMZA_KAFKA_BOOTSTRAP_SERVERS`` (a Kafka system named ``kafka``), both
overridable in the launchpad. Each application is loaded on its own: one whose plan is rejected
shows up as a failing ``plan_accepted`` check on ``[<app>, execution_plan]`` (and an ERROR log
line naming it), and the others load as usual.
"""

from __future__ import annotations

import importlib
import logging

import dagster as dg

from resources import CoordinatorStreamResource, KafkaAdminResource, SamzaSystemsResource, SparkResource
from samza_dagster.orchestration import SYSTEMS_RESOURCE_KEY, failed_application_definitions

log = logging.getLogger("samza_dagster.definitions")

#: application name → module whose ``definitions()`` builds its Definitions
APPLICATIONS: dict[str, str] = {
    "wordcount": "jobs.wordcount.definitions",
    "user_classification": "jobs.user_classification.definitions",
    "currency_join": "jobs.currency_join.definitions",
    "ad_ctr": "jobs.ad_ctr.definitions",
    "pageview_pipeline": "jobs.pageview_pipeline.definitions",
}


def application(name: str, module: str) -> dg.Definitions:
    """One application's definitions; an import error is contained like a rejected plan."""
    try:
        return importlib.import_module(module).definitions()
    except Exception as exc:  # noqa: BLE001 - one broken application must not hide the others
        log.error("application %s is not loaded: %s: %s", name, type(exc).__name__, exc)
        return failed_application_definitions(name, exc)


def build_definitions(applications: dict[str, str] | None = None) -> dg.Definitions:
    systems = SamzaSystemsResource()
    shared = dg.Definitions(
        resources={
            SYSTEMS_RESOURCE_KEY: systems,
            "kafka_admin": KafkaAdminResource(),
            "spark": SparkResource(),
            "coordinator_stream": CoordinatorStreamResource(systems=systems),
        }
    )
    apps = [application(name, module) for name, module in (applications or APPLICATIONS).items()]
    return dg.Definitions.merge(shared, *apps)


defs = build_definitions()
