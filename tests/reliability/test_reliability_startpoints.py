"""A job killed between its first checkpoint after a startpoint and the startpoint's removal.

Samza (and this engine) deletes a task's startpoints only after the task's first checkpoint
covers them. SIGKILL in between leaves the startpoint in place, so the next start rewinds to it
again: the rewound range is processed once more (at-least-once, as in Samza; docs/decisions.md),
and nothing is lost. The kill lands exactly in that window: the coordinator system's producer
pauses on the startpoint's delete (after writing a marker file) and the test kills the job there.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from jobs.stream_helpers import create_streams, produce, read_stream
from samza_dagster.config import Config
from samza_dagster.runtime import run_job
from samza_dagster.runtime.startpoints import list_startpoints, set_startpoints
from samza_dagster.startpoint.startpoint import StartpointSpecific
from samza_dagster.system.log import LogSystemFactory
from support.waiting import wait_until
from tests import REPO
from tests.forwarding import ForwardingProducer

MESSAGES = 100
REWIND_TO = 40
#: set in the environment of the run that is to be killed: where its producer writes the marker
FAULT_DIR_ENV = "SAMZA_TEST_FAULT_DIR"


class _PauseOnStartpointDelete(ForwardingProducer):
    def send(self, source, envelope):
        key = envelope.key or b""
        # a task's fan-out (Samza's ``samza-startpoint-v1-fan-out`` namespace), deleted once its
        # commit covers it: the coordinator's fan-out deletes the written one before any task starts
        task_level = b'"samza-startpoint-v1-fan-out"' in key
        if envelope.message is None and task_level and os.environ.get(FAULT_DIR_ENV):
            Path(os.environ[FAULT_DIR_ENV], "deleting-startpoint").write_text(key.decode())
            time.sleep(600)  # killed here
        self.inner.send(source, envelope)


class PausingCoordinatorSystemFactory(LogSystemFactory):
    """The log, whose producer pauses before deleting a startpoint (only in a process started
    with ``SAMZA_TEST_FAULT_DIR``)."""

    def get_producer(self, system_name, config):
        return _PauseOnStartpointDelete(super().get_producer(system_name, config))


def _job(tmp_path: Path) -> tuple[Path, Config]:
    log = tmp_path / "log"
    properties = tmp_path / "job.properties"
    properties.write_text(
        "\n".join(
            [
                "job.name=rewound",
                "job.factory.class=thread",
                "job.default.system=log",
                "job.coordinator.system=coord",
                "systems.log.samza.factory=log",
                "systems.log.samza.msg.serde=string",
                f"systems.log.log.path={log}",
                "systems.log.streams.words.samza.bounded=true",
                f"systems.coord.samza.factory={__name__}:PausingCoordinatorSystemFactory",
                f"systems.coord.log.path={log}",
                "task.class=tests.apps.tasks:CopyTask",
                "task.inputs=log.words",
                "",
            ]
        )
    )
    config = Config.from_properties(str(properties))
    create_streams(config, {"words": 1, "output": 1})
    produce(config, "words", [(None, f"w{i}".encode(), None) for i in range(MESSAGES)], source="test")
    return properties, config


def test_a_kill_before_the_startpoint_is_removed_rewinds_again_and_loses_nothing(tmp_path):
    properties, config = _job(tmp_path)
    assert run_job(config).messages_processed == MESSAGES
    set_startpoints(config, "words", StartpointSpecific(str(REWIND_TO)))

    fault_dir = tmp_path / "fault"
    fault_dir.mkdir()
    proc = subprocess.Popen(
        [str(Path(sys.executable).with_name("samza-dagster")), "run", "--config-path", str(properties)],
        cwd=REPO,
        env={**os.environ, FAULT_DIR_ENV: str(fault_dir)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        marker = fault_dir / "deleting-startpoint"
        wait_until(lambda: marker.exists() or proc.poll() is not None, 120, "the startpoint's delete")
        assert proc.poll() is None, proc.communicate()
        os.kill(proc.pid, signal.SIGKILL)  # after the checkpoint, before the startpoint is gone
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert [str(key) for key in list_startpoints(config)] == ["log.words partition 0 of task 'Partition 0'"]

    # the next start applies the startpoint again, then removes it; the one after rewinds no more
    assert run_job(config).messages_processed == MESSAGES - REWIND_TO
    assert list_startpoints(config) == {}
    assert run_job(config).messages_processed == 0

    copies = Counter(value for _key, value in ((r.key, r.value) for r in read_stream(config, "output")))
    # nothing lost; the rewound range once per run that applied the startpoint (the killed one too)
    assert {f"w{i}".encode(): (1 if i < REWIND_TO else 3) for i in range(MESSAGES)} == dict(copies)
