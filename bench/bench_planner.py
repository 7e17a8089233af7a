"""Planning time for high-level applications of 10, 100 and 1000 operators.

Each application is built from blocks of 12 operators (inputs included) over two inputs: filter, map, a
stream-stream join, a partition_by whose intermediate stream fills a table, a stream-table
join, merge, window and send_to — so every planner phase (virtual table connections, join
groups, intermediate inference, stages, JSON) has work. Reported: describe (building the
OperatorSpec graph), plan (ExecutionPlanner.plan on the built descriptor) and to_json,
median of the runs (min–max). Target: 1000 operators planned in under 200 ms.

    .venv/bin/python -m bench.bench_planner [--runs 5] [--no-write]
"""

from __future__ import annotations

import argparse
import sys
import time

from bench.report import machine_line, summarize, write_section
from samza_dagster.application import (
    StreamApplication,
    StreamApplicationDescriptor,
    SystemDescriptor,
    TableDescriptor,
    Windows,
)
from samza_dagster.planner import ExecutionPlanner

CONFIG = {"job.name": "bench", "systems.kafka.samza.factory": "kafka"}
OPS_PER_BLOCK = 12


def key(m):
    return m


def pair(a, b):
    return (a, b)


def count(m, acc):
    return acc + 1


class BlocksApp(StreamApplication):
    def __init__(self, blocks: int) -> None:
        self.blocks = blocks

    def describe(self, app: StreamApplicationDescriptor) -> None:
        k = SystemDescriptor("kafka")
        out = app.get_output_stream(k.output("OUT"))
        for b in range(self.blocks):
            a = app.get_input_stream(k.input(f"A{b}"))  # 1 input operator
            c = app.get_input_stream(k.input(f"C{b}"))  # 1
            t = app.get_table(TableDescriptor(f"t{b}"))
            joined = a.filter(bool).map(str).join(c, pair, key=key, other_key=key, ttl_ms=1000)  # 3
            joined.partition_by(key).send_to(t)  # partition_by + intermediate input + send_to: 3
            enriched = c.join(t, pair, key=key)  # 1
            enriched.merge(joined).window(Windows.keyed_tumbling(key, 1000, 0, count)).send_to(out)  # 3


def operator_count(descriptor: StreamApplicationDescriptor) -> int:
    return len(descriptor.operators) + len(descriptor.input_operators)


def measure(blocks: int, runs: int) -> tuple[int, list[float], list[float], list[float]]:
    partitions = {"OUT": 8, **{f"A{b}": 8 for b in range(blocks)}, **{f"C{b}": 8 for b in range(blocks)}}
    planner = ExecutionPlanner(CONFIG, partitions)
    describe_ms, plan_ms, json_ms = [], [], []
    n_ops = 0
    for _ in range(runs):
        t0 = time.perf_counter()
        descriptor = StreamApplicationDescriptor.of(BlocksApp(blocks), CONFIG)
        t1 = time.perf_counter()
        plan = planner.plan(descriptor)
        t2 = time.perf_counter()
        plan.to_json()
        t3 = time.perf_counter()
        describe_ms.append((t1 - t0) * 1000)
        plan_ms.append((t2 - t1) * 1000)
        json_ms.append((t3 - t2) * 1000)
        n_ops = operator_count(descriptor)
        assert len(plan.intermediate_streams) == blocks and set(plan.intermediate_streams.values()) == {8}
    return n_ops, describe_ms, plan_ms, json_ms


def fmt(values: list[float]) -> str:
    med, lo, hi = summarize(values)
    return f"{med:.1f} ({lo:.1f}–{hi:.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    rows = []
    for target in (10, 100, 1000):
        blocks = max(1, round(target / OPS_PER_BLOCK))
        n_ops, d, p, j = measure(blocks, max(3, args.runs))
        rows.append(f"| {n_ops} | {fmt(d)} | {fmt(p)} | {fmt(j)} | {fmt([a + b for a, b in zip(d, p, strict=True)])} |")
        print(rows[-1], flush=True)
    markdown = "\n".join(
        [
            "## Planner: planning time by application size",
            "",
            f"Command: `.venv/bin/python -m bench.bench_planner {' '.join(sys.argv[1:])}` — {machine_line()}; median of {max(3, args.runs)} runs (min–max), ms.",
            "Each application repeats a 12-operator block (2 inputs, filter, map, stream-stream join, partition_by into a",
            "table and its intermediate input, stream-table join, merge, keyed tumbling window, send_to). *plan* is",
            "`ExecutionPlanner.plan` on the described graph; target: 1000 operators under 200 ms.",
            "",
            "| operators | describe (ms) | plan (ms) | to_json (ms) | describe + plan (ms) |",
            "|---:|---:|---:|---:|---:|",
            *rows,
        ]
    )
    if not args.no_write:
        write_section("planner", markdown)
    print(markdown)


def runner_section(repetitions: int, log=print):
    """B7: plan a ~1000-operator application (83 blocks = 996 operators)."""
    from bench.harness import Section, median
    from bench.harness import fmt as hfmt

    t0 = time.perf_counter()
    blocks = round(1000 / OPS_PER_BLOCK)
    measure(blocks, 1)  # warm-up: imports and first-call caches
    n_ops, d, p, j = measure(blocks, max(3, repetitions))
    total = [a + b for a, b in zip(d, p, strict=True)]
    log(f"  {n_ops} operators: describe+plan {hfmt(total, '.1f')} ms")
    body = f"""
An application of {n_ops} operators ({blocks} blocks of 12: 2 inputs, filter, map, stream-stream join, partition_by into a
table and its intermediate input, stream-table join, merge, keyed tumbling window, send_to), in the runner's
process after one warm-up; median (min–max) of {max(3, repetitions)}, ms.

| describe (build the OperatorSpec graph) | plan (`ExecutionPlanner.plan`) | describe + plan | to_json |
|---:|---:|---:|---:|
| {hfmt(d, ".1f")} | {hfmt(p, ".1f")} | {hfmt(total, ".1f")} | {hfmt(j, ".1f")} |
"""
    return Section(
        key="B7",
        title=f"planning an application of {n_ops} operators",
        command=f"python -m bench --only B7 --repetitions {repetitions}",
        body=body,
        result=f"{median(total):.1f} ms (describe + plan)",
        target="under 200 ms",
        met=median(total) < 200,
        elapsed_s=time.perf_counter() - t0,
    )


if __name__ == "__main__":
    main()
