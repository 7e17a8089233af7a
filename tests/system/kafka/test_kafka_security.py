"""Kafka security for real: Apache Kafka with a SASL_SSL (SCRAM-SHA-512), a SASL_PLAINTEXT and an
SSL listener requiring a client certificate (support/kafka_secure.py, a broker of this module's
own), configured with exactly the keys docs/operations.md documents (tests/secure_kafka_config.py
reads them from the page).

* a job on each client reads, writes, checkpoints and keeps its coordinator stream through each
  listener;
* a wrong password, an untrusted broker certificate and a client certificate the brokers refuse
  (of another CA, or none) are one line naming the system and the cause, without the password —
  from each part of the system (admin, consumer, producer), from a job whose containers fail,
  and from ``samza-dagster run`` (exit 1, nothing else on stderr);
* the key translations the security settings need reach every client.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from samza_dagster.config import Config
from samza_dagster.runtime import run_job
from samza_dagster.system import SystemAuthenticationError
from samza_dagster.system.factories import system_factory
from samza_dagster.system.kafka import kafka_client_configs
from samza_dagster.system.kafka.confluent_config import confluent_configs
from support.kafka_secure import SASL_PLAINTEXT, SASL_SSL, SSL, SecureKafka
from tests import REPO
from tests.apps.harness import create_stream, produce
from tests.secure_kafka_config import documented_kafka_config, job_config

pytestmark = pytest.mark.kafka

LISTENERS = [
    pytest.param(SASL_SSL, id="SASL_SSL"),
    pytest.param(SASL_PLAINTEXT, id="SASL_PLAINTEXT"),
    pytest.param(SSL, id="SSL-client-certificate-required"),
]
MESSAGES = 200
WRONG_PASSWORD = "not-the-password-" + uuid.uuid4().hex[:8]


def _prefix(listener, client: str) -> str:
    return f"sec-{listener.name.lower().replace('_', '-')}-{client}-{uuid.uuid4().hex[:6]}"


def read_plaintext(kafka: SecureKafka, topic: str, partitions: int, expected: int, timeout_s: float = 30.0) -> list:
    """What ``topic`` holds, read over the broker's PLAINTEXT listener (not the secured path the
    job used): (key, value) pairs, once ``expected`` arrived or the timeout passed."""
    consumer = Consumer(
        {"bootstrap.servers": kafka.plaintext_bootstrap_servers, "group.id": "check", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: list = []
    deadline = time.monotonic() + timeout_s
    try:
        while len(out) < expected and time.monotonic() < deadline:
            for message in consumer.consume(500, timeout=0.5):
                if message.error() is None:
                    out.append((message.key(), message.value()))
    finally:
        consumer.close()
    return out


@pytest.mark.parametrize("listener", LISTENERS)
def test_a_job_reads_and_writes_through_the_secured_listener_with_the_documented_keys(
    secure_kafka, kafka_client, listener
):
    prefix = _prefix(listener, kafka_client)
    config = job_config(documented_kafka_config(secure_kafka, listener, kafka_client), prefix)
    create_stream(config, "kafka", f"{prefix}-in", 2)  # the admin, through the listener
    create_stream(config, "kafka", f"{prefix}-out", 2)
    sent = [(i % 2, f"k{i}".encode(), f"v{i}".encode()) for i in range(MESSAGES)]
    produce(config, "kafka", f"{prefix}-in", sent)  # the producer, through the listener

    result = run_job(config)  # consumer, producer, checkpoints and coordinator stream: the listener

    assert result.succeeded, result.summary_line()
    assert result.messages_processed == MESSAGES
    copied = read_plaintext(secure_kafka, f"{prefix}-out", 2, MESSAGES)
    assert sorted(copied) == sorted((k, v) for _, k, v in sent)
    # the checkpoint and the coordinator stream went through it too: a second run resumes at the end
    again = run_job(config)
    assert again.succeeded and again.messages_processed == 0, again.summary_line()


# -- a wrong password, an untrusted certificate ------------------------------------------------

CAUSES = {
    "wrong password": ("refused the SASL login", "invalid credentials"),
    "untrusted certificate": ("TLS certificate of the brokers", "is not trusted"),
    # the SSL listener requires a client certificate signed by its CA; this one's CA is another
    "refused client certificate": ("refused the client certificate", "ssl.client.auth=required", "alert"),
}


def _failing_config(kafka: SecureKafka, client: str, cause: str, listener=None) -> dict[str, str]:
    if cause == "wrong password":
        return documented_kafka_config(kafka, listener or SASL_PLAINTEXT, client, password=WRONG_PASSWORD)
    if cause == "refused client certificate":
        return documented_kafka_config(kafka, SSL, client, certificate="stranger")
    return documented_kafka_config(kafka, SASL_SSL, client, ca_pem=kafka.untrusted_ca.certificate_pem)


def _listener_of(cause: str):
    return SSL if cause == "refused client certificate" else SASL_SSL


def _assert_one_clear_line(text: str, kafka: SecureKafka, cause: str) -> None:
    assert "\n" not in text.strip(), text
    assert "Kafka system 'kafka'" in text, text
    for words in CAUSES[cause]:
        assert words in text, text
    for secret in (WRONG_PASSWORD, *kafka.secrets.values()):
        assert secret not in text, text


def _start(part: str, config: Config) -> None:
    factory = system_factory(config, "kafka")
    if part == "admin":
        factory.get_admin("kafka", config).get_system_stream_metadata(["anything"])
    elif part == "consumer":
        factory.get_consumer("kafka", config).start()
    else:
        factory.get_producer("kafka", config).start()


@pytest.mark.timeout(60, func_only=True)  # a hang (retrying the refused login for ever) fails here
@pytest.mark.parametrize("part", ["admin", "consumer", "producer"])
@pytest.mark.parametrize("cause", list(CAUSES))
def test_each_client_fails_with_one_line_naming_the_system_and_the_cause(secure_kafka, kafka_client, cause, part):
    config = Config(_failing_config(secure_kafka, kafka_client, cause))
    before = set(threading.enumerate())
    with pytest.raises(SystemAuthenticationError) as failed:
        _start(part, config)
    _assert_one_clear_line(str(failed.value), secure_kafka, cause)
    assert f"({part}" in str(failed.value)  # which client failed
    # nothing left retrying: kafka-python's admin used to leave its IO thread reconnecting for good
    left = [t.name for t in set(threading.enumerate()) - before if t.name.startswith("kafka-io-")]
    assert not left, left


@pytest.mark.timeout(60, func_only=True)
def test_no_client_certificate_on_a_listener_requiring_one_is_the_one_line(secure_kafka, kafka_client):
    """The documented SSL config without its certificate keys: the brokers' alert, not a
    timeout "cannot reach the brokers" (what both clients said before), names the cause."""
    config = Config(documented_kafka_config(secure_kafka, SSL, kafka_client, certificate="none"))
    assert "systems.kafka.consumer.ssl.certificate.location" not in config
    with pytest.raises(SystemAuthenticationError) as failed:
        _start("consumer", config)
    _assert_one_clear_line(str(failed.value), secure_kafka, "refused client certificate")
    assert "alert bad certificate" in str(failed.value)


@pytest.mark.parametrize("cause", list(CAUSES))
def test_the_confluent_client_fails_at_once_not_at_its_bootstrap_timeout(secure_kafka, cause):
    """Java's clients fail on an authentication error instead of retrying it; so does the
    confluent client here, whatever its bootstrap timeout."""
    entries = _failing_config(secure_kafka, "confluent", cause)
    config = Config({**entries, "systems.kafka.consumer.bootstrap.timeout.ms": "300000"})
    started = time.monotonic()
    with pytest.raises(SystemAuthenticationError):
        _start("consumer", config)
    assert time.monotonic() - started < 60  # not the 300 s it was given


@pytest.mark.parametrize("cause", list(CAUSES))
def test_a_job_whose_containers_are_refused_fails_with_the_one_line(secure_kafka, kafka_client, cause, tmp_path):
    """The admin logs in (its own right settings, ``admin.*``) and the coordinator stream is on
    the embedded log; the containers' consumer and producer are refused: the job fails, its
    error is the one line. (With the coordinator stream on Kafka, its writer is refused first
    and ``run_job`` raises the same line.)"""
    listener = _listener_of(cause)
    prefix = _prefix(listener, kafka_client)
    good = documented_kafka_config(secure_kafka, listener, kafka_client)
    config = job_config(good, prefix)
    create_stream(config, "kafka", f"{prefix}-in", 1)
    create_stream(config, "kafka", f"{prefix}-out", 1)
    produce(config, "kafka", f"{prefix}-in", [(0, b"k", b"v")])
    bad = _failing_config(secure_kafka, kafka_client, cause, listener)
    consumer = "systems.kafka.consumer."
    admin = {  # the admin keeps the right password, CA or certificate
        f"systems.kafka.admin.{key[len(consumer) :]}": value
        for key, value in good.items()
        if key.startswith(consumer) and bad.get(key) != value
    }
    coordinator_on_the_log = {
        "job.coordinator.system": "log",
        "systems.log.samza.factory": "log",
        "systems.log.log.path": str(tmp_path / "log"),
    }
    result = run_job(job_config({**bad, **admin}, prefix, **coordinator_on_the_log))
    assert not result.succeeded
    assert result.error is not None
    _assert_one_clear_line(result.error, secure_kafka, cause)
    assert "start)" in result.error  # the consumer's or producer's start, not the admin


def _cli_run(tmp_path: Path, entries: dict[str, str]) -> subprocess.CompletedProcess:
    properties = tmp_path / "job.properties"
    properties.write_text("".join(f"{k}={v}\n" for k, v in entries.items()))
    env = {k: v for k, v in os.environ.items() if k not in ("SAMZA_LOG_PATH", "PYTHONPATH")}
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [sys.executable, "-m", "samza_dagster.cli", "run", "--config-path", str(properties)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("cause", list(CAUSES))
def test_samza_dagster_run_prints_the_one_line_and_exits_1(secure_kafka, kafka_client, cause, tmp_path):
    prefix = _prefix(_listener_of(cause), kafka_client)
    entries = dict(job_config(_failing_config(secure_kafka, kafka_client, cause, SASL_SSL), prefix).items())
    done = _cli_run(tmp_path, {**entries, f"streams.{prefix}-in.partitions": "1"})
    assert done.returncode == 1, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("samza-dagster run: Kafka system 'kafka': "), line
    assert "Error:" not in line, line  # no class name of a client library's exception
    _assert_one_clear_line(line, secure_kafka, cause)
    for secret in (WRONG_PASSWORD, *secure_kafka.secrets.values()):
        assert secret not in done.stdout


# -- the security keys reach every client ---------------------------------------------------------


def test_librdkafka_spellings_reach_kafka_python_and_its_admin():
    config = Config(
        {
            "systems.k.kafka.client": "confluent",
            "systems.k.consumer.bootstrap.servers": "broker:9093",
            "systems.k.consumer.security.protocol": "SASL_SSL",
            "systems.k.consumer.sasl.mechanisms": "SCRAM-SHA-512",
            "systems.k.consumer.sasl.username": "u",
            "systems.k.consumer.sasl.password": "p",
            "systems.k.consumer.ssl.ca.location": "/ca.pem",
            "systems.k.consumer.ssl.endpoint.identification.algorithm": "none",
        }
    )
    admin = kafka_client_configs("k", config).admin
    assert admin["sasl_mechanism"] == "SCRAM-SHA-512"  # the plural was dropped: PLAIN against SCRAM
    assert admin["sasl_plain_username"] == "u" and admin["sasl_plain_password"] == "p"
    assert admin["ssl_cafile"] == "/ca.pem" and admin["ssl_check_hostname"] is False
    with_check = config.with_overrides({"systems.k.consumer.ssl.endpoint.identification.algorithm": "https"})
    assert kafka_client_configs("k", with_check).admin["ssl_check_hostname"] is True


def test_kafka_pythons_hostname_check_is_librdkafkas_identification_algorithm_not_all_verification():
    """``ssl.check.hostname=false`` turns off the host-name check only: it used to reach
    librdkafka as enable.ssl.certificate.verification=false, which trusts any certificate."""
    base = {"systems.k.consumer.bootstrap.servers": "b:1", "systems.k.producer.bootstrap.servers": "b:1"}
    for value, algorithm in (("false", "none"), ("true", "https")):
        entries = {
            **base,
            "systems.k.consumer.ssl.check.hostname": value,
            "systems.k.producer.ssl.check.hostname": value,
        }
        configs = confluent_configs("k", Config(entries))
        for conf in (configs.consumer, configs.producer):
            assert conf["ssl.endpoint.identification.algorithm"] == algorithm
            assert "enable.ssl.certificate.verification" not in conf


def test_librdkafkas_errors_are_told_apart_and_cleaned():
    """What librdkafka's error callback reports, as the one line shows it: the broker prefix,
    OpenSSL's code and the state suffix gone; an _SSL text kept over the _TRANSPORT one that
    precedes it; anything else not a security cause."""
    from confluent_kafka import KafkaError

    from samza_dagster.system.kafka.security import AUTHENTICATION, TLS, ConnectionFailures

    failures = ConnectionFailures()
    failures.record(KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"))
    failures.record(KafkaError(KafkaError._TRANSPORT, "plaintext://h:1/bootstrap: Connect to ipv4#h:1 failed"))
    assert failures.cause is None
    failures.record(
        KafkaError(
            KafkaError._TRANSPORT,
            "sasl_ssl://h:1/bootstrap: error:0A000086:SSL routines::certificate verify failed "
            "(after 7ms in state SSL_HANDSHAKE)",
        )
    )
    assert failures.cause == (TLS, "certificate verify failed")
    handshake = "sasl_ssl://h:1/bootstrap: SSL handshake failed: error:0A000086:SSL routines::certificate verify failed"
    failures.record(KafkaError(KafkaError._SSL, handshake + " (after 10ms in state SSL_HANDSHAKE)"))
    failures.record(KafkaError(KafkaError._TRANSPORT, "sasl_ssl://h:1/bootstrap: error:0A000086:SSL routines::x"))
    assert failures.cause == (TLS, "SSL handshake failed: certificate verify failed")
    refused = ConnectionFailures()
    refused.record(
        KafkaError(
            KafkaError._AUTHENTICATION,
            "sasl_plaintext://h:1/bootstrap: SASL authentication error: Authentication failed "
            "(after 310ms in state AUTH_REQ, 1 identical error(s) suppressed)",
        )
    )
    assert refused.cause == (AUTHENTICATION, "SASL authentication error: Authentication failed")
