"""Issue 12.5 — security: the coordinator's HTTP service binds loopback and is read-only, the
bearer token guards every method, secrets never leak (logs, served JobModel/config, plan
JSON, job results that become Dagster metadata), no serde unpickles user-facing streams by
default, Kafka SSL/SASL settings reach kafka-python.

Issue 36.5 — the same on a real secured broker (support/kafka_secure.py: SASL_SSL with
SCRAM-SHA-512 and a client certificate whose key is encrypted): jobs on both clients and both
runners that keep secrets apart (thread, process) at DEBUG, the JobModel served over HTTP, a
Dagster materialization, and a refused login — no password, key password or key-store password
anywhere."""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
import uuid

import pytest

from samza_dagster.config import Config
from samza_dagster.config.secrets import MASK, is_secret_key, mask_config
from samza_dagster.coordinator.job_coordinator import JobCoordinator
from samza_dagster.model import SystemStream
from samza_dagster.runtime import run_job
from samza_dagster.serde import PickleSerde
from samza_dagster.serde.registry import SerdeRegistry
from support.kafka_secure import SASL_SSL, SecureKafka
from tests.apps.harness import create_stream, produce
from tests.secure_kafka_config import documented_kafka_config, job_config

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


# -- on a real secured broker ---------------------------------------------------------------------


def _secured_job(kafka: SecureKafka, client: str, name: str, **extra: str) -> Config:
    """The documented SASL_SSL config with a client certificate, a job on it (its coordinator
    stream and checkpoints on Kafka too) and a coordinator token; input written and output made."""
    entries = documented_kafka_config(kafka, SASL_SSL, client, client_certificate=True)
    config = job_config(entries, name, **{"job.coordinator.http.token": "tok-" + uuid.uuid4().hex, **extra})
    create_stream(config, "kafka", f"{name}-in", 2)
    create_stream(config, "kafka", f"{name}-out", 1)  # the count Dagster creates outputs with
    produce(config, "kafka", f"{name}-in", [(i % 2, None, b"x%d" % i) for i in range(20)])
    return config


def _assert_no_secret(text: str, kafka: SecureKafka, config: Config, where: str) -> None:
    values = {**kafka.secrets, "coordinator token": config["job.coordinator.http.token"]}
    for what, value in values.items():
        leaks = [line.replace(value, f"<{what}>")[:400] for line in text.splitlines() if value in line]
        assert not leaks, f"the {what} appears in {where}:\n" + "\n".join(leaks)


@pytest.mark.kafka
@pytest.mark.parametrize("runner", ["thread", "process"])
def test_a_job_on_the_secured_broker_leaks_no_secret_at_debug(secure_kafka, kafka_client, runner, caplog):
    """The client's key is encrypted: that the job runs at all shows the key password reached
    the client (and the admin); kafka-python logs its admin's configuration and each SASL request
    at DEBUG — masked."""
    name = f"leak-{runner}-{kafka_client}-{uuid.uuid4().hex[:6]}"
    caplog.set_level(logging.DEBUG)
    config = _secured_job(secure_kafka, kafka_client, name, **{"job.factory.class": runner})
    result = run_job(config)
    assert result.succeeded, result.summary_line()
    assert result.messages_processed == 20
    assert "Starting KafkaAdminClient with configuration" in caplog.text  # DEBUG reached kafka-python
    text = caplog.text + json.dumps([s.to_dict() for s in result.summaries], default=str) + result.summary_line()
    _assert_no_secret(text, secure_kafka, config, "the logs or the job result")


@pytest.mark.kafka
def test_the_served_job_model_of_a_secured_job_holds_no_secret(secure_kafka, kafka_client):
    """The coordinator reads and writes its coordinator stream through SASL_SSL and serves the
    JobModel and config with every secret masked."""
    name = f"served-{kafka_client}-{uuid.uuid4().hex[:6]}"
    config = _secured_job(secure_kafka, kafka_client, name)
    token = config["job.coordinator.http.token"]
    with JobCoordinator(config) as coordinator:
        for path in ("/", "/config"):
            status, body = _get(coordinator.url + path, token=token)
            assert status == 200
            _assert_no_secret(body.decode(), secure_kafka, config, f"GET {path}")
        _, served = _get(coordinator.url + "/config", token=token)
    assert json.loads(served)["systems.kafka.consumer.sasl.password"] == MASK
    assert json.loads(served)["systems.kafka.producer.ssl.key.password"] == MASK


@pytest.mark.kafka
def test_dagster_metadata_and_logs_of_a_secured_job_hold_no_secret(secure_kafka, kafka_client, tmp_path):
    """A materialization through Dagster (observations, materializations, its logs): nothing of
    it holds a secret."""
    import dagster as dg

    from samza_dagster.orchestration import SamzaSystemsResource, application_definitions

    name = f"dg_{kafka_client.replace('-', '_')}_{uuid.uuid4().hex[:6]}"
    config = _secured_job(secure_kafka, kafka_client, name)
    defs = application_definitions(name, config, declared_outputs=[f"kafka.{name}-out"])
    (job_asset,) = [
        a
        for a in defs.assets
        if isinstance(a, dg.AssetsDefinition) and a.partitions_def is None and not a.is_observable
    ]
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize(
        [job_asset],
        resources={"samza_systems": SamzaSystemsResource(log_path=str(tmp_path / "log"))},
        instance=instance,
    )
    assert result.success
    (materialization,) = result.get_asset_materialization_events()
    assert materialization.materialization.metadata["messages_written"].value == 20
    text = "\n".join(repr(record) for record in instance.all_logs(result.run_id))
    _assert_no_secret(text, secure_kafka, config, "Dagster's event log")


@pytest.mark.kafka
def test_a_refused_login_is_shown_in_dagster_with_the_one_line_and_no_secret(secure_kafka, kafka_client):
    """The plan of a task job needs its inputs' partition counts: the refused login makes the
    application's placeholder asset, whose metadata says why."""
    import dagster as dg

    from samza_dagster.orchestration import application_definitions

    name = f"dg_refused_{kafka_client.replace('-', '_')}_{uuid.uuid4().hex[:6]}"
    wrong = "wrong-" + uuid.uuid4().hex
    entries = documented_kafka_config(secure_kafka, SASL_SSL, kafka_client, password=wrong, client_certificate=True)
    config = job_config(entries, name)
    defs = application_definitions(name, config, declared_outputs=[f"kafka.{name}-out"])
    (spec,) = [a for a in defs.assets if isinstance(a, dg.AssetSpec)]
    error = spec.metadata["error"]
    assert "SystemAuthenticationError: Kafka system 'kafka'" in error and "refused the SASL login" in error, error
    for text in (error, spec.description or ""):
        assert wrong not in text
        _assert_no_secret(text, secure_kafka, Config({"job.coordinator.http.token": "unused-token"}), "the metadata")
