"""``samza-dagster metrics``: the latest snapshot of every container (and its tasks) of a job,
read from the job's metrics stream — a table per source, or ``--json`` (Samza's snapshot
JSON, one object per source, in a list)."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime

from rich.console import Console
from rich.table import Table

from samza_dagster.cli.errors import EXIT_OK
from samza_dagster.config import Config, ConfigError
from samza_dagster.metrics.config import REPORTERS_KEY, metrics_config
from samza_dagster.metrics.snapshot import MetricsSnapshot
from samza_dagster.metrics.stream_reader import latest_snapshots
from samza_dagster.model import SystemStream
from samza_dagster.system.errors import StreamNotFoundError


def metrics_stream(config: Config, override: str | None) -> SystemStream:
    """``--stream``, else the stream of the job's first snapshot (or Prometheus) reporter."""
    if override:
        system, dot, stream = override.partition(".")
        if not dot or not system or not stream:
            raise ConfigError(f"--stream is {override!r}; expected system.stream", key="--stream")
        return SystemStream(system, stream)
    streams = list(metrics_config(config).snapshot_streams)
    if not streams:
        raise ConfigError(
            f"the job has no metrics stream: configure a snapshot reporter ({REPORTERS_KEY}, "
            f"metrics.reporter.<name>.class=snapshot, metrics.reporter.<name>.stream=system.stream) or pass --stream",
            key=REPORTERS_KEY,
        )
    return streams[0]


def run_metrics_command(args: argparse.Namespace, config: Config) -> int:
    stream = metrics_stream(config, args.stream)
    try:
        snapshots = latest_snapshots(config, stream).snapshots()
    except StreamNotFoundError:
        snapshots = []
    if args.json:
        print(json.dumps([s.to_dict() for s in snapshots], indent=2, default=str))
        return EXIT_OK
    if not snapshots:
        print(
            f"no metrics snapshots on {stream.system}.{stream.stream} yet (the job writes one per "
            f"reporter interval once it runs)",
            file=sys.stderr,
        )
        return EXIT_OK
    console = Console(width=max(100, Console().width))
    for snapshot in snapshots:
        console.print(_table(snapshot))
    return EXIT_OK


def _table(snapshot: MetricsSnapshot) -> Table:
    h = snapshot.header
    at = datetime.fromtimestamp(h.time / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    table = Table(
        title=f"{h.job_name}-{h.job_id} container {h.container_name} · {h.source} · {at} · {h.host}",
        title_justify="left",
    )
    table.add_column("group")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for group, values in sorted(snapshot.metrics.items()):
        short = group.rsplit(".", 1)[-1]
        for name, value in sorted(values.items()):
            table.add_row(short, name, _format(value))
    return table


def _format(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1 else f"{value:,.1f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return "" if value is None else str(value)
