"""The argument parser: every subcommand in one line of ``--help``, every value checked where it
is read, so a bad one is a usage error (exit 2) naming the argument and the value."""

from __future__ import annotations

import argparse
import socket
from pathlib import Path
from typing import NoReturn

DESCRIPTION = "Apache Samza's stream processing in Python: run jobs, inspect streams."
EPILOG = (
    "SAMZA_LOG_PATH sets the embedded log's root (default ./.samza-log) for every command. "
    "Run `samza-dagster COMMAND --help` for a command's options."
)


class Parser(argparse.ArgumentParser):
    """Usage errors in two lines — what was wrong, and where to read more — instead of a usage
    block that wraps over several lines before the one line that matters."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n  (see {self.prog} --help)\n")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def partition_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a partition number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be between 0 and 65535, got {value}")
    return value


def existing_file(text: str) -> str:
    if not Path(text).is_file():
        raise argparse.ArgumentTypeError(f"no such file: {text}")
    return text


def directory(text: str) -> str:
    """A directory to write into: it may not exist yet, but may not be a file."""
    if Path(text).exists() and not Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"not a directory: {text}")
    return text


def host(text: str) -> str:
    try:
        socket.getaddrinfo(text, None)
    except (OSError, UnicodeError):
        raise argparse.ArgumentTypeError(f"cannot resolve host {text!r}") from None
    return text


def input_file(text: str) -> str:
    return text if text == "-" else existing_file(text)


def _config_args(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    parser.add_argument(
        "--config-path", required=required, type=existing_file, metavar="FILE", help="the job's .properties file"
    )
    parser.add_argument(
        "--config", action="append", default=[], metavar="KEY=VALUE", help="override a config key (repeatable)"
    )


def _verbose_parent() -> Parser:
    """``-v/--verbose`` on every subcommand too (``samza-dagster run --verbose ...``), as on the
    top level; SUPPRESS keeps a top-level ``-v`` from being reset by a subcommand's default."""
    parent = Parser(add_help=False)
    parent.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="log at DEBUG level and print full traces",
    )
    return parent


VERBOSE = _verbose_parent()


class _OneLineEach(argparse.HelpFormatter):
    """Help text in column 31: room for the longest command name (coordinator-stream-writer,
    indented 4) on the line of its help. argparse measures subcommands at the indent of their
    group, 2 short of where it prints them, and would put that one's help on a line of its own."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=31)
        self._action_max_length = 29


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="samza-dagster", description=DESCRIPTION, epilog=EPILOG, formatter_class=_OneLineEach)
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level and print full traces")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser("demo", parents=[VERBOSE], help="the example applications, on Spark")
    demo.add_argument(
        "--root", default=None, type=directory, metavar="DIR", help="keep the demo's streams here (default: a temp dir)"
    )
    demo.add_argument(
        "--size", type=positive_int, default=None, metavar="N", help="messages per application (default 20000)"
    )

    run = sub.add_parser("run", parents=[VERBOSE], help="run a job until it ends (bounded) or Ctrl-C")
    _config_args(run)
    run.add_argument(
        "--no-create-streams",
        action="store_true",
        help="fail, naming them, instead of creating missing input/output streams",
    )
    run.add_argument(
        "--force-reset",
        action="store_true",
        help="accept changed set-once config or input partition counts of a stateful job "
        "(forgets its task-to-changelog assignment)",
    )

    plan = sub.add_parser("plan", parents=[VERBOSE], help="print a job's execution plan as JSON")
    _config_args(plan)

    _streams_parser(sub)
    _startpoint_parser(sub)

    writer = sub.add_parser(
        "coordinator-stream-writer", parents=[VERBOSE], help="set or delete a key of a job's config"
    )
    _config_args(writer)
    writer.add_argument("--type", required=True, choices=["set-config", "delete"], dest="msg_type")
    writer.add_argument("--key", required=True)
    writer.add_argument("--value", default=None)
    writer.add_argument(
        "--force-reset", action="store_true", help="accept a change to set-once config (resets the job's state mapping)"
    )

    coordinator = sub.add_parser("job-coordinator", parents=[VERBOSE], help="serve a job's JobModel over HTTP")
    _config_args(coordinator)
    coordinator.add_argument(
        "--host",
        default=None,
        type=host,
        help="the address to listen on (default: job.coordinator.http.host, 127.0.0.1)",
    )
    coordinator.add_argument(
        "--port", type=port, default=None, help="the port (default: job.coordinator.http.port, 0: any free one)"
    )

    metrics = sub.add_parser("metrics", parents=[VERBOSE], help="print the latest metrics of a job's containers")
    _config_args(metrics)
    metrics.add_argument("--json", action="store_true", help="Samza's snapshot JSON instead of tables")
    metrics.add_argument(
        "--stream",
        default=None,
        metavar="SYSTEM.STREAM",
        help="the metrics stream (default: the job's snapshot reporter's)",
    )

    sub.add_parser("bench", add_help=False, help="the benchmarks (python -m bench)")
    return parser


def _streams_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    streams = sub.add_parser("streams", parents=[VERBOSE], help="create/list/describe/produce/tail/clean/delete")
    actions = streams.add_subparsers(dest="streams_command", required=True, metavar="ACTION")

    def action(name: str, help_text: str) -> argparse.ArgumentParser:
        p = actions.add_parser(name, parents=[VERBOSE], help=help_text)
        _config_args(p, required=False)
        return p

    create = action("create", "create a stream (existing ones are left as they are)")
    create.add_argument("stream", metavar="[SYSTEM.]STREAM")
    create.add_argument("--partitions", type=positive_int, required=True, metavar="N")

    listing = action("list", "the streams of a system")
    listing.add_argument("--system", default=None, help="default: the job's default system, else log")

    describe = action("describe", "partitions and offsets of a stream")
    describe.add_argument("stream", metavar="[SYSTEM.]STREAM")

    produce = action("produce", "write each line of a file (- for stdin) as one message")
    produce.add_argument("stream", metavar="[SYSTEM.]STREAM")
    produce.add_argument("--file", required=True, type=input_file, metavar="FILE")
    produce.add_argument(
        "--key-field", default=None, metavar="NAME", help="for JSON lines: use this field as the message key"
    )

    clean = action("clean", "apply the stream's retention and compaction now (embedded log)")
    clean.add_argument("stream", metavar="[SYSTEM.]STREAM")

    delete = action("delete", "delete a stream and its messages (embedded log; stop its jobs first)")
    delete.add_argument("stream", metavar="[SYSTEM.]STREAM")

    tail = action("tail", "print the last messages of a stream")
    tail.add_argument("stream", metavar="[SYSTEM.]STREAM")
    tail.add_argument("-n", "--lines", type=positive_int, default=10, metavar="N", help="per partition (default 10)")


def _startpoint_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    startpoint = sub.add_parser("startpoint", parents=[VERBOSE], help="set, list, delete input startpoints")
    actions = startpoint.add_subparsers(dest="startpoint_command", required=True, metavar="ACTION")

    setter = actions.add_parser(
        "set", parents=[VERBOSE], help="start a stream's partitions here at the job's next start"
    )
    _config_args(setter)
    setter.add_argument("--stream", required=True, metavar="SYSTEM.STREAM", help="an input of the job")
    setter.add_argument(
        "--partition",
        type=partition_number,
        action="append",
        default=None,
        metavar="N",
        help="only this partition (repeatable; default: every partition)",
    )
    where = setter.add_mutually_exclusive_group(required=True)
    where.add_argument("--oldest", action="store_true", help="the oldest offset")
    where.add_argument("--upcoming", action="store_true", help="the next offset to be written")
    where.add_argument("--offset", metavar="O", help="this offset")
    where.add_argument(
        "--timestamp",
        metavar="TS",
        help="the earliest message at or after this time: epoch ms or ISO 8601 (UTC if no zone)",
    )

    listing = actions.add_parser("list", parents=[VERBOSE], help="the startpoints waiting for the next start")
    _config_args(listing)

    delete = actions.add_parser("delete", parents=[VERBOSE], help="remove startpoints before they are applied")
    _config_args(delete)
    delete.add_argument("--stream", default=None, metavar="SYSTEM.STREAM", help="default: every stream")
    delete.add_argument(
        "--partition",
        type=partition_number,
        action="append",
        default=None,
        metavar="N",
        help="only this partition (repeatable)",
    )
