"""The demo: creates streams on the embedded log, produces sample data, reads it back
through the system API and prints a report.

It runs with nothing but the package installed: the log system keeps its SQLite files under
``--root`` (a temporary directory by default).
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

from samza_dagster.config import Config
from samza_dagster.demo.data import page_views
from samza_dagster.serde import JsonSerde
from samza_dagster.system import (
    OutgoingMessageEnvelope,
    StreamSpec,
    SystemStream,
    SystemStreamPartition,
    system_factory,
)

DEFAULT_SIZE = 20_000
PAGE_VIEWS = "page_views"
PARTITIONS = 4


def run_demo(root: str | None = None, size: int | None = None, console: Console | None = None) -> int:
    console = console or Console()
    size = size or DEFAULT_SIZE
    with tempfile.TemporaryDirectory(prefix="samza-dagster-demo-") as tmp:
        log_root = Path(root) if root else Path(tmp)
        report = produce_and_consume(log_root, size)
    _print_report(console, report, log_root if root else None)
    return 0 if report["read"] == report["written"] else 1


def demo_config(log_root: Path) -> Config:
    return Config(
        {
            "job.name": "demo",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(log_root),
        }
    )


def produce_and_consume(log_root: Path, size: int) -> dict:
    """Write ``size`` page views keyed by user into a 4-partition stream, read them all back."""
    config = demo_config(log_root)
    factory = system_factory(config, "log")
    admin = factory.get_admin("log", config)
    admin.create_stream(StreamSpec(PAGE_VIEWS, PAGE_VIEWS, "log", PARTITIONS))

    serde = JsonSerde()
    stream = SystemStream("log", PAGE_VIEWS)
    producer = factory.get_producer("log", config)
    producer.register("demo")
    producer.start()
    started = time.perf_counter()
    countries: Counter[str] = Counter()
    for view in page_views(size):
        countries[view["country"]] += 1
        producer.send(
            "demo",
            OutgoingMessageEnvelope(stream, serde.to_bytes(view), key=view["user_id"].encode(), event_time=view["ts"]),
        )
    producer.flush("demo")
    producer.stop()
    write_s = time.perf_counter() - started

    metadata = admin.get_system_stream_metadata([PAGE_VIEWS])[PAGE_VIEWS]
    ssps = [SystemStreamPartition("log", PAGE_VIEWS, p) for p in range(PARTITIONS)]
    consumer = factory.get_consumer("log", config)
    for ssp in ssps:
        consumer.register(ssp, metadata.partitions[ssp.partition].oldest_offset)
    consumer.start()
    remaining = {ssp: int(metadata.partitions[ssp.partition].upcoming_offset) for ssp in ssps}
    per_partition: Counter[int] = Counter()
    read_countries: Counter[str] = Counter()
    started = time.perf_counter()
    while any(remaining[s] > per_partition[s.partition] for s in ssps):
        for ssp, envelopes in consumer.poll(ssps, 0.1).items():
            for envelope in envelopes:
                per_partition[ssp.partition] += 1
                read_countries[serde.from_bytes(envelope.message)["country"]] += 1
    read_s = time.perf_counter() - started
    consumer.stop()
    return {
        "written": size,
        "read": sum(per_partition.values()),
        "per_partition": dict(sorted(per_partition.items())),
        "offsets": {p: m.newest_offset for p, m in sorted(metadata.partitions.items())},
        "countries_written": dict(countries),
        "countries_read": dict(read_countries),
        "write_s": write_s,
        "read_s": read_s,
    }


def _print_report(console: Console, report: dict, kept_root: Path | None) -> None:
    console.rule("[bold]samza-dagster demo[/bold] — embedded log system")
    table = Table(title=f"{PAGE_VIEWS}: {report['written']:,} page views keyed by user")
    table.add_column("partition", justify="right")
    table.add_column("messages read", justify="right")
    table.add_column("newest offset", justify="right")
    for partition, count in report["per_partition"].items():
        table.add_row(str(partition), f"{count:,}", str(report["offsets"][partition]))
    console.print(table)
    rate_w = report["written"] / report["write_s"] if report["write_s"] else 0
    rate_r = report["read"] / report["read_s"] if report["read_s"] else 0
    console.print(f"written {report['written']:,} in {report['write_s']:.2f}s ({rate_w:,.0f} msg/s); "
                  f"read back {report['read']:,} in {report['read_s']:.2f}s ({rate_r:,.0f} msg/s)")
    same = report["countries_read"] == report["countries_written"]
    console.print(f"per-country counts read back {'match' if same else 'DO NOT match'} what was written")
    if kept_root:
        console.print(f"log files kept under {kept_root}")
