"""Apache Samza's own classes, driven from Python: ``java/SamzaWire.java`` compiled against the jars
``support/samza_dist.py`` fetches, run as one long-lived JVM per test session.

``SamzaWire.call(op, **fields)`` sends one request line and returns Samza's answer; bytes travel
base64-encoded (``b64`` / ``unb64``). An answer Samza refused raises :class:`SamzaRefused` with
Samza's own exception text, so a failing test says what Samza's class objected to.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import threading
from pathlib import Path
from typing import IO, Any

from support.samza_dist import samza_classpath

SOURCE = Path(__file__).resolve().parent / "java" / "SamzaWire.java"


class SamzaRefused(Exception):
    """Samza's class threw on the request (its exception's class and message are the text)."""


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: str) -> bytes:
    return base64.b64decode(text)


def compile_java(source: Path, classpath: str, out_dir: Path) -> Path:
    """``source`` compiled with javac into ``out_dir/<source hash>`` (reused when there)."""
    javac = shutil.which("javac")
    if javac is None:
        raise RuntimeError(
            "the Samza interop tests compile their Java sources with javac, which is not on PATH (a JDK 17)"
        )
    target = out_dir / hashlib.sha256(source.read_bytes() + classpath.encode()).hexdigest()[:12]
    if (target / f"{source.stem}.class").exists():
        return target
    target.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [javac, "-nowarn", "-d", str(target), "-cp", classpath, str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"javac could not compile {source}:\n{result.stdout}{result.stderr}")
    return target


def compile_driver(classpath: str, out_dir: Path) -> Path:
    """``SamzaWire.java`` compiled with javac into ``out_dir/<source hash>`` (reused when there)."""
    return compile_java(SOURCE, classpath, out_dir)


class SamzaWire:
    """One JVM running the driver; ``close()`` ends it."""

    def __init__(self, classes: Path, classpath: str, stderr_path: Path) -> None:
        java = shutil.which("java")
        if java is None:
            raise RuntimeError("the Samza interop tests run Samza's classes with java, which is not on PATH")
        self._stderr: IO[str] = stderr_path.open("w")
        self._stderr_path = stderr_path
        self._proc = subprocess.Popen(
            [java, "-cp", f"{classes}:{classpath}", "SamzaWire"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            encoding="utf-8",
        )
        self._lock = threading.Lock()

    def call(self, op: str, **fields: Any) -> dict[str, Any]:
        """Samza's answer to one request; raises :class:`SamzaRefused` when Samza threw."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        with self._lock:
            self._proc.stdin.write(json.dumps({"op": op, **fields}) + "\n")
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(
                f"the Samza driver exited ({self._proc.poll()}); its stderr: {self._stderr_path.read_text()[-3000:]}"
            )
        answer: dict[str, Any] = json.loads(line)
        if not answer.pop("ok"):
            raise SamzaRefused(answer["error"])
        return answer

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._stderr.close()


def start(work_dir: Path) -> SamzaWire:
    """Fetch Samza's jars (once, support/samza_dist.py), compile the driver, start it."""
    classpath = samza_classpath()
    classes = compile_driver(classpath, work_dir / "classes")
    return SamzaWire(classes, classpath, work_dir / "samza-wire.stderr")
