"""The Apache Kafka broker's jars for the tests and benchmarks: fetched once, reused after.

``support/kafka/pom.xml`` names the release (``kafka.version``); ``mvn dependency:copy-dependencies``
copies ``org.apache.kafka:kafka_2.13`` and its runtime dependencies from Maven Central into
``~/.cache/samza-dagster/kafka-<version>-<pom hash>/libs`` (``SAMZA_DAGSTER_CACHE`` moves the cache).
A later run finds the directory complete and starts no ``mvn`` at all, so it needs no network; a
changed pom gets a directory of its own.

``python -m support.kafka_dist`` fetches with a progress line (scripts/test runs it during set-up);
:func:`kafka_libs` fetches on first use, so a bare ``pytest`` or a benchmark works too.
"""

from __future__ import annotations

from pathlib import Path

from support.maven_dist import MavenDist

POM = Path(__file__).resolve().parent / "kafka" / "pom.xml"
LOG4J_CONFIG = POM.parent / "log4j2.properties"
KAFKA = MavenDist("kafka", POM, "kafka.version", "Apache Kafka", "broker jars, ~45 MB")


def kafka_version() -> str:
    return KAFKA.version()


def kafka_libs(progress: bool = False) -> Path:
    """The directory of the broker's jars (its classpath is ``<dir>/*``), fetched if missing."""
    return KAFKA.fetch(progress) / "libs"


if __name__ == "__main__":
    kafka_libs(progress=True)
