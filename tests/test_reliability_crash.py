"""Issue 12.1 — crash recovery with exact state (transactional state, Samza 1.5+).

A stateful job on the **process runner** is killed with SIGKILL (from the test, i.e. from
outside the container process) ten times at seeded-random moments, restarted each time, then
run to the end. The kill moments are chosen by phase: mid-process (inside ``process``),
mid-flush (before the producers' flush, and after it but before the checkpoint — the case that
double-counted when restore replayed the whole changelog), mid-commit (right after the
checkpoint is durable), mid-restore (while the changelog is being read back) and at a random
time after start. To land *inside* a phase, the phase pauses once it is reached (the
fault-injecting system factory and task below write a marker file, then sleep); the test sees the
marker and kills the process there.

Checked: the final store contents (every task's RocksDB store, rebuilt from its changelog at
the last start) equal a crash-free run's; every input message is in the output at least once.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections import Counter
from pathlib import Path

from samza_dagster.config import Config
from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.runtime import run_job
from samza_dagster.runtime.process_runner import ProcessJobRunner
from samza_dagster.serde import LongSerde, StringSerde
from samza_dagster.storage import RocksDBRawStore
from samza_dagster.system.log import LogSystemFactory
from samza_dagster.task.api import InitableTask, StreamTask
from tests.apps.harness import create_stream, produce
from tests.forwarding import ForwardingConsumer, ForwardingProducer

PARTITIONS = 2
MESSAGES = 2400
WORDS = [f"w{i:02d}" for i in range(23)]
SEED = 12


# -- fault injection (runs inside the container process) -----------------------------------------
class _Pause:
    """Pauses the calling thread at the ``nth`` time ``phase`` is reached, after writing the
    marker file ``<test.fault.dir>/in-<phase>`` so the test can SIGKILL the process there."""

    def __init__(self, config: Config) -> None:
        self.phase = config.get_str("test.fault.phase") or ""
        self.nth = config.get_int("test.fault.nth") or 1
        self.dir = config.get_str("test.fault.dir") or ""
        self.seen: Counter = Counter()
        self.lock = threading.Lock()

    def inside_container(self) -> bool:
        """Only inside a container process, never in the test's own coordinator."""
        return "SAMZA_CONTAINER_ID" in os.environ

    def at(self, phase: str) -> None:
        if phase != self.phase or not self.inside_container():
            return
        with self.lock:
            self.seen[phase] += 1
            hit = self.seen[phase] == self.nth
        if hit:
            Path(self.dir, f"in-{phase}").write_text(str(os.getpid()))
            time.sleep(60)  # the test kills us here


_pauses: dict[tuple[type, int], _Pause] = {}


def _pause_for(config: Config, kind: type[_Pause] = _Pause) -> _Pause:
    """The one pause (of class ``kind``) of a container's config object."""
    p = _pauses.get((kind, id(config)))
    if p is None:
        p = _pauses[(kind, id(config))] = kind(config)
    return p


class _FaultyProducer(ForwardingProducer):
    def __init__(self, inner, pause: _Pause) -> None:
        super().__init__(inner)
        self._pause = pause

    def flush(self, source):
        if source == "__checkpoint":
            self.inner.flush(source)
            self._pause.at("after-checkpoint")
            return
        self._pause.at("before-flush")
        self.inner.flush(source)
        self._pause.at("after-flush")  # output + changelog durable, checkpoint not yet written


class _FaultyConsumer(ForwardingConsumer):
    def __init__(self, inner, pause: _Pause) -> None:
        super().__init__(inner)
        self._pause = pause
        self._changelog = False

    def register(self, ssp, offset):
        self._changelog = self._changelog or ssp.stream.endswith("-changelog")
        self.inner.register(ssp, offset)

    def poll(self, ssps, timeout):
        polled = self.inner.poll(ssps, timeout)
        if self._changelog and polled:
            self._pause.at("restore")
        return polled


class FaultyLogSystemFactory(LogSystemFactory):
    def get_consumer(self, system_name, config):
        return _FaultyConsumer(super().get_consumer(system_name, config), _pause_for(config))

    def get_producer(self, system_name, config):
        return _FaultyProducer(super().get_producer(system_name, config), _pause_for(config))


class CountAndEchoTask(StreamTask, InitableTask):
    """Counts words in the ``counts`` store and sends each input's id to ``out``."""

    OUT = SystemStream("log", "out")

    def init(self, context):
        self.store = context.get_store("counts")
        self.pause = _pause_for(context.config)
        self.delay = (context.config.get_int("test.process.delay.us") or 0) / 1e6

    def process(self, envelope, collector, coordinator):
        self.pause.at("process")
        msg_id, word = envelope.message.split(":")
        self.store.put(word, (self.store.get(word) or 0) + 1)
        collector.send(OutgoingMessageEnvelope(self.OUT, msg_id, key=msg_id))
        if self.delay:
            time.sleep(self.delay)


# -- the test ------------------------------------------------------------------------------------
def _config(tmp_path: Path, **extra: str) -> Config:
    entries = {
        "job.name": "crashcount",
        "job.factory.class": "process",
        "job.container.count": "1",
        "job.default.system": "log",
        "task.inputs": "log.words",
        "task.class": "tests.test_reliability_crash:CountAndEchoTask",
        "task.commit.ms": "40",
        "systems.log.samza.factory": "tests.test_reliability_crash:FaultyLogSystemFactory",
        "systems.log.log.path": str(tmp_path / "log"),
        "systems.log.samza.msg.serde": "string",
        "systems.log.samza.key.serde": "string",
        "systems.log.streams.words.samza.bounded": "true",
        "stores.counts.factory": "rocksdb",
        "stores.counts.key.serde": "string",
        "stores.counts.msg.serde": "long",
        "stores.counts.changelog": "log.crashcount-counts-changelog",
        "job.logged.store.base.dir": str(tmp_path / "state"),
        "test.fault.dir": str(tmp_path),
        "test.process.delay.us": "1500",  # enough work left that the last random kill lands mid-run
    }
    entries.update(extra)
    return Config(entries)


def _fill(config: Config) -> None:
    create_stream(config, "log", "words", PARTITIONS)
    create_stream(config, "log", "out", 1)
    rnd = random.Random(SEED)
    produce(
        config, "log", "words", [(i % PARTITIONS, None, f"m{i}:{rnd.choice(WORDS)}".encode()) for i in range(MESSAGES)]
    )


def _store_contents(tmp_path: Path) -> dict[str, dict[str, int]]:
    result = {}
    kser, vser = StringSerde(), LongSerde()
    for task_dir in sorted((tmp_path / "state" / "crashcount-1" / "counts").iterdir()):
        raw = RocksDBRawStore(str(task_dir))
        result[task_dir.name] = {kser.from_bytes(k): vser.from_bytes(v) for k, v in raw.all()}
        raw.close()
    return result


def read_all(config: Config, stream: str, system: str = "log") -> list:
    """Every envelope of ``stream`` (all partitions) from oldest to the head seen now."""
    from samza_dagster.model import SystemStreamPartition
    from samza_dagster.system.factories import system_factory

    factory = system_factory(config, system)
    md = factory.get_admin(system, config).get_system_stream_metadata([stream])[stream]
    consumer = factory.get_consumer(system, config)
    wanted = {}
    for p, m in md.partitions.items():
        if m.newest_offset is not None:
            ssp = SystemStreamPartition(system, stream, p)
            consumer.register(ssp, m.oldest_offset)
            wanted[ssp] = int(m.newest_offset)
    out: list = []
    if not wanted:
        return out
    consumer.start()
    try:
        deadline = time.monotonic() + 30
        while wanted and time.monotonic() < deadline:
            for ssp, envs in consumer.poll(list(wanted), 0.1).items():
                for env in envs:
                    if env.is_end_of_stream or ssp not in wanted:
                        break
                    out.append(env)
                    if int(env.offset) >= wanted[ssp]:
                        del wanted[ssp]
                        break
    finally:
        consumer.stop()
    assert not wanted, f"could not read {stream} to its head"
    return out


def _output_ids(config: Config) -> Counter:
    return Counter(env.message.decode() for env in read_all(config, "out"))


def _run_and_kill(config: Config, tmp_path: Path, phase: str, delay_s: float) -> str:
    """Start the job; SIGKILL its container when it reaches ``phase`` (or after ``delay_s``
    for phase ``random``). Returns what happened."""
    for marker in tmp_path.glob("in-*"):
        marker.unlink()
    runner = ProcessJobRunner(config)
    box: dict = {}

    def run() -> None:
        try:
            box["result"] = runner.run()
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    proc = None
    while time.monotonic() < deadline and thread.is_alive():
        proc = runner.processes.get("0")
        if proc is not None:
            break
        time.sleep(0.005)
    if proc is None:
        import sys
        import traceback

        stack = "".join(traceback.format_stack(sys._current_frames()[thread.ident]))
        raise AssertionError(f"container process never started: {box}\n{stack}")
    started = time.monotonic()
    outcome = "finished before the fault"
    while time.monotonic() < deadline and proc.poll() is None:
        if phase == "random" and time.monotonic() - started >= delay_s:
            outcome = f"killed at random +{delay_s:.2f}s"
            break
        if (tmp_path / f"in-{phase}").exists():
            outcome = f"killed mid-{phase}"
            break
        time.sleep(0.002)
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    thread.join(30)
    assert not thread.is_alive()
    return outcome


def test_sigkill_at_ten_moments_leaves_exactly_the_crash_free_state(tmp_path):
    # the crash-free reference (plain log system, no faults)
    ref_dir = tmp_path / "ref"
    ref_dir.mkdir()
    ref = _config(ref_dir, **{"systems.log.samza.factory": "log", "test.process.delay.us": "0"})
    _fill(ref)
    result = run_job(ref)
    assert result.succeeded, result.summary_line()
    expected = _store_contents(ref_dir)
    assert sum(sum(c.values()) for c in expected.values()) == MESSAGES

    crash_dir = tmp_path / "crash"
    crash_dir.mkdir()
    _fill(_config(crash_dir))
    rnd = random.Random(SEED)
    phases = [
        "after-flush",
        "process",
        "before-flush",
        "restore",
        "after-checkpoint",
        "after-flush",
        "random",
        "restore",
        "after-flush",
        "random",
    ]
    outcomes = []
    for phase in phases:
        nth = rnd.randint(1, 4) if phase != "restore" else 1
        config = _config(crash_dir, **{"test.fault.phase": phase, "test.fault.nth": str(nth)})
        outcomes.append(_run_and_kill(config, crash_dir, phase, rnd.uniform(0.2, 1.2)))
    killed = [o for o in outcomes if o.startswith("killed")]
    assert len(killed) == 10, outcomes
    # the restores after the first kill had changelog entries to read: every phase was hit
    assert {o.split(" ")[1] for o in killed} >= {
        "mid-after-flush",
        "mid-process",
        "mid-before-flush",
        "mid-restore",
        "mid-after-checkpoint",
    }, outcomes

    final = run_job(_config(crash_dir))
    assert final.succeeded, final.summary_line()
    assert _store_contents(crash_dir) == expected, outcomes
    ids = _output_ids(_config(crash_dir, **{"systems.log.samza.factory": "log"}))
    missing = [f"m{i}" for i in range(MESSAGES) if ids[f"m{i}"] == 0]
    assert not missing, f"{len(missing)} inputs never reached the output, e.g. {missing[:5]}"
    # at-least-once: duplicates are allowed (reprocessed after a crash), but there were crashes
    assert sum(ids.values()) >= MESSAGES
