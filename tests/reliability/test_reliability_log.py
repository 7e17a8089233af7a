"""Issue 12.2 — embedded log crash consistency under repeated SIGKILL.

Three writer processes append whole batches (one transaction each, rows big enough that a
kill often lands inside the transaction or its fsync) to their own partition of one stream,
while two reader processes poll every partition and the metadata. The test SIGKILLs a random
writer at seeded-random moments (24 kills; a writer appends until killed, so every kill lands
mid-write) and restarts it; a restarted writer resumes from its partition's newest offset. The
readers poll until the test tells them the kills are over, however long they took (a fixed 12 s
left a reader 8 polls on a loaded machine). Checked, by the readers while it runs and by the
test at the end: no partial batch is ever visible (every partition's length, in every snapshot,
is a multiple of the batch size), offsets are dense and equal each writer's sequence number
(per-partition order), the files pass SQLite's integrity check and reopen for writing afterwards.
(tests/system/log/test_log_system.py covers single kills and two unkilled writers; this adds many kills
with concurrent readers.)
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from samza_dagster.model import StreamSpec
from samza_dagster.system.log import LogSystemFactory
from support.log_reading import file_rows
from support.waiting import wait_until
from tests import REPO
from tests.log_crash_workers import BATCH, STREAM, WRITERS, log_config

KILLS = 24
SEED = 1212


def _spawn(*args: str) -> subprocess.Popen:
    code = f"import tests.log_crash_workers as m; m.{args[0]}(*{list(args[1:])!r})"
    return subprocess.Popen(
        [sys.executable, "-c", code.replace("'@", "").replace("@'", "")],
        stdout=subprocess.PIPE,
        text=True,
        cwd=str(REPO),
    )


def _start_writer(root: str, partition: int) -> subprocess.Popen:
    proc = _spawn("writer", root, f"@{partition}@")
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


@pytest.mark.timeout(900)  # 24 writer processes started again; on a loaded 2-core machine minutes
def test_killed_writers_never_expose_partial_batches_and_files_stay_sound(tmp_path):
    root = str(tmp_path / "log")
    LogSystemFactory().get_admin("log", log_config(root)).create_stream(StreamSpec(STREAM, STREAM, "log", WRITERS))
    rnd = random.Random(SEED)
    writers = {p: _start_writer(root, p) for p in range(WRITERS)}
    stop_readers = tmp_path / "stop-readers"
    readers = [_spawn("reader", root, str(stop_readers)) for _ in range(2)]
    kills = 0
    try:
        while kills < KILLS:
            time.sleep(rnd.uniform(0.05, 0.35))
            p = rnd.randrange(WRITERS)
            os.kill(writers[p].pid, signal.SIGKILL)
            writers[p].wait(10)
            kills += 1
            writers[p] = _start_writer(root, p)
    finally:
        stop_readers.touch()
        for w in writers.values():
            os.kill(w.pid, signal.SIGKILL)
            w.wait(10)
    reports = []
    for r in readers:
        out, _ = r.communicate(timeout=60)
        assert r.returncode == 0
        reports.append(json.loads(out.strip().splitlines()[-1]))
    for report in reports:
        assert report["problems"] == [], report["problems"]
        assert report["snapshots"] > 50 and sum(report["read"].values()) > 0

    # afterwards: the file is sound, offsets dense and in each writer's order, reopenable
    path = next(Path(root).glob("*.db"))
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    totals = {}
    for p in range(WRITERS):
        rows = [(offset, value) for offset, _key, value, _ts in file_rows(path, p)]
        assert len(rows) % BATCH == 0 and rows, p
        assert [o for o, _ in rows] == list(range(len(rows))), p
        assert all(v.startswith(b"%d:%d:" % (p, o)) for o, v in rows), p
        totals[p] = len(rows)
    conn.close()
    admin = LogSystemFactory().get_admin("log", log_config(root))

    def upcoming() -> int:
        return int(admin.get_system_stream_metadata([STREAM])[STREAM].partitions[0].upcoming_offset)

    w = _start_writer(root, 0)  # a writer after all that still appends where the data ends
    wait_until(lambda: upcoming() > totals[0], what="the new writer's first batch")
    os.kill(w.pid, signal.SIGKILL)
    w.wait(10)
    assert upcoming() > totals[0] and upcoming() % BATCH == 0
