"""The Kafka security configs of docs/operations.md ("Kafka with SASL and TLS"), verbatim but for
the addresses, the password and the file paths, pointed at the ``secure_kafka`` broker — and a job
config around them. What the tests run is what the page tells users to write."""

from __future__ import annotations

import re
from pathlib import Path

from samza_dagster.config import Config
from samza_dagster.config.properties import parse_properties
from support.kafka_broker import Listener
from support.kafka_secure import SASL_PLAINTEXT, SASL_SSL, USER, SecureKafka

OPERATIONS = Path(__file__).resolve().parents[1] / "docs" / "operations.md"
SECTION = "### Kafka with SASL and TLS"


def documented_blocks() -> tuple[str, str, str]:
    """The section's three ``properties`` blocks: SASL_SSL, SASL_PLAINTEXT, a client certificate."""
    text = OPERATIONS.read_text()
    start = text.index(SECTION)
    end = text.index("\n## ", start)
    blocks = re.findall(r"```properties\n(.*?)```", text[start:end], flags=re.S)
    assert len(blocks) == 3, f"{SECTION} in docs/operations.md should hold three properties blocks"
    ssl, plaintext, certificate = blocks
    return ssl, plaintext, certificate


def documented_kafka_config(
    kafka: SecureKafka,
    listener: Listener,
    client: str,
    *,
    password: str | None = None,
    ca_pem: Path | None = None,
    client_certificate: bool = False,
) -> dict[str, str]:
    """The documented config of ``listener`` for ``client``; ``password`` / ``ca_pem`` replace the
    right ones (a wrong password, a CA that did not sign the broker's certificate)."""
    ssl, plaintext, certificate = documented_blocks()
    text = {SASL_SSL: ssl, SASL_PLAINTEXT: plaintext}[listener]
    if client_certificate:
        assert listener is SASL_SSL, "a client certificate goes with TLS"
        text += certificate
    replacements = {
        "kafka.client=confluent\n": f"kafka.client={client}\n",
        "broker1:9093": kafka.bootstrap_servers(SASL_SSL),
        "broker1:9094": kafka.bootstrap_servers(SASL_PLAINTEXT),
        "=change-me\n": f"={kafka.user.password if password is None else password}\n",
        "=change-me-too\n": f"={kafka.client_key.password}\n",
        "/etc/kafka/ca.pem": str(ca_pem or kafka.ca.certificate_pem),
        "/etc/kafka/client.pem": str(kafka.client_key.certificate_pem),
        "/etc/kafka/client.key": str(kafka.client_key.key_pem),
    }
    for placeholder, value in replacements.items():
        if placeholder in text:
            text = text.replace(placeholder, value)
    entries = parse_properties(text)
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
