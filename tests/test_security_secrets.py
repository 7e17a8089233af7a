"""Issue 12.5 — security: the coordinator's HTTP service binds loopback and is read-only, the
bearer token guards every method, secrets never leak (logs, served JobModel/config, plan
JSON, job results that become Dagster metadata), no serde unpickles user-facing streams by
default, Kafka SSL/SASL settings reach kafka-python."""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request

import pytest

from samza_dagster.config import Config
from samza_dagster.config.secrets import MASK, is_secret_key, mask_config
from samza_dagster.coordinator.job_coordinator import JobCoordinator
from samza_dagster.model import SystemStream
from samza_dagster.runtime import run_job
from samza_dagster.serde import PickleSerde
from samza_dagster.serde.registry import SerdeRegistry
from tests.apps.harness import create_stream, produce

SECRETS = {
    "systems.kafka.consumer.sasl.plain.password": "pw-sasl-1f3a",
    "systems.kafka.producer.ssl.keyfile.key": "ssl-key-9c2d",
    "systems.db.password": "db-pw-77e1",
    "job.coordinator.http.token": "tok-5b8e",
}


def _get(url: str, method: str = "GET", token: str | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, method=method, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _config(tmp_path, **extra: str) -> Config:
    entries = {
        "job.name": "secure",
        "job.default.system": "log",
        "systems.log.log.path": str(tmp_path / "log"),
        "task.inputs": "log.in",
        "task.class": "tests.apps.tasks:NoOpTask",
        "systems.log.streams.in.samza.bounded": "true",
        "job.container.count": "1",
        **SECRETS,
    }
    entries.update(extra)
    return Config(entries)


@pytest.mark.parametrize(
    "key",
    [
        "systems.kafka.consumer.sasl.plain.password",
        "systems.kafka.producer.sasl.jaas.config",
        "x.password",
        "systems.k.consumer.ssl.keyfile",
        "systems.k.producer.ssl.key.password",
        "systems.k.admin.sasl.mechanism",
    ],
)
def test_documented_secret_patterns_are_masked(key):
    assert is_secret_key(key) and mask_config({key: "v"}) == {key: MASK}


def test_coordinator_binds_loopback_is_read_only_and_needs_the_token_for_every_method(tmp_path):
    config = _config(tmp_path)
    create_stream(config, "log", "in", 1)
    token = SECRETS["job.coordinator.http.token"]
    with JobCoordinator(config) as coordinator:
        assert coordinator._server.server_address[0] == "127.0.0.1"
        assert coordinator.url.startswith("http://127.0.0.1:")
        for method in ("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
            for path in ("/", "/config", "/healthz", "/anything"):
                assert _get(coordinator.url + path, method)[0] == 401, (method, path)
                assert _get(coordinator.url + path, method, token="wrong")[0] == 401, (method, path)
        version = coordinator.job_model.version
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            status, _ = _get(coordinator.url + "/", method, token=token)
            assert status == 405, method  # nothing changes state
        assert coordinator.job_model.version == version
        for path in ("/", "/config"):
            status, body = _get(coordinator.url + path, token=token)
            assert status == 200
            for value in SECRETS.values():
                assert value.encode() not in body, (path, value)


def test_secrets_never_reach_logs_results_or_container_processes_argv(tmp_path, caplog):
    """A whole job on the process runner at DEBUG: no secret value in any log record or in the
    result (which the Dagster assets turn into metadata); the container still gets the real
    values (over stdin) — the coordinator token works, so the container fetched its model."""
    config = _config(tmp_path, **{"job.factory.class": "process"})
    create_stream(config, "log", "in", 1)
    produce(config, "log", "in", [(0, None, b"x")] * 5)
    caplog.set_level(logging.DEBUG)
    result = run_job(config)
    assert result.succeeded, result.summary_line()
    assert result.messages_processed == 5
    text = caplog.text + json.dumps([s.to_dict() for s in result.summaries], default=str) + result.summary_line()
    for value in SECRETS.values():
        assert value not in text


def test_plan_json_carries_no_secret(tmp_path):
    from samza_dagster.planner import plan_from_config

    config = _config(tmp_path, **{"app.class": "tests.hl_apps.apps:TwoStageCountApp"})
    config = Config({k: v for k, v in config.items() if k != "task.class"})
    create_stream(config, "log", "words", 4)
    plan_json = plan_from_config(config).to_json()
    for value in SECRETS.values():
        assert value not in plan_json


def test_no_serde_unpickles_unless_named(tmp_path):
    registry = SerdeRegistry(Config({"systems.log.samza.msg.serde": "json"}))
    for ss in (SystemStream("log", "in"), SystemStream("kafka", "x")):
        assert not isinstance(registry.msg_serde(ss), PickleSerde)
        assert not isinstance(registry.key_serde(ss), PickleSerde)
    assert isinstance(SerdeRegistry(Config({})).get("pickle", "stores.s.msg.serde"), PickleSerde)  # named: allowed


def test_operator_runtime_never_names_pickle_for_its_own_stores(tmp_path):
    """The operator runtime keeps its own state (window/join/table stores) in tagged JSON: a
    changelog stream's bytes cannot make a job run code at restore. Pickle only when named."""
    from samza_dagster.operators.prepare import OPERATOR_STORE_SERDE, prepare_application

    config = Config(
        {
            "job.name": "picklecheck",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(tmp_path / "log"),
            "app.class": "tests.hl_apps.apps:TwoStageCountApp",
            "job.default.system": "log",
        }
    )
    create_stream(config, "log", "words", 4)
    prepared = prepare_application(config)
    assert "pickle" not in set(prepared.config.values())
    store_serdes = {k: v for k, v in prepared.config.items() if k.startswith("stores.") and k.endswith(".serde")}
    assert store_serdes and set(store_serdes.values()) == {OPERATOR_STORE_SERDE}, store_serdes

    # a user who names pickle for one store gets it for that store only
    store = next(iter(store_serdes)).split(".")[1]
    named = prepare_application(config.with_overrides({f"stores.{store}.msg.serde": "pickle"}), create_streams=False)
    assert named.config[f"stores.{store}.msg.serde"] == "pickle"
    assert named.config[f"stores.{store}.key.serde"] == OPERATOR_STORE_SERDE


def test_kafka_ssl_and_sasl_settings_pass_through_to_kafka_python():
    from samza_dagster.system.kafka.config import kafka_client_configs

    config = Config(
        {
            "systems.k.consumer.bootstrap.servers": "broker:9093",
            "systems.k.consumer.security.protocol": "SASL_SSL",
            "systems.k.consumer.sasl.mechanism": "PLAIN",
            "systems.k.consumer.sasl.plain.username": "user",
            "systems.k.consumer.sasl.plain.password": "pw",
            "systems.k.consumer.ssl.cafile": "/etc/ca.pem",
            "systems.k.consumer.ssl.check.hostname": "true",
            "systems.k.producer.security.protocol": "SSL",
            "systems.k.producer.ssl.certfile": "/etc/client.pem",
            "systems.k.producer.ssl.keyfile": "/etc/client.key",
            "systems.k.producer.ssl.password": "keypw",
        }
    )
    c = kafka_client_configs("k", config)
    assert c.consumer["security_protocol"] == "SASL_SSL" and c.consumer["sasl_mechanism"] == "PLAIN"
    assert c.consumer["sasl_plain_username"] == "user" and c.consumer["sasl_plain_password"] == "pw"
    assert c.consumer["ssl_cafile"] == "/etc/ca.pem" and c.consumer["ssl_check_hostname"] is True
    assert c.producer["security_protocol"] == "SSL" and c.producer["ssl_keyfile"] == "/etc/client.key"
    assert c.producer["ssl_password"] == "keypw"
    # the admin connects like the consumer (same security settings)
    assert c.admin["security_protocol"] == "SASL_SSL" and c.admin["sasl_plain_password"] == "pw"


def test_a_container_that_quotes_a_secret_is_scrubbed_by_the_process_runner(tmp_path):
    config = _config(tmp_path, **{"job.factory.class": "process", "task.class": "tests.apps.tasks:LeakySecretTask"})
    create_stream(config, "log", "in", 1)
    produce(config, "log", "in", [(0, None, b"x")])
    result = run_job(config)
    assert not result.succeeded
    text = result.summary_line() + json.dumps([s.to_dict() for s in result.summaries], default=str)
    assert "login failed for password ********" in text
    for value in SECRETS.values():
        assert value not in text


def test_scrub_masks_every_secret_value_in_text():
    from samza_dagster.config.secrets import scrub

    text = "user=job pw-sasl-1f3a and tok-5b8e twice: tok-5b8e; short values like 'ab' stay"
    assert scrub(text, {**SECRETS, "x.password": "ab"}) == (
        "user=job ******** and ******** twice: ********; short values like 'ab' stay"
    )
