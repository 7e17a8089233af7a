"""``samza-dagster startpoint``: set, list and delete the startpoints of a job (where its inputs
start at the next start, ahead of the checkpoint). A bad value — a stream the job does not read,
a partition the stream does not have, an offset outside it, a timestamp no message is at or
after — exits 2 naming it, and nothing is written."""

from __future__ import annotations

import argparse

from samza_dagster.cli.errors import EXIT_OK, UsageError
from samza_dagster.config import Config
from samza_dagster.runtime.startpoints import delete_startpoints, list_startpoints, set_startpoints
from samza_dagster.startpoint.resolver import format_timestamp
from samza_dagster.startpoint.startpoint import (
    Startpoint,
    StartpointError,
    StartpointOldest,
    StartpointSpecific,
    StartpointTimestamp,
    StartpointUpcoming,
    parse_timestamp_value,
)


def run_startpoint_command(args: argparse.Namespace, config: Config) -> int:
    try:
        if args.startpoint_command == "set":
            return _set(args, config)
        if args.startpoint_command == "list":
            return _list(config)
        if args.startpoint_command == "delete":
            return _delete(args, config)
    except StartpointError as exc:
        raise UsageError(str(exc)) from exc
    raise AssertionError(args.startpoint_command)


def startpoint_from_args(args: argparse.Namespace) -> Startpoint:
    if args.oldest:
        return StartpointOldest()
    if args.upcoming:
        return StartpointUpcoming()
    if args.offset is not None:
        if not args.offset.strip():
            raise UsageError("--offset: empty offset")
        return StartpointSpecific(args.offset.strip())
    try:
        return StartpointTimestamp(parse_timestamp_value(args.timestamp))
    except StartpointError as exc:
        raise UsageError(f"--timestamp: {exc}") from None


def describe(startpoint: Startpoint) -> str:
    if isinstance(startpoint, StartpointTimestamp):
        return f"timestamp {format_timestamp(startpoint.timestamp)}"
    return startpoint.describe()


def _set(args: argparse.Namespace, config: Config) -> int:
    startpoint = startpoint_from_args(args)
    result = set_startpoints(config, args.stream, startpoint, args.partition)
    for ssp, offset in sorted(result.offsets.items()):
        print(
            f"{ssp.system}.{ssp.stream} partition {ssp.partition}: {describe(startpoint)} "
            f"(offset {offset} now), applied at the job's next start"
        )
    return EXIT_OK


def _list(config: Config) -> int:
    found = list_startpoints(config)
    for key, startpoint in sorted(found.items()):
        print(f"{key}: {describe(startpoint)}")
    if not found:
        print("no startpoints")
    return EXIT_OK


def _delete(args: argparse.Namespace, config: Config) -> int:
    deleted = delete_startpoints(config, args.stream, args.partition)
    for key in deleted:
        print(f"deleted startpoint of {key}")
    if not deleted:
        print("no startpoints matched")
    return EXIT_OK
