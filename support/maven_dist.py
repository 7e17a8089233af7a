"""Jars from Maven Central for the tests (the Kafka broker's, Apache Samza's): one pom each under
``support/``, fetched once with ``mvn dependency:copy-dependencies`` into a cache directory of their
own, reused after.

The directory is ``~/.cache/samza-dagster/<name>-<version>-<pom hash>`` (``SAMZA_DAGSTER_CACHE``
moves the cache root): a changed pom gets a directory of its own. The jars are copied into a
``.partial`` directory renamed into place once complete, with a ``.complete`` marker written last,
so a run that was stopped halfway leaves nothing a later run would take for complete — and a
complete directory starts no ``mvn`` at all, so it needs no network.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

#: written last into the cache directory: its presence means every jar was copied
COMPLETE = ".complete"


@dataclass(frozen=True)
class MavenDist:
    """The jars one pom names: ``what`` says what they are in messages (``Apache Kafka``)."""

    name: str
    pom: Path
    version_property: str
    what: str
    size_hint: str

    def version(self) -> str:
        found = re.search(rf"<{re.escape(self.version_property)}>([^<]+)</", self.pom.read_text())
        if not found:
            raise RuntimeError(f"{self.pom} names no <{self.version_property}>")
        return found.group(1).strip()

    def cache_dir(self) -> Path:
        root = Path(os.environ.get("SAMZA_DAGSTER_CACHE") or Path.home() / ".cache" / "samza-dagster")
        pom_hash = hashlib.sha256(self.pom.read_bytes()).hexdigest()[:8]
        return root / f"{self.name}-{self.version()}-{pom_hash}"

    def fetch(self, progress: bool = False, finish: Callable[[Path, Path], None] | None = None) -> Path:
        """The complete cache directory (its jars in ``libs/``), fetched if missing. ``finish``
        (staging, final directory) checks and completes a fresh copy before it is put in place."""
        target = self.cache_dir()
        if (target / COMPLETE).exists():
            return target
        mvn = shutil.which("mvn")
        if mvn is None:
            raise RuntimeError(
                f"{self.what}'s jars come from Maven Central through `mvn`, which is not on PATH "
                "(Debian: apt-get install maven)"
            )
        if progress:
            print(f"fetching {self.what} {self.version()} ({self.size_hint}) with mvn into {target}", file=sys.stderr)
        started = time.monotonic()
        staging = target.with_name(target.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        command = [mvn, "--batch-mode", "--quiet", "-f", str(self.pom), "dependency:copy-dependencies"]
        command += ["-DincludeScope=runtime", f"-DoutputDirectory={staging / 'libs'}"]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            raise RuntimeError(
                f"mvn could not fetch {self.what}'s jars ({self.pom}):\n{(result.stdout + result.stderr)[-3000:]}"
            )
        if finish is not None:
            try:
                finish(staging, target)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
        (staging / COMPLETE).write_text(f"fetched in {time.monotonic() - started:.1f}s\n")
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
        if progress:
            print(f"fetched {self.what} {self.version()} in {time.monotonic() - started:.1f}s", file=sys.stderr)
        return target
