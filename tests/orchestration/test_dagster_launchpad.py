"""What the launchpad opens with, read as the UI reads it: ``rootDefaultYaml`` over GraphQL from
a code server of the repository's definitions. A job on the embedded log opens without Kafka
settings (it opened with ``kafka_bootstrap_timeout_ms: 5000`` and ``kafka_system: kafka``); the
resource still applies those defaults when brokers are named."""

from __future__ import annotations

from dagster._core.test_utils import instance_for_test
from dagster_graphql.test.utils import define_out_of_process_context, execute_dagster_graphql, infer_job_selector

from samza_dagster.orchestration.resources import SamzaSystemsResource
from tests import REPO

JOBS = """query { repositoriesOrError { ... on RepositoryConnection { nodes { jobs { name } } } } }"""
DEFAULT_YAML = """query($selector: PipelineSelector!) { runConfigSchemaOrError(selector: $selector) {
  __typename ... on RunConfigSchema { rootDefaultYaml } } }"""


def test_no_launchpad_of_a_job_on_the_embedded_log_opens_with_kafka_settings():
    with (
        instance_for_test() as instance,
        define_out_of_process_context(str(REPO / "definitions.py"), "defs", instance) as context,
    ):
        nodes = execute_dagster_graphql(context, JOBS).data["repositoriesOrError"]["nodes"]
        names = [job["name"] for node in nodes for job in node["jobs"] if job["name"].endswith("_job")]
        assert "wordcount_job" in names and "user_classification_job" in names, names
        for name in names:
            found = execute_dagster_graphql(context, DEFAULT_YAML, {"selector": infer_job_selector(context, name)})
            schema = found.data["runConfigSchemaOrError"]
            assert schema["__typename"] == "RunConfigSchema", (name, schema)
            assert "kafka" not in schema["rootDefaultYaml"], (name, schema["rootDefaultYaml"])


def test_the_kafka_defaults_still_apply_when_brokers_are_named():
    fragment = SamzaSystemsResource(kafka_bootstrap_servers="broker:9092").kafka_fragment()
    assert fragment["systems.kafka.samza.factory"] == "kafka"
    assert fragment["systems.kafka.consumer.bootstrap.timeout.ms"] == "5000"
    named = SamzaSystemsResource(kafka_bootstrap_servers="b:1", kafka_system="events", kafka_bootstrap_timeout_ms=0)
    assert named.kafka_fragment()["systems.events.consumer.bootstrap.timeout.ms"] == "0"
