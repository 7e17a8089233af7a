"""What each subcommand does (the parser is :mod:`.parser`, failures :mod:`.errors`)."""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from importlib.metadata import entry_points
from pathlib import Path

from samza_dagster.cli.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, UsageError
from samza_dagster.cli.progress import show_progress
from samza_dagster.cli.startpoints import run_startpoint_command
from samza_dagster.cli.streams_tool import run_streams_command
from samza_dagster.cli.text import count_of
from samza_dagster.config import Config, ConfigError, parse_overrides
from samza_dagster.config.deployment import apply_deployment
from samza_dagster.config.job_config import JobConfig
from samza_dagster.coordinator.commands import run_job_coordinator
from samza_dagster.coordinator.model.partition_counts import FORCE_RESET_KEY
from samza_dagster.coordinator.stream.writer_tool import run_coordinator_stream_writer
from samza_dagster.planner import plan_from_config
from samza_dagster.runtime import create_runner
from samza_dagster.runtime.interrupts import NOTICE, exit_now, install_stop_handlers
from samza_dagster.runtime.preflight import check_job_config
from samza_dagster.runtime.provision import provision_streams
from samza_dagster.runtime.runner import JobRunner
from samza_dagster.system.kafka.confluent_config import LIBRDKAFKA_LOGGER

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
DEMO_ENTRY_POINT_GROUP = "samza_dagster.demo"
#: the Kafka client libraries' loggers: kafka-python's and librdkafka's (through confluent-kafka)
KAFKA_CLIENT_LOGGERS = ("kafka", LIBRDKAFKA_LOGGER)


class _WithoutKafkaClients(logging.Filter):
    """Keeps the Kafka clients' own lines off the console. They log every failed connection as
    an error while they retry it (a refused login: a dozen lines in 5 s); what failed reaches
    the user as the command's one error line, and the lines stay in the run's log file."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not any(record.name == name or record.name.startswith(name + ".") for name in KAFKA_CLIENT_LOGGERS)


class _ConsoleFormatter(logging.Formatter):
    """The console's lines: a notice for the person at the command line (``extra={NOTICE: True}``:
    the first stop signal's) as a plain line like the command's own; other records with their
    timestamp, level and logger. The run's log file keeps the full form for every record."""

    def format(self, record: logging.LogRecord) -> str:
        if getattr(record, NOTICE, False):
            return record.getMessage()
        return super().format(record)


def configure_logging(verbose: bool) -> None:
    """Quiet by default — a command prints what it did; the engine's INFO lines (and the traces
    logged with them) are for --verbose and for a run's log file."""
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, format=LOG_FORMAT)
    for handler in logging.getLogger().handlers:
        handler.setFormatter(_ConsoleFormatter(LOG_FORMAT))
    if not verbose:
        for handler in logging.getLogger().handlers:
            handler.setLevel(logging.WARNING)
            handler.addFilter(_WithoutKafkaClients())
    if not verbose:
        for noisy in ("py4j", "pyspark", "kafka"):
            logging.getLogger(noisy).setLevel(logging.ERROR)


def load_job_config(args: argparse.Namespace) -> Config:
    """The .properties, then SAMZA_LOG_PATH (where the log is), then ``--config`` overrides."""
    config = Config.from_properties(args.config_path) if getattr(args, "config_path", None) else Config({})
    return apply_deployment(config).with_overrides(parse_overrides(args.config))


def user_modules_first() -> None:
    """Task and application modules resolve from the current directory first, as with
    ``python -m``: a user's ``jobs/`` is theirs, whatever is installed."""
    cwd = os.getcwd()
    if sys.path[:1] != [cwd]:
        sys.path.insert(0, cwd)


def load_demo() -> Callable[..., int]:
    """``run_demo`` of the example applications, found through the ``samza_dagster.demo`` entry
    point the project declares (pyproject.toml) and imported from the path like any plug-in:
    the checkout's ``jobs/`` (scripts/demo puts the checkout on ``PYTHONPATH``)."""
    found = entry_points(group=DEMO_ENTRY_POINT_GROUP, name="demo")
    try:
        return next(iter(found)).load()
    except (StopIteration, ImportError) as exc:
        raise UsageError(
            "the demo's applications (jobs/demo of the samza-dagster checkout) are not importable here: "
            "run it with ./scripts/demo, or from the checkout's root"
        ) from exc


def dispatch(args: argparse.Namespace) -> int:
    user_modules_first()
    if args.command == "demo":
        return load_demo()(root=args.root, size=args.size)
    if args.command == "streams":
        return run_streams_command(args, load_job_config(args))
    config = load_job_config(args)
    if args.command == "plan":
        print(plan_from_config(config).to_json())
        return EXIT_OK
    if args.command == "run":
        return run(config, args)
    if args.command == "startpoint":
        return run_startpoint_command(args, config)
    if args.command == "coordinator-stream-writer":
        if args.msg_type == "set-config" and args.value is None:
            raise ConfigError(f"--type set-config needs --value (the new value of {args.key!r})", key=args.key)
        wrote = run_coordinator_stream_writer(config, args.msg_type, args.key, args.value, force_reset=args.force_reset)
        print(wrote.line)
        if wrote.warning:
            print(f"samza-dagster {args.command}: warning: {wrote.warning}", file=sys.stderr)
        return EXIT_OK
    if args.command == "metrics":
        from samza_dagster.cli.metrics import run_metrics_command

        return run_metrics_command(args, config)
    if args.command == "job-coordinator":
        run_job_coordinator(config, args.host, args.port)
        return EXIT_OK
    raise AssertionError(args.command)  # argparse rejects unknown commands


def run(config: Config, args: argparse.Namespace) -> int:
    if args.force_reset:
        config = config.with_overrides({FORCE_RESET_KEY: "true"})
    # from the start, a stop is the runner's: one that comes while the job is checked and its
    # streams are made is kept until the runner exists, which then starts and stops its containers
    # at once (the runner installs handlers of its own while it runs): every stop ends with a summary
    runner: JobRunner | None = None
    early: list[str] = []

    def first(name: str) -> None:
        runner.stop_for_signal(name) if runner is not None else early.append(name)

    handlers = install_stop_handlers(first, lambda name: exit_now(f"{name} again: exiting at once"))
    try:
        check_job_config(config)
        provisioned = provision_streams(config, create=not args.no_create_streams, config_path=args.config_path)
        for stream in provisioned.created:
            assert stream.partitions is not None  # provisioning creates only streams with a known count
            print(f"created stream {stream.name} ({count_of(stream.partitions, 'partition')})", file=sys.stderr)
        job = JobConfig(config)
        runner = create_runner(config)
        if early:
            runner.stop_for_signal(early[0])
        with (
            show_progress(
                job.name,
                config,
                [*provisioned.created, *provisioned.existing],
                live=runner.live_positions,
                stalls=runner.live_stalls,
            ),
            run_log(job, args.config_path) as log_path,
        ):
            result = runner.run()
    finally:
        handlers()
    if result.succeeded:
        print(result.summary_line())
        return EXIT_OK
    # a failure is an error message like any other: stderr, so `run ... > out` still shows it
    print(result.summary_line(), file=sys.stderr)
    print(f"  (the run's log, with the full trace: {log_path})", file=sys.stderr)
    return EXIT_FAILED


def run_log_path(job: JobConfig, config_path: str | None) -> Path:
    """``$TMPDIR/samza-dagster-<job.name>-<job.id>-<8 hex>.log``: the hex names the working
    directory and the config file, so jobs of one name run from two directories (two log roots)
    keep a log each."""
    where = f"{os.getcwd()}\0{os.path.abspath(config_path) if config_path else ''}"
    digest = hashlib.sha256(where.encode()).hexdigest()[:8]
    return Path(tempfile.gettempdir()) / f"samza-dagster-{job.name}-{job.id}-{digest}.log"


def previous_log_path(path: Path) -> Path:
    """``...-<8 hex>.previous.log``: the log of the run before the latest."""
    return path.with_suffix(".previous.log")


@contextmanager
def run_log(job: JobConfig, config_path: str | None = None) -> Iterator[Path]:
    """The run's log file: every INFO line of the run and the trace of a failure, whatever the
    console shows. One per job and directory (:func:`run_log_path`), rewritten by each run; the
    run before keeps its log as :func:`previous_log_path` (a rerun after a failure must not take
    the failure's trace away)."""
    path = run_log_path(job, config_path)
    if path.is_file() and path.stat().st_size:
        os.replace(path, previous_log_path(path))
    handler = logging.FileHandler(path, mode="w", encoding="utf-8")
    handler.setLevel(logging.INFO)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield path
    finally:
        root.removeHandler(handler)
        handler.close()


def run_bench(argv: Sequence[str]) -> int:
    """``samza-dagster bench``: ``python -m bench`` of the repository checkout (benchmarks are
    not part of the installed package, and the engine never imports them)."""
    root = Path(os.getcwd())
    if not (root / "bench" / "__main__.py").is_file():
        print(
            "samza-dagster bench: run it from the samza-dagster repository root "
            f"(no bench/__main__.py under {root}); it runs `python -m bench`",
            file=sys.stderr,
        )
        return EXIT_USAGE
    return subprocess.call([sys.executable, "-m", "bench", *argv], cwd=root)
