"""How the command line reports a failure: one or two lines a person can act on.

Errors of the job as written (bad config, a plan the planner rejects, a bad value given to a
command) exit 2; errors of the world (a stream that does not exist, a system that cannot be
reached, a job that failed) exit 1. Neither prints a trace unless ``--verbose``; any other
exception is a bug of ours, reported in one line with the trace written to a file.
"""

from __future__ import annotations

import sys
import tempfile
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from samza_dagster.config import ConfigError
from samza_dagster.errors import SamzaError

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
TRACE_FILE = Path(tempfile.gettempdir()) / "samza-dagster-last-error.log"


class UsageError(SamzaError):
    """A bad argument value: names the argument and the value."""


@dataclass
class Outcome:
    code: int = EXIT_OK


def _usage_errors() -> tuple[type[BaseException], ...]:
    """Errors that mean the job as written cannot run. (Imported here, when an error is
    reported: at start-up they would load the planner before ``--help`` answers.)"""
    from samza_dagster.application import ApplicationError
    from samza_dagster.planner import PlanningError

    return (ConfigError, UsageError, ApplicationError, PlanningError)


def _world_errors() -> tuple[type[BaseException], ...]:
    """A stream that does not exist, a system that cannot be reached, a job that failed."""
    from samza_dagster.system.errors import SamzaSystemError

    return (SamzaSystemError, OSError, TimeoutError)


@contextmanager
def report_errors(command: str, *, verbose: bool) -> Iterator[Outcome]:
    outcome = Outcome()
    try:
        yield outcome
    except KeyboardInterrupt:
        print(f"samza-dagster {command}: interrupted", file=sys.stderr)
        outcome.code = EXIT_INTERRUPTED
    except _usage_errors() as exc:
        _say(command, exc, verbose, prefix="config error: " if isinstance(exc, ConfigError) else "")
        outcome.code = EXIT_USAGE
    except _world_errors() as exc:
        _say(command, exc, verbose)
        outcome.code = EXIT_FAILED
    except Exception as exc:  # noqa: BLE001 - a bug of ours: one line, the trace in a file
        _say(command, exc, verbose, prefix=f"unexpected {type(exc).__name__}: ", keep_trace=True)
        outcome.code = EXIT_FAILED


def _say(command: str, exc: BaseException, verbose: bool, *, prefix: str = "", keep_trace: bool = False) -> None:
    if verbose:
        traceback.print_exception(exc, file=sys.stderr)
    message = str(exc).strip() or type(exc).__name__
    print(f"samza-dagster {command}: {prefix}{message}", file=sys.stderr)
    if keep_trace and not verbose:
        TRACE_FILE.write_text("".join(traceback.format_exception(exc)))
        print(f"  (full trace in {TRACE_FILE}; rerun with --verbose to print it)", file=sys.stderr)
