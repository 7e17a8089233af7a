"""Faults for exactly-once Spark writes: a log system whose producer, inside a Spark writer task,
kills its Python worker or pauses at a chosen moment, and whose admin pauses a Dagster run right
after a write committed. Configured by ``systems.log.samza.factory`` =
``tests.spark_write_faults:FaultyLogSystemFactory`` and the keys

* ``test.fault.phase`` — ``exit-after-rows`` (``os._exit`` after ``test.fault.rows`` rows were
  written, open, by the task of Spark partition ``test.fault.partition``), ``pause-after-rows``
  (the same moment, paused instead), ``pause-prepared`` (that task prepared its transaction and
  has not reported it: every row of it written, the driver's commit not reached), or
  ``pause-after-commit`` (the first admin created once the write's id is in the ledger: the write
  committed, the Dagster run has not recorded it);
* ``test.fault.dir`` — where the marker ``in-<phase>`` (holding the pid) is written at the moment,
  and whose presence makes the fault happen only once (a re-run with the same config is clean).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import pytest

from samza_dagster.config import Config
from samza_dagster.spark.transactional import STATE_STREAM
from samza_dagster.system.log import LogSystemFactory
from samza_dagster.system.log.storage import stream_file
from tests.forwarding import ForwardingProducer


class _Fault:
    def __init__(self, config: Config) -> None:
        self.phase = config.get_str("test.fault.phase") or ""
        self.dir = config.get_str("test.fault.dir") or ""
        self.rows = config.get_int("test.fault.rows") or 0
        self.partition = config.get_int("test.fault.partition") or 0
        self.log_path = config.get_str("systems.log.log.path") or ""

    def armed(self, phase: str) -> bool:
        return self.phase == phase and bool(self.dir) and not self.marker(phase).exists()

    def marker(self, phase: str) -> Path:
        return Path(self.dir, f"in-{phase}")

    def hit(self, phase: str, exit_instead: bool = False) -> None:
        self.marker(phase).write_text(str(os.getpid()))
        if exit_instead:
            os._exit(1)  # the Python worker dies: Spark fails the task
        time.sleep(600)  # the test kills us here

    def in_task(self) -> bool:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        return ctx is not None and ctx.partitionId() == self.partition

    def committed(self) -> bool:
        path = stream_file(self.log_path, STATE_STREAM)
        if not os.path.exists(path):
            return False
        conn = sqlite3.connect(path)
        try:
            return conn.execute("SELECT count(*) FROM txn_ledger").fetchone()[0] > 0
        except sqlite3.OperationalError:
            return False
        finally:
            conn.close()


class _FaultyProducer(ForwardingProducer):
    def __init__(self, inner, fault: _Fault) -> None:
        super().__init__(inner)
        self._fault = fault
        self._sent = 0
        self._mine = None

    def _here(self, phase: str) -> bool:
        if self._mine is None:
            self._mine = self._fault.in_task()
        return self._mine and self._fault.armed(phase)

    def send(self, source, envelope):
        self.inner.send(source, envelope)
        self._sent += 1
        if self._sent == self._fault.rows:
            for phase in ("exit-after-rows", "pause-after-rows"):
                if self._here(phase):
                    self.inner.flush(source)  # the rows are in the stream, open
                    self._fault.hit(phase, exit_instead=phase == "exit-after-rows")

    def prepare_transaction(self):
        prepared = self.inner.prepare_transaction()
        if self._here("pause-prepared"):
            self._fault.hit("pause-prepared")
        return prepared


class FaultyLogSystemFactory(LogSystemFactory):
    def get_producer(self, system_name, config):
        return _FaultyProducer(super().get_producer(system_name, config), _Fault(config))

    def get_admin(self, system_name, config):
        fault = _Fault(config)
        if fault.armed("pause-after-commit") and fault.committed():
            fault.hit("pause-after-commit")
        return super().get_admin(system_name, config)


REPO = Path(__file__).resolve().parent.parent


def run_until(
    script: str, args: list[str], marker: Path, *, env: Mapping[str, str] | None = None, timeout_s: float = 240
) -> None:
    """Run ``python -c script args...`` from the repository in a process group of its own (a Spark
    driver's JVM and Python workers join it) until ``marker`` appears, then SIGKILL the group."""
    proc = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        cwd=REPO,
        env={**os.environ, **(env or {})},
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + timeout_s
        while not marker.exists():
            if proc.poll() is not None:
                pytest.fail(f"it ended before {marker.name} (exit {proc.returncode}): {proc.stderr.read()[-3000:]!r}")
            assert time.monotonic() < deadline, f"no {marker.name} within {timeout_s}s"
            time.sleep(0.1)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
