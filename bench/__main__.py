"""The benchmark runner: B1–B7 (each against its baseline, measured in the same run) in one process tree, then docs/benchmarks.md rewritten.

    python -m bench                          # everything, default sizes (~15 min on 2 cores)
    python -m bench --only B1,B4 --repetitions 3
    python -m bench --smoke --output /tmp/b.md   # tiny sizes (the test suite's smoke test)
    samza-dagster bench [same options]       # from the repository root

Each benchmark measures its candidate and its baseline in the same run, alternating repetitions,
each measurement in its own child process (bench/harness.py). The report holds the machine, the
versions, the load average before and after, medians and min–max, the ratios and a verdict per
target. Sections of docs/benchmarks.md written by the standalone benchmark modules
(``python -m bench.bench_log_system`` …) are kept, below, under "Other benchmarks".
"""

from __future__ import annotations

import argparse
import datetime as _dt
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import Section, load_average, machine, versions
from bench.report import BENCHMARKS_MD

ALL = ("B1", "B2", "B3", "B4", "B5", "B6", "B7", "B12", "B13", "B15")
_B_SECTION = re.compile(r"<!-- bench:(B\d+) -->")
PROFILES_FILE = Path(__file__).resolve().parent / "PROFILES.md"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(ALL), help="comma-separated subset of B1..B7, B12, B13, B15")
    parser.add_argument("--repetitions", type=int, default=3, help="repetitions per measurement (≥ 3 for the report)")
    parser.add_argument("--messages", type=int, default=1_000_000, help="B1 and B5: log-system messages")
    parser.add_argument(
        "--memory-messages",
        type=int,
        default=1_500_000,
        help="B1's and B3's bounded-memory runs: 1 KiB messages (the address space is capped at 256 MiB)",
    )
    parser.add_argument("--kafka-messages", type=int, default=1_000_000, help="B2 and B3: messages on the broker")
    parser.add_argument(
        "--spark-messages",
        type=int,
        default=400_000,
        help="B6: messages (enough that the CPU-bound part outweighs the fixed ~1 s per job)",
    )
    parser.add_argument(
        "--batch-messages", type=int, default=400_000, help="B15's transform: JSON orders on the log system"
    )
    parser.add_argument(
        "--parquet-rows", type=int, default=4_000_000, help="B15's columnar no-op: Parquet orders on the files system"
    )
    parser.add_argument("--b4-rt-messages", type=int, default=6000)
    parser.add_argument(
        "--latency-seconds", type=float, default=20.0, help="B12: seconds measured at 1,000 msgs/s per repetition"
    )
    parser.add_argument(
        "--idle-seconds",
        type=float,
        default=20.0,
        help="B12's idle figure: seconds the job on the embedded log runs with no input, measured",
    )
    parser.add_argument(
        "--broker-warm-up-seconds",
        type=float,
        default=120.0,
        help="B12: at most this many seconds of one-hop traffic through the freshly started Kafka broker "
        "before measuring (it stops once the broker's one-hop p99 is under 50 ms)",
    )
    parser.add_argument(
        "--scale-messages",
        type=int,
        default=400_000,
        help="B13: log-system messages per partition count (4, 64, 256, 1,024 partitions)",
    )
    parser.add_argument(
        "--scale-memory-messages", type=int, default=600_000, help="B13's memory runs: 1 KiB messages (0: skip them)"
    )
    parser.add_argument(
        "--scale-kafka-messages", type=int, default=200_000, help="B13 on Kafka (4, 64, 256 partitions; 0: skip)"
    )
    parser.add_argument(
        "--scale-spark-messages",
        type=int,
        default=400_000,
        help="B13 on the spark runner with 8 containers (8 … 1,024 partitions; 0: skip)",
    )
    parser.add_argument("--no-faust", action="store_true", help="B2 without Faust")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, 1 repetition: checks the runner works")
    parser.add_argument("--output", type=Path, default=BENCHMARKS_MD, help="report path (default docs/benchmarks.md)")
    parser.add_argument("--no-write", action="store_true", help="print the report, do not write it")
    args = parser.parse_args(argv)
    args.only = [b.strip().upper() for b in args.only.split(",") if b.strip()]
    unknown = sorted(set(args.only) - set(ALL))
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(ALL)}")
    if args.smoke:
        args.repetitions, args.messages, args.kafka_messages = 1, 2000, 2000
        args.spark_messages, args.b4_rt_messages, args.no_faust = 2000, 200, True
        args.latency_seconds, args.broker_warm_up_seconds, args.idle_seconds = 1.0, 1.0, 1.0
        args.scale_messages, args.scale_memory_messages = 4000, 0
        args.scale_kafka_messages, args.scale_spark_messages = 0, 0
        args.batch_messages, args.parquet_rows = 2000, 2000
    return args


def run(args: argparse.Namespace) -> list[Section]:
    workdir = Path(tempfile.mkdtemp(prefix="samza-bench-"))
    sections: list[Section] = []

    def log(text: str) -> None:
        print(text, flush=True)

    def add(key: str, build) -> None:
        if key not in args.only:
            return
        log(f"{key} ...")
        t0 = time.perf_counter()
        section = build()
        section.elapsed_s = section.elapsed_s or (time.perf_counter() - t0)
        sections.append(section)
        log(
            f"{key}: {section.result} — {'met' if section.met else 'NOT met' if section.met is False else 'not measured'}"
        )

    try:
        from bench import (
            bench_batches,
            bench_container,
            bench_kafka,
            bench_latency,
            bench_planner,
            bench_scale,
            bench_spark_runner,
            bench_streams,
        )

        add("B7", lambda: bench_planner.runner_section(max(args.repetitions, 3 if not args.smoke else 1), log))
        add(
            "B1",
            lambda: bench_container.runner_section(
                args.messages,
                args.repetitions,
                workdir,
                log,
                memory_messages=3000 if args.smoke else args.memory_messages,
            ),
        )
        add("B5", lambda: bench_streams.b5_section(args.messages, args.repetitions, workdir, log))
        add(
            "B4",
            lambda: bench_streams.b4_section(
                args.repetitions,
                workdir,
                log,
                rt_messages=args.b4_rt_messages,
                flood=max(2000, args.b4_rt_messages * 10),
            ),
        )
        if {"B2", "B3"} & set(args.only):
            log("B2/B3 ...")
            peers = ("quix",) if args.no_faust else ("quix", "faust")
            for section in bench_kafka.b2_b3_sections(
                args.kafka_messages,
                args.repetitions,
                workdir,
                log,
                want=tuple(b for b in ("B2", "B3") if b in args.only),
                peers=peers,
                memory_messages=3000 if args.smoke else args.memory_messages,
            ):
                sections.append(section)
                log(f"{section.key}: {section.result} — {'met' if section.met else 'NOT met'}")
        add("B6", lambda: bench_spark_runner.runner_section(args.spark_messages, args.repetitions, workdir, log))
        add(
            "B12",
            lambda: bench_latency.b12_section(
                args.repetitions,
                args.latency_seconds,
                log,
                warm_up_s=args.broker_warm_up_seconds,
                idle_s=args.idle_seconds,
            ),
        )
        add(
            "B13",
            lambda: bench_scale.runner_section(
                args.scale_messages,
                args.repetitions,
                workdir,
                log,
                memory_messages=args.scale_memory_messages,
                partitions=(4, 64) if args.smoke else bench_scale.PARTITIONS,
                kafka_messages=args.scale_kafka_messages,
                spark_messages=args.scale_spark_messages,
            ),
        )
        add(
            "B15",
            lambda: bench_batches.runner_section(
                args.messages, args.batch_messages, args.repetitions, workdir, log, args.parquet_rows
            ),
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return sorted(sections, key=lambda s: int(s.key[1:]))


def render(
    sections: list[Section],
    args: argparse.Namespace,
    started: str,
    load_before: str,
    load_after: str,
    wall_s: float,
    previous: str,
) -> str:
    command = "python -m bench " + " ".join(sys.argv[1:]) if sys.argv[1:] else "python -m bench"
    summary = "\n".join(summary_row(s) for s in sections)
    parts = [
        "# Benchmarks",
        "",
        f"Produced by one run of the benchmark runner: `{command}` (also `samza-dagster bench`), "
        f"started {started}, {wall_s / 60:.1f} min in all. The runner rewrites this file; each section names the "
        "command that reruns it alone.",
        "",
        f"* Machine: {machine()}.",
        f"* Versions: {versions(['samza-dagster', 'kafka-python', 'crc32c', 'rocksdict', 'pyspark', 'quixstreams', 'confluent-kafka', 'faust-streaming'])}.",
        f"* Load average (1/5/15 min) before the run: {load_before}; after: {load_after}. **The machine is "
        "shared with several engineers building and testing at the same time**, so absolute numbers are noisy; "
        "candidate and baseline alternate within the run, so the ratios are steadier than the rates.",
        f"* Every measurement ran {args.repetitions} time(s), each in its own process; tables show median (min–max).",
        "",
        "## Summary",
        "",
        "| | benchmark | result | target | verdict |",
        "|---|---|---|---|---|",
        summary,
        "",
    ]
    for s in sections:
        parts += [f"<!-- bench:{s.key} -->", s.markdown(), f"<!-- /bench:{s.key} -->", ""]
    if PROFILES_FILE.exists():
        parts += [PROFILES_FILE.read_text().strip(), ""]
    kept = _other_sections(previous)
    if kept:
        parts += [
            "# Other benchmarks",
            "",
            "Written by the standalone modules (each section names its command), not by the run above.",
            "",
            kept,
            "",
        ]
    return "\n".join(parts)


def summary_row(s: Section) -> str:
    verdict = {True: "met", False: "**not met**", None: "not measured"}[s.met]
    return f"| {s.key} | {s.title} | {s.result} | {s.target} | {verdict} |"


def update_report(previous: str, sections: list[Section], started: str, load_before: str, load_after: str) -> str:
    """``previous`` with each re-run benchmark's section and summary row replaced; the section
    says when it was re-run and under what load, since the header describes the full run."""
    text = previous
    for s in sections:
        note = f"*Re-run alone, started {started}; load average before {load_before}, after {load_after}.*"
        block = f"<!-- bench:{s.key} -->\n{s.markdown()}\n\n{note}\n<!-- /bench:{s.key} -->"
        pattern = re.compile(rf"<!-- bench:{s.key} -->.*?<!-- /bench:{s.key} -->", re.DOTALL)
        if pattern.search(text):
            text = pattern.sub(lambda _m, block=block: block, text)
        elif "\n## Profiles behind" in text:  # a benchmark new to the report: before the profiles
            at = text.index("\n## Profiles behind") + 1
            text = text[:at] + block + "\n\n" + text[at:]
        else:
            text = text.rstrip("\n") + "\n\n" + block + "\n"
        row = re.compile(rf"^\| {s.key} \|.*$", re.MULTILINE)
        if row.search(text):
            text = row.sub(lambda _m, s=s: summary_row(s), text)
        else:  # a benchmark new to the report: its row after the summary's last one
            rows = list(re.finditer(r"^\| B\d+ \|.*$", text, re.MULTILINE))
            if rows:
                at = rows[-1].end()
                text = text[:at] + "\n" + summary_row(s) + text[at:]
    return text


def _other_sections(text: str) -> str:
    """The ``<!-- bench:NAME -->`` sections of the old report that the runner does not own."""
    blocks = re.findall(r"(<!-- bench:([\w-]+) -->.*?<!-- /bench:\2 -->)", text, re.DOTALL)
    return "\n\n".join(block for block, name in blocks if not re.fullmatch(r"B\d+", name))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    load_before = load_average()
    t0 = time.perf_counter()
    sections = run(args)
    wall = time.perf_counter() - t0
    previous = args.output.read_text() if args.output.exists() else ""
    if set(args.only) != set(ALL) and "## Summary" in previous:
        # a subset re-run replaces only its own sections and summary rows of the full report
        report = update_report(previous, sections, started, load_before, load_average())
    else:
        report = render(sections, args, started, load_before, load_average(), wall, previous)
    if args.no_write:
        print(report)
    else:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(report)
        print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
