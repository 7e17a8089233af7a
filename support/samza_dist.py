"""Apache Samza's own jars for the interop tests (tests/samza_interop): fetched once, reused after.

``support/samza/pom.xml`` names the release (``samza.version``); ``mvn dependency:copy-dependencies``
copies ``org.apache.samza:samza-api``, ``samza-core_2.12``, ``samza-kafka_2.12``, ``samza-kv_2.12`` and
``samza-kv-rocksdb_2.12`` (the Java job's store) with their runtime
dependencies from Maven Central into ``~/.cache/samza-dagster/samza-<version>-<pom hash>/libs``
(``SAMZA_DAGSTER_CACHE`` moves the cache), and writes ``classpath`` beside it: every jar, one
``:``-separated line, for ``javac -cp`` / ``java -cp``. A later run finds the directory complete and
starts no ``mvn`` at all, so it needs no network; a changed pom gets a directory of its own.

``python -m support.samza_dist`` fetches with a progress line (scripts/test runs it during set-up);
:func:`samza_classpath` fetches on first use, so a bare ``pytest`` works too.
"""

from __future__ import annotations

from pathlib import Path

from support.maven_dist import MavenDist

POM = Path(__file__).resolve().parent / "samza" / "pom.xml"
SAMZA = MavenDist("samza", POM, "samza.version", "Apache Samza", "jars, ~100 MB")


def samza_version() -> str:
    return SAMZA.version()


def _write_classpath(staging: Path, target: Path) -> None:
    """Every jar, as the final directory will hold it, on one ``:``-separated line."""
    jars = sorted(p.name for p in (staging / "libs").glob("*.jar"))
    if not any(j.startswith("samza-core_") for j in jars):
        raise RuntimeError(f"mvn copied no samza-core jar into {staging / 'libs'} ({POM})")
    (staging / "classpath").write_text(":".join(str(target / "libs" / j) for j in jars) + "\n")


def samza_classpath(progress: bool = False) -> str:
    """Samza's jars and their dependencies as one ``:``-separated classpath, fetched if missing."""
    return (SAMZA.fetch(progress, finish=_write_classpath) / "classpath").read_text().strip()


if __name__ == "__main__":
    samza_classpath(progress=True)
