"""A secured Apache Kafka broker for the security tests: SASL_SSL and SASL_PLAINTEXT listeners,
SCRAM-SHA-512 users, certificates made for the run.

:func:`start_secure_broker` makes a CA and the broker's certificate (support/kafka_tls.py, into a
fresh directory), a second CA that signed nothing the broker shows (what an "untrusted
certificate" test trusts), a client certificate with an encrypted key, and a SCRAM user with a
random password; then one Kafka node (support/kafka_broker.py) listening with:

* ``SASL_SSL`` — SCRAM-SHA-512 over TLS; a client certificate is asked for, not required;
* ``SASL_PLAINTEXT`` — SCRAM-SHA-512 in the clear;
* ``SSL`` — TLS without SASL, a client certificate signed by the CA required
  (``ssl.client.auth=required``): the certificate is the client's only credential;
* ``PLAINTEXT`` — as every test node, for the nodes themselves and for a test to check what a
  job wrote independently of the secured path.

The ``secure_kafka`` fixture is module-scoped: the modules that use it get a broker of their own,
and the rest of the suite keeps its plain one. Every password is random per run, so a test can
search logs, errors and results for them (:attr:`SecureKafka.secrets`).
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.kafka_broker import BrokerSecurity, KafkaCluster, Listener, ScramUser, start_cluster
from support.kafka_tls import CertificateAuthority, KeyStore, make_certificate_authority

MECHANISM = "SCRAM-SHA-512"
SASL_SSL = Listener("SASL_SSL", "SASL_SSL", MECHANISM)
SASL_PLAINTEXT = Listener("SASL_PLAINTEXT", "SASL_PLAINTEXT", MECHANISM)
SSL = Listener("SSL", "SSL", client_auth="required")
USER = "samza-job"


@dataclass(frozen=True)
class SecureKafka:
    cluster: KafkaCluster
    user: ScramUser
    #: signed the broker's certificate (what a client names in ssl.ca.location / ssl.cafile)
    ca: CertificateAuthority
    #: signed nothing the broker shows: trusting only it, a client must refuse the broker
    untrusted_ca: CertificateAuthority
    broker_keystore: KeyStore
    #: a client certificate signed by ``ca``, its key encrypted with ``client_key.password``
    client_key: KeyStore
    #: a client certificate signed by ``untrusted_ca``: the SSL listener must refuse it
    stranger_key: KeyStore
    #: the certificates' directory, removed by :meth:`stop` when :func:`start_secure_broker` made it
    made_directory: Path | None = None

    def bootstrap_servers(self, listener: Listener) -> str:
        return self.cluster.bootstrap_servers_of(listener.name)

    @property
    def plaintext_bootstrap_servers(self) -> str:
        return self.cluster.bootstrap_servers

    @property
    def secrets(self) -> dict[str, str]:
        """Every secret of this broker and its clients, by what it is."""
        return {
            "SCRAM password": self.user.password,
            "broker key store password": self.broker_keystore.password,
            "client key password": self.client_key.password,
            "stranger's key password": self.stranger_key.password,
        }

    def stop(self) -> None:
        try:
            self.cluster.stop()
        finally:
            if self.made_directory is not None:
                shutil.rmtree(self.made_directory, ignore_errors=True)


def start_secure_broker(directory: Path | None = None) -> SecureKafka:
    """One Kafka node with the SASL_SSL, SASL_PLAINTEXT and SSL listeners, ready for clients."""
    made = None if directory is not None else Path(tempfile.mkdtemp(prefix="kafka-tls-"))
    directory = directory or made
    assert directory is not None
    ca = make_certificate_authority(directory / "ca", "samza-dagster-test")
    untrusted = make_certificate_authority(directory / "untrusted-ca", "untrusted")
    broker_keystore = ca.issue("broker")
    client_key = ca.issue("client", hosts=(USER,))
    stranger_key = untrusted.issue("stranger", hosts=(USER,))
    user = ScramUser(USER, secrets.token_urlsafe(16), MECHANISM)
    security = BrokerSecurity(
        listeners=(SASL_SSL, SASL_PLAINTEXT, SSL),
        scram_users=(user,),
        keystore=broker_keystore,
        truststore_pem=ca.certificate_pem,
        client_auth="requested",
    )
    try:
        cluster = start_cluster(1, security=security)
    except BaseException:
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
        raise
    return SecureKafka(cluster, user, ca, untrusted, broker_keystore, client_key, stranger_key, made)


@pytest.fixture(scope="module")
def secure_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureKafka]:
    """A secured broker for the tests of one module; stopped (its storage removed) after them."""
    broker = start_secure_broker(tmp_path_factory.mktemp("kafka-tls"))
    try:
        yield broker
    finally:
        broker.stop()
