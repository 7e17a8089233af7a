"""One temporary directory for a whole test session, removed when the session ends.

Everything the suite and the processes it starts put in the temporary directory — pytest's own
``tmp_path`` directories, the process runner's summary files, the Kafka brokers' storage and logs, the CLI's
run logs, Spark's local directories (``SPARK_LOCAL_DIRS``) and its driver JVM's temporary files
(``java.io.tmpdir`` through ``SPARK_SUBMIT_OPTS``: native libraries it unpacks) — lands under it, so a session leaves
nothing behind in ``/tmp`` even when a test is interrupted or a component forgets to clean up.
``tests/conftest.py`` installs it before anything asks for the temporary directory.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

_ENV = ("TMPDIR", "SPARK_LOCAL_DIRS", "SPARK_SUBMIT_OPTS")


class SessionTmp:
    """``install()`` points this process (``tempfile.tempdir``) and its children (``TMPDIR``,
    ``SPARK_LOCAL_DIRS``, the driver JVM's ``java.io.tmpdir``) at a fresh directory; ``remove()``
    deletes it and restores them."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self._saved_env: dict[str, str | None] = {}
        self._saved_tempdir: str | None = None

    def install(self, prefix: str = "samza-dagster-tests-") -> Path:
        self.path = Path(tempfile.mkdtemp(prefix=prefix))
        self._saved_tempdir = tempfile.tempdir
        self._saved_env = {name: os.environ.get(name) for name in _ENV}
        tempfile.tempdir = str(self.path)  # gettempdir() may have cached /tmp already
        os.environ["TMPDIR"] = os.environ["SPARK_LOCAL_DIRS"] = str(self.path)
        # the JVM ignores TMPDIR; spark-submit passes these options to the driver JVM it starts
        submit_opts = self._saved_env["SPARK_SUBMIT_OPTS"]
        os.environ["SPARK_SUBMIT_OPTS"] = " ".join(filter(None, [submit_opts, f"-Djava.io.tmpdir={self.path}"]))
        return self.path

    def remove(self) -> None:
        if self.path is None:
            return
        tempfile.tempdir = self._saved_tempdir
        for name, value in self._saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(self.path, ignore_errors=True)
        self.path = None
