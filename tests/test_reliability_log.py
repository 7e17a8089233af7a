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
(tests/test_log_system.py covers single kills and two unkilled writers; this adds many kills
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

from samza_dagster.config import Config
from samza_dagster.model import OutgoingMessageEnvelope, StreamSpec, SystemStream, SystemStreamPartition
from samza_dagster.system.log import LogSystemFactory
from support.waiting import wait_until

STREAM = "crashlog"
WRITERS = 3
BATCH = 200
PAD = b"x" * 1500
KILLS = 24
SEED = 1212


def _config(root: str) -> Config:
    # linger off: a batch of BATCH rows is written by its flush alone, so whole batches are what
    # a reader may see (with the default linger a flush's rows can be written in several parts)
    return Config(
        {
            "systems.log.samza.factory": "log",
            "systems.log.log.path": root,
            "systems.log.log.batch.size": str(BATCH * 10),
            "systems.log.log.fetch.size": "100000",
            "systems.log.log.linger.ms": "0",
        }
    )


def writer(root: str, partition: int) -> None:
    """Append batches of BATCH rows ``b"<partition>:<seq>:"+PAD`` forever (until killed)."""
    config = _config(root)
    factory = LogSystemFactory()
    md = factory.get_admin("log", config).get_system_stream_metadata([STREAM])[STREAM].partitions[partition]
    seq = 0 if md.newest_offset is None else int(md.newest_offset) + 1
    producer = factory.get_producer("log", config)
    producer.register("w")
    producer.start()
    ss = SystemStream("log", STREAM)
    print("ready", flush=True)
    while True:
        for _ in range(BATCH):
            producer.send("w", OutgoingMessageEnvelope(ss, b"%d:%d:" % (partition, seq) + PAD, partition=partition))
            seq += 1
        producer.flush("w")


def reader(root: str, stop_file: str) -> None:
    """Poll every partition and the metadata until ``stop_file`` exists (the test writes it
    after its last kill, so the readers watch every kill whatever the machine's speed); print a
    JSON report of what was wrong."""
    config = _config(root)
    factory = LogSystemFactory()
    admin = factory.get_admin("log", config)
    consumer = factory.get_consumer("log", config)
    ssps = [SystemStreamPartition("log", STREAM, p) for p in range(WRITERS)]
    for ssp in ssps:
        consumer.register(ssp, "0")
    consumer.start()
    expect = {ssp: 0 for ssp in ssps}
    problems: list[str] = []
    snapshots = 0
    stop = Path(stop_file)
    deadline = time.monotonic() + 300  # only if the test died without saying stop
    while not stop.exists() and time.monotonic() < deadline and len(problems) < 10:
        for p, m in admin.get_system_stream_metadata([STREAM])[STREAM].partitions.items():
            snapshots += 1
            if int(m.upcoming_offset) % BATCH:
                problems.append(f"partition {p}: {m.upcoming_offset} rows visible, not whole batches")
        for ssp, envs in consumer.poll(ssps, 0.05).items():
            for env in envs:
                want = expect[ssp]
                if env.offset != str(want) or not env.message.startswith(b"%d:%d:" % (ssp.partition, want)):
                    problems.append(
                        f"partition {ssp.partition}: offset {env.offset} holds {env.message[:20]!r}, expected seq {want}"
                    )
                expect[ssp] = int(env.offset) + 1
            if expect[ssp] % BATCH:
                # a poll may stop mid-batch (fetch size); the rest must already be visible
                more = admin.get_system_stream_metadata([STREAM])[STREAM].partitions[ssp.partition]
                if int(more.upcoming_offset) % BATCH:
                    problems.append(f"partition {ssp.partition}: partial batch visible ({more.upcoming_offset})")
    consumer.stop()
    print(
        json.dumps({"problems": problems, "snapshots": snapshots, "read": {s.partition: n for s, n in expect.items()}})
    )


def _spawn(*args: str) -> subprocess.Popen:
    code = f"import tests.test_reliability_log as m; m.{args[0]}(*{list(args[1:])!r})"
    return subprocess.Popen(
        [sys.executable, "-c", code.replace("'@", "").replace("@'", "")],
        stdout=subprocess.PIPE,
        text=True,
        cwd=str(Path(__file__).resolve().parents[1]),
    )


def _start_writer(root: str, partition: int) -> subprocess.Popen:
    proc = _spawn("writer", root, f"@{partition}@")
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


@pytest.mark.timeout(900)  # 24 writer processes started again; on a loaded 2-core machine minutes
def test_killed_writers_never_expose_partial_batches_and_files_stay_sound(tmp_path):
    root = str(tmp_path / "log")
    LogSystemFactory().get_admin("log", _config(root)).create_stream(StreamSpec(STREAM, STREAM, "log", WRITERS))
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
        rows = conn.execute(
            'SELECT "offset", value FROM messages WHERE "partition" = ? ORDER BY "offset"', (p,)
        ).fetchall()
        assert len(rows) % BATCH == 0 and rows, p
        assert [o for o, _ in rows] == list(range(len(rows))), p
        assert all(v.startswith(b"%d:%d:" % (p, o)) for o, v in rows), p
        totals[p] = len(rows)
    conn.close()
    admin = LogSystemFactory().get_admin("log", _config(root))

    def upcoming() -> int:
        return int(admin.get_system_stream_metadata([STREAM])[STREAM].partitions[0].upcoming_offset)

    w = _start_writer(root, 0)  # a writer after all that still appends where the data ends
    wait_until(lambda: upcoming() > totals[0], what="the new writer's first batch")
    os.kill(w.pid, signal.SIGKILL)
    w.wait(10)
    assert upcoming() > totals[0] and upcoming() % BATCH == 0
