"""Ctrl-C and SIGTERM while a job runs in the foreground: the first stops it gracefully, a
second ends the process at once.

The first SIGINT or SIGTERM asks every container to stop as ``runner.stop()`` does: in-flight
work finishes, every task commits, the summary is printed, and ``samza-dagster run`` exits 0 (a
job stopped on request with everything committed ended as asked). A second one, for a stop
that takes too long, ends the process at once with status 130 (128 + SIGINT, the shell's
convention) after saying what was not committed: the messages processed since each task's last
checkpoint, which the next start processes again (at-least-once, as after a crash).

Handlers are installed only in the main thread (Python delivers signals there), never over a
signal the process was started with ignored (``nohup``, a background job of a
non-interactive shell), and restored when the run ends.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any, NoReturn

#: the exit status of a process ended by a second interrupt
EXIT_INTERRUPTED = 130
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopHandlers:
    """The handlers :func:`install_stop_handlers` installed: calling it restores the previous
    ones; :meth:`reinstall` puts them back over a handler something else installed since (a
    SparkContext installs a SIGINT handler of its own), keeping the count of signals received."""

    def __init__(self, handler: Callable[[int, object], None] | None, previous: dict[signal.Signals, Any]) -> None:
        self._handler = handler
        self._previous = previous

    def reinstall(self) -> None:
        if self._handler is not None:
            for sig in self._previous:
                signal.signal(sig, self._handler)

    def __call__(self) -> None:
        for sig, old in self._previous.items():
            signal.signal(sig, old)


def install_stop_handlers(on_first: Callable[[str], None], on_second: Callable[[str], None]) -> StopHandlers:
    """Route the first stop signal to ``on_first(signal name)`` and later ones to
    ``on_second``; returns what restores the previous handlers."""
    if threading.current_thread() is not threading.main_thread():
        return StopHandlers(None, {})
    received: list[str] = []

    def handler(signum: int, _frame: object) -> None:
        name = signal.Signals(signum).name
        received.append(name)
        (on_first if len(received) == 1 else on_second)(name)

    previous: dict[signal.Signals, Any] = {}
    for sig in STOP_SIGNALS:
        # An ignored SIGINT is kept ignored: a shell starts background jobs that way so a
        # terminal's Ctrl-C does not reach them (nohup's convention). SIGTERM is always handled:
        # it is how a service manager, Dagster and the process runner stop a job, and an ignored
        # SIGTERM inherited from whatever started us would leave the job unstoppable but by SIGKILL,
        # without its final commit.
        if sig == signal.SIGINT and signal.getsignal(sig) is signal.SIG_IGN:
            continue
        previous[sig] = signal.signal(sig, handler)
    return StopHandlers(handler, previous)


#: ``extra={NOTICE: True}`` marks a log record that is a notice for the person at the command line
#: (the first stop signal's): the CLI prints its message as a plain line, as it prints the
#: second signal's, where other records carry a timestamp, level and logger name
NOTICE = "samza_notice"


def exit_now(message: str) -> NoReturn:
    """Say ``message`` on stderr and end the process without unwinding (threads that are still
    processing are not waited for: that is what the second signal asks)."""
    sys.stderr.write(message.rstrip() + "\n")
    sys.stderr.flush()
    os._exit(EXIT_INTERRUPTED)


def describe_uncommitted(containers: Iterable[Any]) -> str:
    """What exiting now leaves uncommitted in ``containers`` (SamzaContainers of this process),
    partition by partition: the next start processes those messages again."""
    parts = []
    for container in containers:
        for task, ssps in sorted(container.uncommitted().items()):
            for ssp, (committed, processed) in sorted(ssps.items()):
                since = "nothing committed yet" if committed is None else f"after the checkpoint at {committed}"
                parts.append(
                    f"container {container.container_id}, task {task}: {ssp.system}.{ssp.stream} "
                    f"partition {ssp.partition} processed up to offset {processed}, {since}"
                )
    if not parts:
        return "Every processed message was committed."
    return "Not committed (processed again at the next start): " + "; ".join(parts) + "."
