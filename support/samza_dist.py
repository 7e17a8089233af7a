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

import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

POM = Path(__file__).resolve().parent / "samza" / "pom.xml"

#: written last into the cache directory: its presence means every jar was copied
_COMPLETE = ".complete"


def samza_version() -> str:
    match = re.search(r"<samza\.version>([^<]+)</samza\.version>", POM.read_text())
    if not match:
        raise RuntimeError(f"{POM} names no <samza.version>")
    return match.group(1).strip()


def cache_dir() -> Path:
    root = Path(os.environ.get("SAMZA_DAGSTER_CACHE") or Path.home() / ".cache" / "samza-dagster")
    pom_hash = hashlib.sha256(POM.read_bytes()).hexdigest()[:8]
    return root / f"samza-{samza_version()}-{pom_hash}"


def samza_classpath(progress: bool = False) -> str:
    """Samza's jars and their dependencies as one ``:``-separated classpath, fetched if missing."""
    target = cache_dir()
    if (target / _COMPLETE).exists():
        return (target / "classpath").read_text().strip()
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RuntimeError(
            "the interop tests' Samza jars come from Maven Central through `mvn`, which is not on PATH "
            "(Debian: apt-get install maven)"
        )
    if progress:
        print(f"fetching Apache Samza {samza_version()} (jars, ~100 MB) with mvn into {target}", file=sys.stderr)
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
        raise RuntimeError(
            f"mvn could not fetch Apache Samza's jars ({POM}):\n{(result.stdout + result.stderr)[-3000:]}"
        )
    # the paths name the final directory: staging is renamed to it below
    jars = sorted(p.name for p in (staging / "libs").glob("*.jar"))
    if not any(j.startswith("samza-core_") for j in jars):
        shutil.rmtree(staging, ignore_errors=True)
        raise RuntimeError(f"mvn copied no samza-core jar into {staging / 'libs'} ({POM})")
    (staging / "classpath").write_text(":".join(str(target / "libs" / j) for j in jars) + "\n")
    (staging / _COMPLETE).write_text(f"fetched in {time.monotonic() - started:.1f}s\n")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    if progress:
        print(f"fetched Apache Samza {samza_version()} in {time.monotonic() - started:.1f}s", file=sys.stderr)
    return (target / "classpath").read_text().strip()


if __name__ == "__main__":
    samza_classpath(progress=True)
