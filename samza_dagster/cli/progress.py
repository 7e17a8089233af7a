"""What a running job has done, shown while ``samza-dagster run`` waits for it.

Processed and lag are counted per input partition from the furthest of two positions: what the
job's checkpoints cover (written at each commit, seen the same whatever runs the containers) and
the last offset the containers have processed so far, which the runner reports while they run
(``JobRunner.live_positions``: the thread runner reads its containers, the process runner the
offsets its container processes write every second; the Spark runner has none, so there they
move at each commit). Offsets, not counters: a reconfigured job's restarted containers neither
reset nor double the count. Written is what was appended to the streams the job writes — its
outputs, not its own metrics snapshots.

A stalled job says so: when a container's commit has waited seconds for a system that does not
answer (brokers down: ``JobRunner.live_stalls``), each line ends with what it waits for, and the
offsets shown are the last ones read while the brokers cannot tell them (the display's own
requests retry for ``WATCH_RETRY_WINDOW_MS`` only: progress never waits a retry window out).

On a terminal it is a ``rich`` progress display, replaced by the run's summary line when the job
ends; otherwise (a pipe, a file, CI) a plain line every ``PLAIN_INTERVAL_S`` seconds. The rate is
the recent one — messages processed over the last ``RATE_WINDOW_S`` seconds (at least one
interval), as a progress bar's is — not the average since the start, which showed an idle job
still processing hundreds a second.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from typing import Any, TextIO

from samza_dagster.checkpoint.manager import CheckpointManager, checkpoint_system
from samza_dagster.config import Config, keys
from samza_dagster.metrics.config import metrics_config
from samza_dagster.model import SystemStreamPartition
from samza_dagster.planner.admins import fetch_metadata
from samza_dagster.runtime.provision import DeclaredStream
from samza_dagster.runtime.result import per_second
from samza_dagster.system.errors import StreamNotFoundError
from samza_dagster.system.factories import stop_admin, system_factory

TTY_INTERVAL_S = 1.0
PLAIN_INTERVAL_S = 10.0
#: the rate is measured over the last this many seconds (or the last interval, when longer)
RATE_WINDOW_S = 10.0
#: the runner's live positions: last processed offset per input partition (None: it has none)
LivePositions = Callable[[], "dict[SystemStreamPartition, str] | None"]
#: the runner's live stalls: what each stalled container's commit waits for
LiveStalls = Callable[[], "list[str]"]
#: how long the display's own admin requests are asked again while the cluster answers "not yet"
WATCH_RETRY_WINDOW_MS = 1000


@dataclass(frozen=True)
class Sample:
    processed: int
    lag: int
    written: int
    elapsed_s: float
    #: (processed, elapsed_s) where the rate's window starts (:class:`RecentRate`); None: the
    #: rate is the average since the start
    window_start: tuple[int, float] | None = None
    #: what the stalled containers wait for (empty: none is stalled)
    stalled: tuple[str, ...] = ()

    @property
    def rate(self) -> str:
        done, at = self.window_start if self.window_start is not None else (0, 0.0)
        return per_second(self.processed - done, self.elapsed_s - at)

    @property
    def clock(self) -> str:
        """``0:01:05``: the time since the job started, on every sample."""
        seconds = int(self.elapsed_s)
        return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"

    def line(self, job: str) -> str:
        line = f"{job}: {self.processed:,} processed ({self.rate}), lag {self.lag:,}, {self.written:,} written, {self.clock}"
        return line + self.stall_text

    @property
    def stall_text(self) -> str:
        return f" — stalled: {'; '.join(self.stalled)}" if self.stalled else ""


class RecentRate:
    """Gives each sample the start of its rate window: the latest earlier sample at least
    ``window_s`` older (the job's start until there is one), so the rate is the recent one."""

    def __init__(self, window_s: float = RATE_WINDOW_S) -> None:
        self.window_s = window_s
        self._points: deque[tuple[int, float]] = deque([(0, 0.0)])

    def __call__(self, sample: Sample) -> Sample:
        while len(self._points) > 1 and sample.elapsed_s - self._points[1][1] >= self.window_s:
            self._points.popleft()
        start = self._points[0]
        self._points.append((sample.processed, sample.elapsed_s))
        return replace(sample, window_start=start)


class JobWatch:
    """Samples a job's progress from its streams' offsets and its checkpoint stream."""

    def __init__(
        self,
        config: Config,
        streams: Iterable[DeclaredStream],
        live: LivePositions | None = None,
        stalls: LiveStalls | None = None,
    ) -> None:
        streams = list(streams)
        # a courtesy display never waits a Kafka retry window out (a minute by default)
        window = keys.SYSTEM_KAFKA_RETRY_WINDOW_MS
        self.config = config.with_overrides(
            {window.key(system=system): str(WATCH_RETRY_WINDOW_MS) for system in {s.system for s in streams}}
        )
        # what the job writes, not its own metrics snapshots (an idle job writes those too)
        reporters = {(s.system, s.stream) for s in metrics_config(config).snapshot_streams}
        self.streams = [s for s in streams if s.reads or (s.system, s.physical_name) not in reporters]
        self._live = live
        self._stalls = stalls
        self._last: Sample | None = None
        #: the offsets being read (see :meth:`sample`)
        self._pending: Future[Sample] | None = None
        self._admins: dict[str, Any] = {}
        self._stack = ExitStack()
        self._started = time.monotonic()
        first = self._offsets()
        #: where each partition stood: the head of a written stream, the checkpoint (else the
        #: oldest offset) of a read one
        self._baseline = {ssp: oldest for ssp, (oldest, _) in first.items()}
        self._baseline.update(self._covered())
        self._baseline.update({ssp: head for ssp, (_, head) in first.items() if not self._reads(ssp)})

    def close(self) -> None:
        self._stack.close()

    def sample(self, wait_s: float | None = None) -> Sample:
        """The job's progress now. The offsets are read on a thread of their own, waited for up
        to ``wait_s`` (None: until read): while the brokers cannot tell them (down, electing),
        the sample is the last one's counts with the clock and the stalls of now, and the read
        goes on for the next sample. Raises when the read fails and there is no earlier sample."""
        stalled = tuple(self._stalls()) if self._stalls is not None else ()
        if self._pending is None:
            self._pending = _in_thread(self._sample)
        try:
            sample = replace(self._pending.result(timeout=None if self._last is None else wait_s), stalled=stalled)
            self._pending = None
        except FutureTimeout:
            assert self._last is not None
            sample = replace(self._last, elapsed_s=time.monotonic() - self._started, stalled=stalled)
        except Exception:
            self._pending = None
            if self._last is None:
                raise
            sample = replace(self._last, elapsed_s=time.monotonic() - self._started, stalled=stalled)
        self._last = sample
        return sample

    def _sample(self) -> Sample:
        covered = self._covered()
        live = self._live() if self._live is not None else None
        for ssp, offset in (live or {}).items():
            covered[ssp] = max(covered.get(ssp, 0), _int(offset) + 1)
        processed = lag = written = 0
        for ssp, (oldest, head) in self._offsets().items():
            start = self._baseline.get(ssp, oldest)
            if self._reads(ssp):
                done = max(start, min(head, covered.get(ssp, start)))
                processed += max(0, done - start)
                lag += max(0, head - done)
            else:
                written += max(0, head - start)
        return Sample(processed, lag, written, time.monotonic() - self._started)

    def _reads(self, ssp: SystemStreamPartition) -> bool:
        return any(s.reads and (s.system, s.physical_name) == (ssp.system, ssp.stream) for s in self.streams)

    def _admin(self, system: str) -> Any:
        if system not in self._admins:
            admin = system_factory(self.config, system).get_admin(system, self.config)
            self._stack.callback(stop_admin, admin)
            self._admins[system] = admin
        return self._admins[system]

    def _offsets(self) -> dict[SystemStreamPartition, tuple[int, int]]:
        """partition → its oldest offset and the one the next message appended to it gets."""
        by_system: dict[str, list[str]] = {}
        for s in self.streams:
            by_system.setdefault(s.system, []).append(s.physical_name)
        out: dict[SystemStreamPartition, tuple[int, int]] = {}
        for system, names in by_system.items():
            for name, md in fetch_metadata(self._admin(system), system, names).items():
                for p, m in md.partitions.items():
                    out[SystemStreamPartition(system, name, p)] = (_int(m.oldest_offset), _int(m.upcoming_offset))
        return out

    def _covered(self) -> dict[SystemStreamPartition, int]:
        """input partition → the offset after the last one its checkpoint covers."""
        system = checkpoint_system(self.config)
        factory = system_factory(self.config, system)
        manager = CheckpointManager(
            self.config, self._admin(system), None, lambda: factory.get_consumer(system, self.config)
        )
        try:
            checkpoints = manager.read_last(committed_so_far=True)
        except StreamNotFoundError:  # the job has not committed yet
            return {}
        out: dict[SystemStreamPartition, int] = {}
        for checkpoint in checkpoints.values():
            for ssp, offset in checkpoint.offsets.items():
                out[ssp] = _int(offset) + 1
        return out


def _in_thread(fn: Callable[[], Sample]) -> Future[Sample]:
    """``fn()`` on a daemon thread (a read blocked on brokers that are down never holds up the
    process's exit, as a thread pool's worker would)."""
    future: Future[Sample] = Future()

    def run() -> None:
        try:
            future.set_result(fn())
        except BaseException as exc:  # noqa: BLE001 - handed to the waiter
            future.set_exception(exc)

    threading.Thread(target=run, name="samza-run-progress-read", daemon=True).start()
    return future


def _int(offset: str | None) -> int:
    try:
        return int(offset) if offset is not None else 0
    except ValueError:  # a system whose offsets are not numbers: no arithmetic on them
        return 0


@contextmanager
def show_progress(
    job: str,
    config: Config,
    streams: Iterable[DeclaredStream],
    *,
    out: TextIO | None = None,
    interval_s: float | None = None,
    live: LivePositions | None = None,
    stalls: LiveStalls | None = None,
    rate_window_s: float = RATE_WINDOW_S,
) -> Iterator[None]:
    """Show the job's progress while the body runs (``live``: the runner's live positions,
    ``stalls``: its live stalls). Progress is a courtesy: a stream that cannot be observed stops
    the display, never the job."""
    out = out or sys.stderr
    try:
        watch = JobWatch(config, streams, live, stalls)
    except Exception:  # noqa: BLE001 - the job itself reports a system it cannot reach
        yield
        return
    tty = out.isatty()
    interval = interval_s if interval_s is not None else (TTY_INTERVAL_S if tty else PLAIN_INTERVAL_S)
    done = threading.Event()
    render = _rich_display(job, out) if tty else _plain_display(job, out)
    recent = RecentRate(max(rate_window_s, interval))
    thread = threading.Thread(
        target=_loop,
        args=(watch, lambda s: render(recent(s) if s is not None else None), done, interval),
        name="samza-run-progress",
        daemon=True,
    )
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(10)
        render(None)
        watch.close()


def _loop(watch: JobWatch, render: Any, done: threading.Event, interval: float) -> None:
    while not done.wait(interval):
        try:
            render(watch.sample(wait_s=interval))
        except Exception:  # noqa: BLE001 - see show_progress
            return


def _plain_display(job: str, out: TextIO) -> Any:
    def render(sample: Sample | None) -> None:
        if sample is not None:
            print(sample.line(job), file=out, flush=True)

    return render


def _rich_display(job: str, out: TextIO) -> Any:
    # rich loads only for a terminal's live progress display
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn

    # the clock is the sample's own: rich's elapsed column stops when a task is complete, and a
    # streaming job that has caught up (lag 0) is complete until the next message arrives
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[line]}"),
        TextColumn("{task.fields[clock]}"),
        console=Console(file=out),
        transient=True,
    )
    task = progress.add_task(job, total=None, line="starting", clock="0:00:00")
    progress.start()

    def render(sample: Sample | None) -> None:
        if sample is None:
            progress.stop()
            return
        # a bounded job's work is what it has done plus what is left; an unbounded one's grows
        progress.update(
            task,
            completed=sample.processed,
            total=sample.processed + sample.lag or None,
            line=f"{sample.processed:,} processed ({sample.rate})  lag {sample.lag:,}  {sample.written:,} written"
            + sample.stall_text,
            clock=sample.clock,
        )

    return render
