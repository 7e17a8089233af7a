"""Soak: a bounded-time run of a stateful job on the process runner at a steady input rate.

The job is a word count (RocksDB store with a changelog on the embedded log, commit every
second) reading an unbounded stream that this script fills at ``--rate`` messages/s from a
1,000-word vocabulary (so the *state* does not grow: only the number of messages does). Every
``--sample`` seconds it records the container's progress (its checkpointed offsets) and the
container process's RSS (/proc/<pid>/status VmRSS). At the end the job is stopped gracefully.

Reported: throughput per interval, lag at the end, RSS over time, and the RSS growth between
the first sample after warm-up (20% of the run) and the last, per million messages processed
— "memory does not grow with the number of messages" means that figure stays near zero.

python -m bench.bench_soak --minutes 10 [--rate 2000] [--sample 10]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import threading
import time
from pathlib import Path

from bench.report import command_line, machine_line, write_section
from samza_dagster.checkpoint import CheckpointManager, checkpoint_system
from samza_dagster.config import Config
from samza_dagster.model import OutgoingMessageEnvelope, StreamSpec, SystemStream
from samza_dagster.runtime.process_runner import ProcessJobRunner
from samza_dagster.system.factories import system_factory

PARTITIONS = 2
WORDS = [f"word{i:04d}" for i in range(1000)]


def _config(root: Path) -> Config:
    return Config(
        {
            "job.name": "soak",
            "job.factory.class": "process",
            "job.container.count": "1",
            "job.default.system": "log",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(root / "log"),
            "systems.log.samza.msg.serde": "string",
            "task.inputs": "log.words",
            "task.class": "support.tasks:WordCountTask",
            "task.commit.ms": "1000",
            "stores.counts.factory": "rocksdb",
            "stores.counts.key.serde": "string",
            "stores.counts.msg.serde": "long",
            "stores.counts.changelog": "log.soak-counts-changelog",
            "job.logged.store.base.dir": str(root / "state"),
        }
    )


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


class _Feeder(threading.Thread):
    """Produces ``rate`` messages/s in 10 ms slices until stopped."""

    def __init__(self, config: Config, rate: int) -> None:
        super().__init__(daemon=True)
        self.config, self.rate = config, rate
        self.produced = 0
        self.stop_event = threading.Event()

    def run(self) -> None:
        producer = system_factory(self.config, "log").get_producer("log", self.config)
        producer.register("feeder")
        producer.start()
        ss = SystemStream("log", "words")
        rnd = random.Random(5)
        started = time.monotonic()
        while not self.stop_event.is_set():
            due = int((time.monotonic() - started) * self.rate)
            while self.produced < due:
                producer.send(
                    "feeder",
                    OutgoingMessageEnvelope(ss, rnd.choice(WORDS).encode(), partition=self.produced % PARTITIONS),
                )
                self.produced += 1
            producer.flush("feeder")
            time.sleep(0.01)
        producer.flush("feeder")
        producer.stop()


def _checkpointed(manager: CheckpointManager) -> int:
    """Messages covered by the checkpoints (offsets are dense from 0)."""
    return sum(int(o) + 1 for cp in manager.read_last().values() for o in cp.offsets.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=int, default=2000, help="input messages per second")
    parser.add_argument("--sample", type=float, default=10.0, help="seconds between samples")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="bench-soak-"))
    config = _config(root)
    admin = system_factory(config, "log").get_admin("log", config)
    admin.create_stream(StreamSpec("words", "words", "log", PARTITIONS))
    system = checkpoint_system(config)
    f = system_factory(config, system)
    manager = CheckpointManager(
        config, f.get_admin(system, config), f.get_producer(system, config), lambda: f.get_consumer(system, config)
    )

    feeder = _Feeder(config, args.rate)
    runner = ProcessJobRunner(config)
    result_box: dict = {}
    job = threading.Thread(target=lambda: result_box.setdefault("r", runner.run()), daemon=True)
    job.start()
    while "0" not in runner.processes:
        time.sleep(0.05)
    pid = runner.processes["0"].pid
    feeder.start()
    started = time.monotonic()
    duration = args.minutes * 60
    samples: list[tuple[float, int, int, float]] = []  # t, produced, checkpointed, rss
    while time.monotonic() - started < duration:
        time.sleep(min(args.sample, max(0.0, duration - (time.monotonic() - started))))
        samples.append((time.monotonic() - started, feeder.produced, _checkpointed(manager), _rss_mb(pid)))
        t, p, c, r = samples[-1]
        print(f"{t:7.1f}s produced {p:>9,} checkpointed {c:>9,} rss {r:6.1f} MB", flush=True)
    feeder.stop_event.set()
    feeder.join(10)
    runner.stop()
    job.join(60)
    result = result_box.get("r")

    rows = [
        "| t (s) | produced | checkpointed | msgs/s in interval | lag | RSS (MB) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    prev_t, prev_c = 0.0, 0
    for t, p, c, r in samples:
        rate = (c - prev_c) / (t - prev_t) if t > prev_t else 0.0
        rows.append(f"| {t:.0f} | {p:,} | {c:,} | {rate:,.0f} | {p - c:,} | {r:.1f} |")
        prev_t, prev_c = t, c
    warm = next((s for s in samples if s[0] >= 0.2 * duration), samples[0])
    last = samples[-1]
    growth = (last[3] - warm[3]) / max(1e-9, (last[2] - warm[2]) / 1e6)
    rss_values = [s[3] for s in samples if s[0] >= warm[0]]
    md = "\n".join(
        [
            f"Soak: word count (RocksDB + changelog, commit 1 s) on the process runner, {args.rate:,} msgs/s offered for "
            f"{args.minutes:g} min, samples every {args.sample:g} s. {machine_line()}.",
            "",
            f"Command: `{command_line('bench.bench_soak')}`",
            "",
            f"Result: {last[2]:,} messages checkpointed of {last[1]:,} produced; job "
            f"{'stopped cleanly' if result is not None and result.succeeded else 'FAILED: ' + (result.summary_line() if result else 'no result')}. "
            f"RSS after warm-up {warm[3]:.1f} MB → end {last[3]:.1f} MB (min {min(rss_values):.1f}, max {max(rss_values):.1f}); "
            f"growth {growth:+.2f} MB per million messages.",
            "",
            *rows,
        ]
    )
    print(md)
    write_section("soak", md)


if __name__ == "__main__":
    main()
