"""B13's producer, alone and traced: where a log producer's CPU goes at 4 and at 1,024 partitions.

    python -m bench.log_producer_trace [--messages N] [--repetitions K] [--statements]

Each run is B13's own producer child (``bench.bench_scale.child_produce``: messages of 100 bytes,
round robin, ``log.batch.size`` 1,000) in a fresh process, the widths alternating. It prints each
run's msgs/s and msgs per CPU second, then the medians and the 1,024 / 4 ratio per repetition —
B13's producer target without the rest of B13. ``--statements`` adds, per width, the CPU time of
every SQL statement the producer ran (one extra run each, timed by wrapping
``StreamConnection.execute``): what showed that at width every row is written twice (docs/benchmarks.md,
"Format 3's producer at width, traced"). To compare two commits, run it in each checkout.
"""

from __future__ import annotations

import argparse
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

WIDTHS = (4, 1024)
REPO = Path(__file__).resolve().parent.parent


def produce(partitions: int, messages: int) -> tuple[float, float]:
    """One producer run in this process: (msgs/s, msgs per CPU second)."""
    from bench.bench_scale import child_produce

    with tempfile.TemporaryDirectory(prefix="bench-produce-") as root:
        cpu = time.process_time()
        rate = child_produce(root, partitions, messages)["rate"]
        return rate, messages / (time.process_time() - cpu)


def statements(partitions: int, messages: int) -> list[tuple[float, int, str]]:
    """One producer run in this process with every statement timed: (CPU s, calls, SQL) by cost."""
    from samza_dagster.system.log import storage

    cost: dict[str, float] = defaultdict(float)
    calls: Counter[str] = Counter()
    execute = storage.StreamConnection.execute

    def timed(self: storage.StreamConnection, sql: str, *args: Any) -> sqlite3.Cursor:
        started = time.process_time()
        try:
            return execute(self, sql, *args)
        finally:
            shape = re.sub(r"\(\?[^)]*\)(, \(\?[^)]*\))*", "(?…)", sql)[:80]  # one line per statement shape
            cost[shape] += time.process_time() - started
            calls[shape] += 1

    storage.StreamConnection.execute = timed  # type: ignore[assignment,method-assign]
    try:
        produce(partitions, messages)
    finally:
        storage.StreamConnection.execute = execute  # type: ignore[method-assign]
    return [(seconds, calls[shape], shape) for shape, seconds in sorted(cost.items(), key=lambda item: -item[1])]


def _child(partitions: int, messages: int) -> tuple[float, float]:
    code = f"from bench.log_producer_trace import produce; print(*produce({partitions}, {messages}))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=REPO).stdout
    rate, cpu_rate = out.split()
    return float(rate), float(cpu_rate)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=400_000)
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--statements", action="store_true", help="also time every SQL statement, per width")
    args = parser.parse_args(argv)
    runs: dict[int, list[tuple[float, float]]] = {p: [] for p in WIDTHS}
    for repetition in range(args.repetitions):
        for p in WIDTHS:
            runs[p].append(_child(p, args.messages))
            rate, cpu_rate = runs[p][-1]
            print(f"run {repetition + 1}, {p:>5,} partitions: {rate:>9,.0f} msgs/s, {cpu_rate:>9,.0f} msgs per CPU s")
    lo, hi = WIDTHS
    for p in WIDTHS:
        print(
            f"median, {p:,} partitions: {statistics.median(r for r, _ in runs[p]):,.0f} msgs/s, "
            f"{statistics.median(c for _, c in runs[p]):,.0f} msgs per CPU s"
        )
    ratios = [b[0] / a[0] for a, b in zip(runs[lo], runs[hi], strict=True)]
    cpu_ratios = [b[1] / a[1] for a, b in zip(runs[lo], runs[hi], strict=True)]
    print(
        f"{hi:,} / {lo:,} per run: {statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f}), "
        f"by CPU {statistics.median(cpu_ratios):.2f} (target 0.8)"
    )
    if args.statements:
        for p in WIDTHS:
            print(f"\nSQL statements at {p:,} partitions, CPU s, calls:")
            for seconds, count, shape in statements(p, args.messages)[:12]:
                print(f"  {seconds:6.3f} {count:6d}  {shape}")


if __name__ == "__main__":
    main()
