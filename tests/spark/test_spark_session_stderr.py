"""The first Spark session of a process starts a JVM whose stderr is the process's: what it says
there reaches the user, except its start-up notice about incubator modules (every piped demo
began with it). Run in a process of its own, its stderr a pipe, as a piped command's is."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.timeout(180)]

SCRIPT = """
import sys, time
from samza_dagster.spark.session import get_or_create_spark
spark = get_or_create_spark({}, master="local[1]", app_name="stderr")
spark.sparkContext._jvm.java.lang.System.err.println("the JVM says this")
print("python says this", file=sys.stderr, flush=True)
time.sleep(0.5)
spark.stop()
"""


def test_the_jvm_start_up_notice_is_kept_off_stderr_and_the_rest_passes(tmp_path):
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, capture_output=True, text=True, timeout=150)
    assert done.returncode == 0, done.stderr
    assert "incubator modules" not in done.stderr, done.stderr
    assert "the JVM says this" in done.stderr and "python says this" in done.stderr, done.stderr
