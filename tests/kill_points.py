"""Killing a job at a point it has reached, never at a moment on the clock.

A crash test plans where each SIGKILL lands — inside ``process``, around a producer's flush,
after the checkpoint, before a transaction's commit, between its commit point and its markers,
mid-restore — as a list of :class:`KillPoint`. The job itself says when it is there: the fault
hooks below (a wrapper around any system factory, and :func:`fault_points` for a task's own
code) write a marker file ``in-<phase>`` holding the pid to kill, then pause; the test's
:class:`Kills` waits for the marker (or for the job's end), renames it ``killed-<n>-<phase>`` and
SIGKILLs that pid. A faster or slower machine changes when that happens, never whether: every
planned kill lands mid-run, and :attr:`Kills.landed` equals the plan unless the job really ended
before reaching a point.

``random:<k>`` is the one point not tied to a hook: the marker is written at the ``k``-th
``process`` call and the job runs on, so the kill lands wherever the job is when the test sees the
marker (a send, a flush, a commit, a restore of nothing ...). So that the job cannot end first,
it pauses anyway :data:`RANDOM_WINDOW` process calls later, or when its input's end-of-stream is
polled.

One config drives every runner: ``test.fault.schedule`` lists the points in order and a
container instance takes the point after those already killed (the number of ``killed-*``
markers), so a runner that restarts a killed container by itself (Spark's stage retry) and a test
that starts the job again after each kill (process and thread runners) use the same schedule.
The hooks act only inside a container — its process (process runner, a Spark task) or its thread
(thread runner) — never in the job coordinator, which may use the same system, nor in the test's
own process.

Use: ``config = with_kill_points(job_config, system, kills)`` wraps ``system``'s factory (the
embedded log, Kafka, any other) in :class:`FaultySystemFactory`; then :func:`kill_at_each_point`
with a function that starts the job (:class:`ThreadedRun`, :class:`SubprocessRun`).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from samza_dagster.config import Config
from samza_dagster.coordinator.client import URL_ENV
from samza_dagster.runtime.thread_runner import CONTAINER_THREAD_PREFIX
from samza_dagster.system.factories import system_factory
from samza_dagster.system.log import transactions
from support.waiting import wait_until
from tests.forwarding import ForwardingConsumer, ForwardingProducer

FAULT_DIR_KEY = "test.fault.dir"
SCHEDULE_KEY = "test.fault.schedule"
#: the test's own process, where the points never act (a SIGKILL there would end the test)
TEST_PID_KEY = "test.fault.test.pid"
#: the factory :class:`FaultySystemFactory` wraps (``systems.<s>.samza.factory`` before wrapping)
INNER_FACTORY_KEY = "test.fault.system.factory"
#: process calls a ``random`` point lets the job make after its marker before it pauses anyway
RANDOM_WINDOW = 64
#: how long a paused container waits for its SIGKILL (it comes within milliseconds)
_PAUSE_S = 300.0
#: the checkpoint manager's producer source: its flush is the checkpoint's write
_CHECKPOINT_SOURCE = "__checkpoint"


@dataclass(frozen=True)
class KillPoint:
    """The ``nth`` time (this container instance) reaches ``phase``: ``process``, ``before-flush``,
    ``after-flush``, ``after-checkpoint``, ``before-commit``, ``markers`` (the embedded log's
    commit markers), ``restore`` or ``random`` (module docstring)."""

    phase: str
    nth: int = 1

    def __str__(self) -> str:
        return f"{self.phase}:{self.nth}"

    @classmethod
    def parse(cls, text: str) -> KillPoint:
        phase, _, nth = text.strip().partition(":")
        return cls(phase, int(nth or 1))


def seeded_points(phases: Iterable[str], rnd: random.Random, *, random_upto: int = 200) -> list[KillPoint]:
    """One point per phase: the 1st to 4th time it is reached (a restore: the first), a random
    point at one of the first ``random_upto`` messages of its run."""
    points = []
    for phase in phases:
        if phase == "restore":
            points.append(KillPoint(phase, 1))
        elif phase == "random":
            points.append(KillPoint(phase, rnd.randint(1, random_upto)))
        else:
            points.append(KillPoint(phase, rnd.randint(1, 4)))
    return points


# -- in the job ---------------------------------------------------------------------------------
def _in_a_container(test_pid: int | None) -> bool:
    """Outside the test's process: a container's process has the coordinator's URL in its
    environment (the process runner's child, a Spark task); a thread runner's container is a
    thread of its own name (its job coordinator runs on another thread of the same process)."""
    if os.getpid() == test_pid:
        return False
    return URL_ENV in os.environ or threading.current_thread().name.startswith(CONTAINER_THREAD_PREFIX)


class FaultPoints:
    """The kill point of one container instance: the first point of ``test.fault.schedule`` not
    yet killed. :meth:`at` is called at each phase; at the planned one it writes the marker and
    pauses until the test's SIGKILL."""

    def __init__(self, config: Config) -> None:
        schedule = [KillPoint.parse(entry) for entry in config.get_list(SCHEDULE_KEY) if entry.strip()]
        self.dir = Path(config.get_str(FAULT_DIR_KEY) or ".")
        self.point: KillPoint | None = None
        if schedule and _in_a_container(config.get_int(TEST_PID_KEY)):
            done = len(list(self.dir.glob("killed-*")))
            self.point = schedule[done] if done < len(schedule) else None
        self.seen: Counter = Counter()
        self.lock = threading.Lock()
        self.random_marked = False

    def wants(self, phase: str) -> bool:
        return self.point is not None and self.point.phase == phase

    def at(self, phase: str) -> None:
        point = self.point
        if point is None:
            return
        if point.phase == "random":
            if phase == "process":
                self._random_step()
            return
        if phase != point.phase:
            return
        with self.lock:
            self.seen[phase] += 1
            hit = self.seen[phase] == point.nth
        if hit:
            self._mark(phase)
            self._pause()

    def end_of_input_polled(self) -> None:
        """The job is about to run out of input: a ``random`` point already marked must not let
        it end before its kill lands."""
        if self.random_marked:
            self._pause()

    def _random_step(self) -> None:
        assert self.point is not None
        with self.lock:
            self.seen["process"] += 1
            count = self.seen["process"]
        if count == self.point.nth:
            self.random_marked = True
            self._mark("random")  # and run on: the kill lands wherever the job then is
        elif count == self.point.nth + RANDOM_WINDOW:
            self._pause()

    def _mark(self, phase: str) -> None:
        # written whole, then renamed into place: the test never reads a marker without its pid
        tmp = self.dir / f".in-{phase}.{os.getpid()}"
        tmp.write_text(str(os.getpid()))
        os.replace(tmp, self.dir / f"in-{phase}")

    @staticmethod
    def _pause() -> None:
        time.sleep(_PAUSE_S)  # the test kills us here


_points: dict[int, tuple[Config, FaultPoints]] = {}


def fault_points(config: Config) -> FaultPoints:
    """The one :class:`FaultPoints` of a container's config object (its producers, consumers and
    tasks share it, so counts and the ``random`` window span all of them)."""
    entry = _points.get(id(config))
    if entry is None:
        # the config is kept with its points, so its id is never reused for another config
        entry = _points[id(config)] = (config, FaultPoints(config))
    return entry[1]


class _FaultyProducer(ForwardingProducer):
    def __init__(self, inner: Any, points: FaultPoints) -> None:
        super().__init__(inner)
        self._points = points

    def flush(self, source):
        if source == _CHECKPOINT_SOURCE:
            self.inner.flush(source)
            self._points.at("after-checkpoint")
            return
        self._points.at("before-flush")
        self.inner.flush(source)
        self._points.at("after-flush")  # output + changelog durable (or open), checkpoint not yet written

    def commit_transaction(self):
        self._points.at("before-commit")  # outputs, changelog and checkpoints written, not committed
        self.inner.commit_transaction()


class _FaultyConsumer(ForwardingConsumer):
    def __init__(self, inner: Any, points: FaultPoints) -> None:
        super().__init__(inner)
        self._points = points
        self._changelog = False

    def __getattr__(self, name: str) -> Any:
        # what SystemConsumers asks of a consumer beyond the protocol (poll_on_caller_thread,
        # limit_fetch): the wrapped consumer is polled as it would be unwrapped
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def register(self, ssp, offset):
        self._changelog = self._changelog or ssp.stream.endswith("-changelog")
        self.inner.register(ssp, offset)

    def poll(self, ssps, timeout_s):
        polled = self.inner.poll(ssps, timeout_s)
        if polled:
            if self._changelog:
                self._points.at("restore")
            elif any(envelopes and envelopes[-1].is_end_of_stream for envelopes in polled.values()):
                self._points.end_of_input_polled()
        return polled


def _pause_on_markers(points: FaultPoints) -> None:
    """The embedded log's commit markers are written by a module function (after the commit
    point, and by a container's next instance for a committed transaction left without them):
    wrapped once per process."""
    write_markers = transactions.write_markers
    if getattr(write_markers, "paused", False):
        return

    def paused(*args: Any) -> None:
        points.at("markers")
        write_markers(*args)

    paused.paused = True  # type: ignore[attr-defined]
    transactions.write_markers = paused  # type: ignore[assignment]


class FaultySystemFactory:
    """``test.fault.system.factory``'s system (default: the embedded log), its producers and
    consumers passing each kill point's phase to the container's :class:`FaultPoints`."""

    def _inner(self, system_name: str, config: Config) -> Any:
        name = config.get_str(INNER_FACTORY_KEY) or "log"
        return system_factory(Config({f"systems.{system_name}.samza.factory": name}), system_name)

    def supports_transactions(self, system_name: str, config: Config) -> bool:
        supports = getattr(self._inner(system_name, config), "supports_transactions", None)
        return callable(supports) and bool(supports(system_name, config))

    def get_admin(self, system_name: str, config: Config) -> Any:
        return self._inner(system_name, config).get_admin(system_name, config)

    def get_consumer(self, system_name: str, config: Config) -> Any:
        return _FaultyConsumer(self._inner(system_name, config).get_consumer(system_name, config), fault_points(config))

    def get_producer(self, system_name: str, config: Config) -> Any:
        points = fault_points(config)
        if points.wants("markers"):
            _pause_on_markers(points)
        return _FaultyProducer(self._inner(system_name, config).get_producer(system_name, config), points)


# -- in the test --------------------------------------------------------------------------------
class Kills:
    """The test's side of a schedule of kill points: the config that plans them, and
    :meth:`await_next`, which kills the job at the next one."""

    def __init__(self, fault_dir: Path, points: Sequence[KillPoint]) -> None:
        self.dir = fault_dir
        self.points = list(points)
        self.landed: list[KillPoint] = []
        fault_dir.mkdir(parents=True, exist_ok=True)
        for old in [*fault_dir.glob("in-*"), *fault_dir.glob("killed-*")]:
            old.unlink()

    @property
    def config(self) -> dict[str, str]:
        return {
            FAULT_DIR_KEY: str(self.dir),
            SCHEDULE_KEY: ",".join(str(p) for p in self.points),
            TEST_PID_KEY: str(os.getpid()),
        }

    @property
    def pending(self) -> bool:
        return len(self.landed) < len(self.points)

    def await_next(self, running: Callable[[], bool], timeout_s: float = 180.0) -> bool:
        """Wait until the job reaches the next planned point — then SIGKILL the process its
        marker names and return True — or stops running (False: it ended before the point)."""
        point = self.points[len(self.landed)]
        marker = self.dir / f"in-{point.phase}"
        wait_until(lambda: marker.exists() or not running(), timeout_s, f"kill point {point}", poll_s=0.002)
        if not marker.exists():
            return False
        pid = int(marker.read_text())
        self.landed.append(point)
        # renamed before the kill: the instance that replaces the killed one takes the next point
        marker.rename(self.dir / f"killed-{len(self.landed)}-{point.phase}")
        os.kill(pid, signal.SIGKILL)
        return True

    def kill_paused(self) -> None:
        """After a failure: kill whatever still pauses at a point, so no process is left behind."""
        for marker in self.dir.glob("in-*"):
            try:
                os.kill(int(marker.read_text()), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass


class RunningJob(Protocol):
    #: True when the job restarts a killed container by itself (Spark's stage retry)
    restarts_after_a_kill: bool

    def running(self) -> bool: ...

    def wait(self, timeout_s: float) -> None: ...

    def abandon(self) -> None:
        """The test failed: end what can be ended."""
        ...


class ThreadedRun:
    """A job run by ``run`` (a runner's ``run``) on a thread of the test; what it returned or
    raised in ``result`` / ``error``; ``stop`` (a runner's ``stop``) ends it if the test fails."""

    def __init__(
        self, run: Callable[[], Any], *, stop: Callable[[], None] | None = None, restarts_after_a_kill: bool = False
    ) -> None:
        self.restarts_after_a_kill = restarts_after_a_kill
        self._stop = stop
        self.result: Any = None
        self.error: BaseException | None = None

        def target() -> None:
            try:
                self.result = run()
            except BaseException as exc:  # noqa: BLE001 - the test reads it
                self.error = exc

        self._thread = threading.Thread(target=target, name="killed-job", daemon=True)
        self._thread.start()

    def running(self) -> bool:
        return self._thread.is_alive()

    def wait(self, timeout_s: float) -> None:
        self._thread.join(timeout_s)
        assert not self._thread.is_alive(), f"the job did not end within {timeout_s:.0f}s"

    def abandon(self) -> None:
        """Stopped gracefully where it can be; a container paused at a point is killed
        (:meth:`Kills.kill_paused`)."""
        if self._stop is not None:
            self._stop()


class SubprocessRun:
    """A job run by a process of its own (``samza-dagster run``), killed whole."""

    restarts_after_a_kill = False

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def running(self) -> bool:
        return self.proc.poll() is None

    def wait(self, timeout_s: float) -> None:
        self.proc.wait(timeout_s)

    def abandon(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)


def kill_at_each_point(
    kills: Kills, start: Callable[[], RunningJob], after_each: Callable[[KillPoint], None] | None = None
) -> RunningJob | None:
    """Start the job and kill it at each planned point in turn — starting it again after each
    kill unless it restarts by itself, ``after_each`` (the point) called once the killed job is
    gone — until every point landed or the job ended first (then :attr:`Kills.landed` falls
    short of the plan). Returns the job still running (one that restarts by itself, after its
    last kill), else None."""
    job: RunningJob | None = None
    try:
        while kills.pending:
            if job is None:
                job = start()
            if not kills.await_next(job.running):
                break
            if not job.restarts_after_a_kill:
                job.wait(60)
                job = None
                if after_each is not None:
                    after_each(kills.landed[-1])
    except BaseException:
        kills.kill_paused()
        if job is not None:
            job.abandon()
        raise
    return job


def with_kill_points(config: Config, system: str, kills: Kills) -> Config:
    """``config`` with ``system``'s factory wrapped in :class:`FaultySystemFactory` and ``kills``'
    schedule."""
    factory_key = f"systems.{system}.samza.factory"
    inner = config.get_str(factory_key) or "log"
    return config.with_overrides(
        {factory_key: f"{__name__}:FaultySystemFactory", INNER_FACTORY_KEY: inner, **kills.config}
    )
