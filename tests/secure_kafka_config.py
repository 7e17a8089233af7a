"""The Kafka security configs of docs/operations.md ("Kafka with SASL and TLS"), verbatim but for
the addresses, the password and the file paths, pointed at the ``secure_kafka`` broker — and a job
config around them. What the tests run is what the page tells users to write."""

from __future__ import annotations

import re
from pathlib import Path

from samza_dagster.config import Config
from samza_dagster.config.properties import parse_properties
from support.kafka_broker import Listener
from support.kafka_secure import SASL_PLAINTEXT, SASL_SSL, SSL, USER, SecureKafka

OPERATIONS = Path(__file__).resolve().parents[1] / "docs" / "operations.md"
SECTION = "### Kafka with SASL and TLS"


def documented_blocks() -> tuple[str, str, str, str]:
    """The section's four ``properties`` blocks: SASL_SSL, SASL_PLAINTEXT, a client certificate,
    SSL with a required client certificate."""
    text = OPERATIONS.read_text()
    start = text.index(SECTION)
    end = text.index("\n## ", start)
    blocks = re.findall(r"```properties\n(.*?)```", text[start:end], flags=re.S)
    assert len(blocks) == 4, f"{SECTION} in docs/operations.md should hold four properties blocks"
    sasl_ssl, plaintext, certificate, ssl = blocks
    return sasl_ssl, plaintext, certificate, ssl


def documented_kafka_config(
    kafka: SecureKafka,
    listener: Listener,
    client: str,
    *,
    password: str | None = None,
    ca_pem: Path | None = None,
    client_certificate: bool = False,
    certificate: str = "client",
) -> dict[str, str]:
    """The documented config of ``listener`` for ``client``; ``password`` / ``ca_pem`` replace the
    right ones (a wrong password, a CA that did not sign the broker's certificate). On the SSL
    listener ``certificate`` is the client's: ``client`` (signed by the broker's CA),
    ``stranger`` (signed by another CA) or ``none`` (its keys left out)."""
    sasl_ssl, plaintext, with_certificate, ssl = documented_blocks()
    text = {SASL_SSL: sasl_ssl, SASL_PLAINTEXT: plaintext, SSL: ssl}[listener]
    if client_certificate:
        assert listener is SASL_SSL, "a client certificate goes with TLS (the SSL block has its own)"
        text += with_certificate
    if certificate == "none":
        kept = [line for line in text.splitlines(keepends=True) if ".ssl.certificate." not in line]
        text = "".join(line for line in kept if ".ssl.key." not in line)
    key = kafka.stranger_key if certificate == "stranger" else kafka.client_key
    replacements = {
        "kafka.client=confluent\n": f"kafka.client={client}\n",
        "broker1:9093": kafka.bootstrap_servers(SASL_SSL),
        "broker1:9094": kafka.bootstrap_servers(SASL_PLAINTEXT),
        "broker1:9095": kafka.bootstrap_servers(SSL),
        "=change-me\n": f"={kafka.user.password if password is None else password}\n",
        "=change-me-too\n": f"={key.password}\n",
        "/etc/kafka/ca.pem": str(ca_pem or kafka.ca.certificate_pem),
        "/etc/kafka/client.pem": str(key.certificate_pem),
        "/etc/kafka/client.key": str(key.key_pem),
    }
    for placeholder, value in replacements.items():
        if placeholder in text:
            text = text.replace(placeholder, value)
    entries = parse_properties(text)
    if listener is not SSL:
        assert entries["systems.kafka.consumer.sasl.username"] == USER  # the documented user is the broker's
    return entries


def job_config(kafka_entries: dict[str, str], prefix: str, **extra: str) -> Config:
    """A job copying ``<prefix>-in`` (bounded) to ``<prefix>-out``, everything on the secured
    Kafka system: inputs, outputs, checkpoints, the coordinator stream."""
    return Config(
        {
            **kafka_entries,
            "job.name": prefix,
            "job.factory.class": "thread",
            "job.default.system": "kafka",
            "job.coordinator.system": "kafka",
            "task.checkpoint.system": "kafka",
            "task.class": "tests.apps.tasks:CopyTask",
            "task.inputs": f"kafka.{prefix}-in",
            f"systems.kafka.streams.{prefix}-in.samza.bounded": "true",
            "test.output.system": "kafka",
            "test.output.stream": f"{prefix}-out",
            **extra,
        }
    )
