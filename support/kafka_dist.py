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

import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

POM = Path(__file__).resolve().parent / "kafka" / "pom.xml"
LOG4J_CONFIG = POM.parent / "log4j2.properties"

#: written last into the cache directory: its presence means every jar was copied
_COMPLETE = ".complete"


def kafka_version() -> str:
    match = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", POM.read_text())
    if not match:
        raise RuntimeError(f"{POM} names no <kafka.version>")
    return match.group(1).strip()


def cache_dir() -> Path:
    root = Path(os.environ.get("SAMZA_DAGSTER_CACHE") or Path.home() / ".cache" / "samza-dagster")
    pom_hash = hashlib.sha256(POM.read_bytes()).hexdigest()[:8]
    return root / f"kafka-{kafka_version()}-{pom_hash}"


def kafka_libs(progress: bool = False) -> Path:
    """The directory of the broker's jars (its classpath is ``<dir>/*``), fetched if missing."""
    target = cache_dir()
    libs = target / "libs"
    if (target / _COMPLETE).exists():
        return libs
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RuntimeError(
            "the tests' Kafka broker comes from Maven Central through `mvn`, which is not on PATH "
            "(Debian: apt-get install maven)"
        )
    if progress:
        print(f"fetching Apache Kafka {kafka_version()} (broker jars, ~45 MB) with mvn into {target}", file=sys.stderr)
    started = time.monotonic()
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    result = subprocess.run(
        [
            mvn,
            "--batch-mode",
            "--quiet",
            "-f",
            str(POM),
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={staging / 'libs'}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise RuntimeError(f"mvn could not fetch the Kafka broker ({POM}):\n{(result.stdout + result.stderr)[-3000:]}")
    (staging / _COMPLETE).write_text(f"fetched in {time.monotonic() - started:.1f}s\n")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    if progress:
        print(f"fetched Apache Kafka {kafka_version()} in {time.monotonic() - started:.1f}s", file=sys.stderr)
    return libs


if __name__ == "__main__":
    kafka_libs(progress=True)
