"""The ``samza-dagster`` command line (CONTRACT.md: demo, run, plan,
coordinator-stream-writer, job-coordinator).

Exit status: 0 on success, 1 when a job fails, 2 on bad usage or bad config (the message
names the offending key).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from samza_dagster.config import Config, ConfigError, parse_overrides
from samza_dagster.system.errors import SystemError_

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on bad usage already; keep its messages but our prefix."""


def _add_config_args(parser: argparse.ArgumentParser, required: bool = True) -> None:
    parser.add_argument("--config-path", required=required, help="the job's .properties file")
    parser.add_argument(
        "--config", action="append", default=[], metavar="KEY=VALUE", help="override a config key (repeatable)"
    )


def load_job_config(args: argparse.Namespace) -> Config:
    config = Config.from_properties(args.config_path) if args.config_path else Config({})
    return config.with_overrides(parse_overrides(args.config))


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="samza-dagster", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="run the main job on the embedded default and print a summary")
    demo.add_argument("--root", default=None, help="directory for the demo's log system (default: a temp dir)")
    demo.add_argument("--size", type=int, default=None, help="scale of generated data (messages per application)")

    run = sub.add_parser("run", help="run a job until it stops (bounded) or Ctrl-C")
    _add_config_args(run)

    plan = sub.add_parser("plan", help="print the execution plan as JSON")
    _add_config_args(plan)

    writer = sub.add_parser("coordinator-stream-writer", help="write a message to a job's coordinator stream")
    _add_config_args(writer)
    writer.add_argument("--type", required=True, choices=["set-config", "delete"], dest="msg_type")
    writer.add_argument("--key", required=True)
    writer.add_argument("--value", default=None)
    writer.add_argument(
        "--force-reset", action="store_true", help="accept a change to set-once config (resets the job's state mapping)"
    )

    coordinator = sub.add_parser("job-coordinator", help="run the job coordinator and its HTTP service")
    _add_config_args(coordinator)
    coordinator.add_argument("--host", default="127.0.0.1")
    coordinator.add_argument("--port", type=int, default=0)

    bench = sub.add_parser("bench", add_help=False,
                           help="run the benchmarks B1-B7 and rewrite docs/benchmarks.md (from the repository root; "
                                "`samza-dagster bench --help` lists its options)")
    bench.add_argument("bench_args", nargs=argparse.REMAINDER)
    return parser


def run_bench(argv: Sequence[str]) -> int:
    """``samza-dagster bench``: the runner lives in the repository's top-level ``bench/``
    directory (not an installed package), so it works from a checkout's root."""
    import os
    from pathlib import Path

    root = Path(os.getcwd())
    if not (root / "bench" / "__main__.py").is_file():
        print("samza-dagster bench: run it from the samza-dagster repository root "
              f"(no bench/__main__.py under {root})", file=sys.stderr)
        return EXIT_USAGE
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    from bench.__main__ import main as bench_main

    return bench_main(list(argv))


def main(argv: Sequence[str] | None = None) -> int:
    raw = list(sys.argv[1:] if argv is None else argv)
    if raw[:1] == ["bench"]:
        return run_bench(raw[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return _dispatch(args)
    except ConfigError as exc:
        print(f"samza-dagster {args.command}: config error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except _usage_errors() as exc:
        print(f"samza-dagster {args.command}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except SystemError_ as exc:
        # a stream that does not exist, a system that cannot be reached: name it, no traceback
        print(f"samza-dagster {args.command}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print(f"samza-dagster {args.command}: interrupted", file=sys.stderr)
        return 130


def _usage_errors() -> tuple[type[BaseException], ...]:
    """Errors that mean the job as written cannot run: an application the planner rejects."""
    from samza_dagster.application import ApplicationError
    from samza_dagster.planner import PlanningError

    return (ApplicationError, PlanningError)


def _dispatch(args: argparse.Namespace) -> int:
    config = load_job_config(args) if getattr(args, "config_path", None) else None
    if args.command == "demo":
        from samza_dagster.demo import run_demo

        return run_demo(root=args.root, size=args.size)
    if args.command == "plan":
        from samza_dagster.planner import plan_from_config

        print(plan_from_config(config).to_json())
        return EXIT_OK
    if args.command == "run":
        from samza_dagster.runtime import run_job

        result = run_job(config)
        print(result.summary_line())
        return EXIT_OK if result.succeeded else EXIT_FAILED
    if args.command == "coordinator-stream-writer":
        from samza_dagster.coordinator.commands import run_coordinator_stream_writer

        if args.msg_type == "set-config" and args.value is None:
            raise ConfigError("--type set-config needs --value", key=args.key)
        run_coordinator_stream_writer(config, args.msg_type, args.key, args.value, force_reset=args.force_reset)
        return EXIT_OK
    if args.command == "job-coordinator":
        from samza_dagster.coordinator.commands import run_job_coordinator

        run_job_coordinator(config, args.host, args.port)
        return EXIT_OK
    raise AssertionError(args.command)  # argparse rejects unknown commands


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
