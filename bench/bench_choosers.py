"""Per-envelope cost of MessageChooser.update + choose, next to a bare deque loop.

``python -m bench.bench_choosers [--envelopes N] [--repetitions R]``

Eight SSPs, one outstanding envelope each (as SystemConsumers drives a chooser): every step
chooses one envelope and updates the chooser with the next envelope of the same partition. The
baseline runs the same loop over a bare ``deque`` (append/popleft), so the ratio is the chooser's
own cost on top of the cheapest possible FIFO. Variants run in alternating order, several times;
the report gives medians and min–max.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections import deque
from collections.abc import Callable

from bench.report import machine_line, summarize, write_section
from samza_dagster.config import Config
from samza_dagster.system import (
    IncomingMessageEnvelope,
    SystemStream,
    SystemStreamMetadata,
    SystemStreamPartition,
    SystemStreamPartitionMetadata,
)
from samza_dagster.system.chooser import (
    BatchingChooser,
    BootstrappingChooser,
    DefaultChooser,
    RoundRobinChooser,
    TieredPriorityChooser,
    TimeAlignedChooser,
)

BOOT = SystemStream("s", "codes")
RT = SystemStream("s", "realtime")
BATCH = SystemStream("s", "batch")
SSPS = [SystemStreamPartition("s", s.stream, p) for s, n in ((BOOT, 2), (RT, 2), (BATCH, 4)) for p in range(n)]


def lagging_metadata(partitions: int) -> SystemStreamMetadata:
    """A stream that stays behind its head for the whole run (the bootstrap path's worst case)."""
    return SystemStreamMetadata(
        "x", {p: SystemStreamPartitionMetadata("0", "1000000000", "1000000001") for p in range(partitions)}
    )


def make_default() -> DefaultChooser:
    config = Config(
        {
            "task.inputs": "s.codes,s.realtime,s.batch",
            "systems.s.streams.codes.samza.bootstrap": "true",
            "systems.s.streams.realtime.samza.priority": "1",
            "task.consumer.batch.size": "10",
        }
    )
    return DefaultChooser.from_config(
        config, {BOOT: lagging_metadata(2), RT: lagging_metadata(2), BATCH: lagging_metadata(4)}
    )


VARIANTS: dict[str, Callable[[], object]] = {
    "RoundRobinChooser": RoundRobinChooser,
    "TieredPriorityChooser (3 tiers)": lambda: TieredPriorityChooser(
        {BOOT: 2, RT: 1, BATCH: 0}, {2: RoundRobinChooser(), 1: RoundRobinChooser(), 0: RoundRobinChooser()}
    ),
    "BatchingChooser (batch 10)": lambda: BatchingChooser(RoundRobinChooser(), 10),
    "BootstrappingChooser (2 lagging SSPs)": lambda: BootstrappingChooser(
        TieredPriorityChooser({BOOT: 1}, {1: RoundRobinChooser()}, RoundRobinChooser()), {BOOT: lagging_metadata(2)}
    ),
    "TimeAlignedChooser": lambda: TimeAlignedChooser(),
    "DefaultChooser (bootstrap+priority+batching)": make_default,
}


def feeds(per_ssp: int = 100) -> dict[SystemStreamPartition, Callable[[], IncomingMessageEnvelope]]:
    """Per partition, an endless supply of envelopes (cycled, pre-built: no allocation in the loop)."""
    return {
        ssp: itertools.cycle(
            [IncomingMessageEnvelope(ssp, str(i), None, b"x", 1, 1_000 * i + ssp.partition) for i in range(per_ssp)]
        ).__next__
        for ssp in SSPS
    }


def run_baseline(n: int) -> float:
    nexts = feeds()
    queue: deque[IncomingMessageEnvelope] = deque()
    append, popleft = queue.append, queue.popleft
    for ssp in SSPS:
        append(nexts[ssp]())
    t0 = time.perf_counter()
    for _ in range(n):
        envelope = popleft()
        append(nexts[envelope.ssp]())
    return (time.perf_counter() - t0) / n


def run_chooser(make: Callable[[], object], n: int) -> float:
    chooser = make()
    nexts = feeds()
    for ssp in SSPS:
        chooser.register(ssp, "0")
    chooser.start()
    update, choose = chooser.update, chooser.choose
    for ssp in SSPS:
        update(nexts[ssp]())
    t0 = time.perf_counter()
    for _ in range(n):
        envelope = choose()
        update(nexts[envelope.ssp]())
    elapsed = time.perf_counter() - t0
    chooser.stop()
    return elapsed / n


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envelopes", type=int, default=200_000)
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--no-write", action="store_true", help="print only; do not touch docs/benchmarks.md")
    args = parser.parse_args(argv)

    names = ["deque append/popleft (baseline)", *VARIANTS]
    results: dict[str, list[float]] = {name: [] for name in names}
    for rep in range(args.repetitions):
        order = names if rep % 2 == 0 else list(reversed(names))  # alternate the order
        for name in order:
            if name in VARIANTS:
                results[name].append(run_chooser(VARIANTS[name], args.envelopes))
            else:
                results[name].append(run_baseline(args.envelopes))

    base = summarize(results[names[0]])[0]
    lines = [
        "## Choosers: per-envelope cost of update + choose",
        "",
        f"Command: `{' '.join(['python -m bench.bench_choosers', *sys.argv[1:]])}`  ",
        f"{machine_line()}; {args.envelopes:,} envelopes per run over 8 SSPs (one outstanding each), "
        f"{args.repetitions} alternating repetitions. The loop chooses one envelope and updates the chooser "
        "with the next envelope of the same SSP; the baseline runs the same loop over a bare deque.",
        "",
        "| chooser | ns/envelope, median (min–max) | × deque loop |",
        "|---|---|---|",
    ]
    for name in names:
        med, lo, hi = summarize(results[name])
        lines.append(f"| {name} | {med * 1e9:,.0f} ({lo * 1e9:,.0f}–{hi * 1e9:,.0f}) | {med / base:.2f} |")
    lines += [
        "",
        "DefaultChooser here is the worst case: a bootstrap stream lagging throughout (every chosen "
        "bootstrap envelope's offset is compared with its head), three priority tiers, batches of 10.",
    ]
    markdown = "\n".join(lines)
    print(markdown)
    if not args.no_write:
        write_section("choosers", markdown)


if __name__ == "__main__":
    main()
